// Playwright here runs Debian's Chromium: browsers cannot be downloaded in CI.
// The server is NOT started by Playwright: changeloop's `web` service starts it,
// checks its identity, and stops it afterwards (see openspec/changes/add-greeting).
const { defineConfig } = require("@playwright/test");

const chromium = process.env.CHANGELOOP_CHROMIUM || "/usr/bin/chromium";

module.exports = defineConfig({
  testDir: "./tests",
  timeout: 15_000,
  workers: 1,
  use: {
    baseURL: process.env.WEB_URL || "http://127.0.0.1:4173",
  },
  projects: [
    {
      name: "chromium",
      use: {
        browserName: "chromium",
        launchOptions: {
          executablePath: chromium,
          args: [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
          ],
        },
      },
    },
  ],
});
