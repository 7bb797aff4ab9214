"use strict";
const test = require("node:test");
const assert = require("node:assert");
const { slug } = require("./slug.js");

test("[claim:slug] lowercases and joins words with dashes", () => {
  assert.strictEqual(slug("  Hello, World! "), "hello-world");
});

test("keeps digits", () => {
  assert.strictEqual(slug("Top 10"), "top-10");
});
