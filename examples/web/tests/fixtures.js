// A `page` that fails its test on any unexpected console.error or uncaught page error.
// Tests that expect an error list its text in `allowedConsoleErrors` (test.use).
const base = require("@playwright/test");

const test = base.test.extend({
  allowedConsoleErrors: [[], { option: true }],
  page: async ({ page, allowedConsoleErrors }, use, testInfo) => {
    const problems = [];
    const allowed = (text) => allowedConsoleErrors.some((a) => text.includes(a));
    page.on("console", (msg) => {
      if (msg.type() === "error" && !allowed(msg.text())) {
        problems.push(`console.error: ${msg.text()}`);
      }
    });
    page.on("pageerror", (err) => {
      if (!allowed(String(err.message))) problems.push(`uncaught page error: ${err.message}`);
    });
    await use(page);
    if (problems.length > 0 && testInfo.status === testInfo.expectedStatus) {
      throw new Error(`unexpected browser errors:\n${problems.join("\n")}`);
    }
  },
});

module.exports = { test, expect: base.expect };
