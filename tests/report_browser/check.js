// Drives the report page in Debian's Chromium for tests/report/test_report_browser.py.
// argv: <page.html> <out.json> [desktop.png] [phone.png]. Playwright comes from
// examples/web's node_modules (PLAYWRIGHT_DIR), axe-core from this directory's.
// Visits: light and dark at desktop width, without JavaScript, a phone (390 px wide),
// and the print stylesheet.
"use strict";
const fs = require("fs");
const path = require("path");
const { chromium } = require(path.join(process.env.PLAYWRIGHT_DIR, "@playwright", "test"));
const AXE = fs.readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");

async function visit(browser, url, scheme, screenshot, javaScriptEnabled = true, options = {}) {
  const width = options.width || 1280;
  const context = await browser.newContext({
    colorScheme: scheme, viewport: { width, height: options.height || 900 }, javaScriptEnabled,
  });
  const page = await context.newPage();
  const consoleErrors = [];
  const requests = [];
  page.on("console", (msg) => { if (msg.type() === "error" || msg.type() === "warning") consoleErrors.push(msg.text()); });
  page.on("pageerror", (err) => consoleErrors.push(String(err)));
  page.on("request", (req) => { if (req.url() !== url) requests.push(req.url()); });
  await page.goto(url, { waitUntil: "load" });
  if (options.print) await page.emulateMedia({ media: "print" });
  await page.waitForTimeout(200);
  const cells = await page.$$eval("td.cell", (tds) => tds.map((td) => ({
    claim: td.closest("tr").dataset.claim,
    capability: td.dataset.capability,
    text: td.querySelector(".badge").innerText.trim(),
    cause: td.querySelector(".cause") ? td.querySelector(".cause").innerText.trim() : null,
    causeVisible: !!td.querySelector(".cause") && getComputedStyle(td.querySelector(".cause")).display !== "none",
    subs: Array.from(td.querySelectorAll(".sub")).map((s) => s.innerText.trim()),
    hiddenDetail: getComputedStyle(td.querySelector(".more")).display === "none",
  })));
  // The page never scrolls sideways; a wide table scrolls inside its own box.
  const layout = await page.evaluate(() => ({
    pageWidth: document.documentElement.scrollWidth,
    viewport: document.documentElement.clientWidth,
    boxes: Array.from(document.querySelectorAll(".scroll")).map((b) => ({
      label: b.getAttribute("aria-label"), scrolls: b.scrollWidth > b.clientWidth,
      overflow: getComputedStyle(b).overflowX,
    })),
    verdict: (() => {
      const v = document.getElementById("verdict");
      const s = getComputedStyle(v);
      return { text: v.innerText, color: s.color, background: s.backgroundColor, display: s.display };
    })(),
    next: Array.from(document.querySelectorAll(".next li")).map((li) => li.innerText.trim()),
    services: Array.from(document.querySelectorAll(".svc")).map((s) => s.innerText.trim()),
  }));
  const bars = await page.$$eval(".gantt .bar", (gs) => gs.map((g) => ({
    provider: g.dataset.provider, critical: g.classList.contains("critical"),
    title: g.querySelector("title").textContent,
  })));
  // Keyboard only: Tab until the failed cell has focus, then read what became visible.
  let focused = null;
  for (let i = 0; i < 60 && !focused; i++) {
    await page.keyboard.press("Tab");
    focused = await page.evaluate(() => {
      const el = document.activeElement;
      if (!el || !el.classList.contains("cell") || el.dataset.status !== "failed") return null;
      const more = el.querySelector(".more");
      return { status: el.dataset.status, visible: getComputedStyle(more).display !== "none", text: more.innerText };
    });
  }
  await page.mouse.move(0, 0);
  await page.evaluate(() => document.activeElement && document.activeElement.blur());
  if (screenshot) await page.screenshot({ path: screenshot, fullPage: true });
  // axe-core is a script: it runs only where the page allows scripts.
  const axe = !javaScriptEnabled ? null : await page.addScriptTag({ content: AXE }).then(() => page.evaluate(async () => {
    // every impact counts: the page stays at 0 violations
    const result = await window.axe.run(document, { resultTypes: ["violations"] });
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => n.html).slice(0, 3) }));
  }));
  await context.close();
  return { scheme, consoleErrors, requests, cells, bars, focused, axe, layout };
}

(async () => {
  const [pagePath, outPath, screenshot, phoneShot] = process.argv.slice(2);
  const url = "file://" + path.resolve(pagePath);
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  try {
    const light = await visit(browser, url, "light", screenshot);
    const dark = await visit(browser, url, "dark", null);
    const noScript = await visit(browser, url, "light", null, false);
    const phone = await visit(browser, url, "light", phoneShot || null, true, { width: 390, height: 844 });
    const print = await visit(browser, url, "light", null, true, { print: true });
    fs.writeFileSync(outPath, JSON.stringify({ light, dark, noScript, phone, print }, null, 2));
  } finally {
    await browser.close();
  }
})().catch((err) => { console.error(err); process.exit(1); });
