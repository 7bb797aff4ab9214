import { expect, test } from "vitest";
import { slug } from "./slug.js";

test("[claim:slug] lowercases and joins words with dashes", () => {
  expect(slug("  Hello, World! ")).toBe("hello-world");
});

test("keeps digits", () => {
  expect(slug("Top 10")).toBe("top-10");
});
