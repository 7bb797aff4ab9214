// Each test names the claim it proves with a `claim` annotation, and how deep it goes with a
// `claim-depth` (and the team's key with `claim-ref`) right after it; changeloop reads them
// from the JSON report. `outputs` adds an `accessibility` receipt for claims annotated so.
const { test, expect } = require("./fixtures");

const greeting = [
  { type: "claim", description: "greeting" },
  { type: "claim-depth", description: "smoke" },
  { type: "claim-ref", description: "WEB-1" },
];

test.describe("greeting", { annotation: greeting }, () => {
  test("greets the visitor by name", async ({ page }) => {
    await page.goto("/");
    await page.getByLabel("Your name").fill("Ada");
    await page.getByRole("button", { name: "Greet me" }).click();
    await expect(page.getByRole("status")).toHaveText("Hello, Ada!");
  });
});

test(
  "the form is usable by role and label",
  {
    annotation: [
      { type: "claim", description: "greeting-accessible" },
      { type: "claim-depth", description: "component" },
    ],
  },
  async ({ page }) => {
    // An axe-free check: every control is reachable by its accessible name,
    // the page has a language and one level-1 heading, and the result is announced.
    await page.goto("/");
    await expect(page.locator("html")).toHaveAttribute("lang", "en");
    await expect(page.getByRole("heading", { level: 1 })).toHaveCount(1);
    await expect(page.getByRole("textbox", { name: "Your name" })).toBeVisible();
    await expect(page.getByRole("button", { name: "Greet me" })).toBeVisible();
    await expect(page.getByRole("status")).toHaveAttribute("aria-live", "polite");
    const unlabeled = await page.locator("input:not([id]), input[id='']").count();
    expect(unlabeled).toBe(0);
  },
);
