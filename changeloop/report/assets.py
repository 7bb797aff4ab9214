"""The page's inline CSS and JavaScript (no file, font or script is ever fetched).

Colour pairs meet WCAG AA contrast in both schemes; every status also has an
icon and a word, so colour never carries meaning alone. Without JavaScript the
page is complete: hover and keyboard focus reveal a cell's details through
CSS; the script only pins a cell open on click and echoes a timeline bar.
"""

from __future__ import annotations

CSS = """
:root { color-scheme: light dark;
  --bg: #ffffff; --fg: #1b1f24; --muted: #4a5260; --line: #c9ced6; --panel: #f5f7fa;
  --ok-bg: #e3f4e8; --ok-fg: #0d4d21; --bad-bg: #fde4e6; --bad-fg: #7d0f1d;
  --warn-bg: #fff1cc; --warn-fg: #5c3b00; --none-bg: #eceef2; --none-fg: #333942;
  --nv-bg: #f1e6fc; --nv-fg: #4f1780; --stale-bg: #e4edfd; --stale-fg: #143872;
  --bar-pass: #1f6b2a; --bar-fail: #b3261e; --bar-inconclusive: #7a4a00; --bar-unknown: #555d6b;
  --crit: #000000; --link: #0b4fb3; --focus: #0b4fb3; }
@media (prefers-color-scheme: dark) {
  :root { --bg: #15181d; --fg: #e8eaee; --muted: #b3bac5; --line: #3b424d; --panel: #1e2228;
    --ok-bg: #12361d; --ok-fg: #b8f0c7; --bad-bg: #45141a; --bad-fg: #ffc9cf;
    --warn-bg: #3d2e08; --warn-fg: #ffe29a; --none-bg: #2a2f37; --none-fg: #dde1e7;
    --nv-bg: #33204a; --nv-fg: #e6cfff; --stale-bg: #1b2c4a; --stale-fg: #cfe0ff;
    --bar-pass: #2f8f3d; --bar-fail: #c93a31; --bar-inconclusive: #9a6200; --bar-unknown: #6b7380;
    --crit: #ffffff; --link: #8ab8ff; --focus: #8ab8ff; } }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg);
  font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
main { max-width: 1200px; margin: 0 auto; padding: 16px 20px 48px; }
a { color: var(--link); }
h1 { font-size: 1.5rem; margin: 0 0 8px; }
h2 { font-size: 1.2rem; margin: 28px 0 8px; border-bottom: 1px solid var(--line); }
h3 { font-size: 1rem; margin: 16px 0 6px; }
td.mono { overflow-wrap: anywhere; min-width: 12em; }
code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
  font-size: 0.9em; }
.verdict { display: inline-block; font-weight: 700; font-size: 1.25rem; padding: 4px 14px;
  border-radius: 6px; margin: 4px 0 8px; }
.verdict.proven { background: #0f6b2f; color: #ffffff; }
.verdict.not-proven { background: #a4161a; color: #ffffff; }
.facts { display: grid; grid-template-columns: max-content 1fr; gap: 2px 14px; margin: 8px 0; }
.facts dt { color: var(--muted); }
.facts dd { margin: 0; }
.why { margin: 4px 0 0 1.2em; padding: 0; }
table { border-collapse: collapse; width: 100%; margin: 6px 0; }
th, td { border: 1px solid var(--line); padding: 6px 8px; text-align: left; vertical-align: top; }
thead th { background: var(--panel); }
tbody th { font-weight: 600; }
.statement { display: block; font-weight: 400; color: var(--muted); }
.ref { display: block; font-weight: 400; font-size: 0.85em; color: var(--muted); }
.cell { position: relative; min-width: 150px; }
.cell:focus { outline: 3px solid var(--focus); outline-offset: -3px; }
.badge { display: inline-block; font-weight: 600; padding: 1px 8px; border-radius: 10px;
  white-space: nowrap; }
.st-proven .badge, .st-pass { background: var(--ok-bg); color: var(--ok-fg); }
.st-failed .badge, .st-fail { background: var(--bad-bg); color: var(--bad-fg); }
.st-inconclusive .badge, .st-inconclusive-s { background: var(--warn-bg); color: var(--warn-fg); }
.st-unproven .badge, .st-none { background: var(--none-bg); color: var(--none-fg); }
.st-blocked .badge, .st-nv { background: var(--nv-bg); color: var(--nv-fg); }
.st-stale { background: var(--stale-bg); color: var(--stale-fg); }
.sub { font-size: 0.85em; color: var(--muted); margin-top: 2px; }
.more { display: none; margin-top: 6px; padding: 6px 8px; font-size: 0.85em;
  background: var(--panel); border: 1px solid var(--line); border-radius: 4px; }
.more ul { margin: 2px 0 2px 1.1em; padding: 0; }
.cell:hover .more, .cell:focus .more, .cell:focus-within .more, .cell.open .more {
  display: block; }
.na { color: var(--muted); }
.hint { color: var(--muted); font-size: 0.9em; }
.gantt { max-width: 100%; height: auto; background: var(--panel); border: 1px solid var(--line);
  border-radius: 4px; }
.gantt .tick { stroke: var(--line); stroke-width: 1; }
.gantt .axis, .gantt .lane { fill: var(--muted); font-size: 11px; }
.gantt .bar rect { stroke: none; }
.gantt .bar.s-pass rect { fill: var(--bar-pass); }
.gantt .bar.s-fail rect { fill: var(--bar-fail); }
.gantt .bar.s-inconclusive rect { fill: var(--bar-inconclusive); }
.gantt .bar.s-unknown rect { fill: var(--bar-unknown); }
.gantt .bar.critical rect { stroke: var(--crit); stroke-width: 3; }
.gantt .bar:focus { outline: none; }
.gantt .bar:focus rect, .gantt .bar:hover rect { stroke: var(--focus); stroke-width: 4; }
.gantt .barlabel { fill: #ffffff; font-size: 11px; pointer-events: none; }
.legend { display: flex; flex-wrap: wrap; gap: 14px; font-size: 0.9em; margin: 6px 0; padding: 0;
  list-style: none; }
.swatch { display: inline-block; width: 14px; height: 10px; border-radius: 2px;
  vertical-align: middle; margin-right: 4px; }
.sw-pass { background: var(--bar-pass); } .sw-fail { background: var(--bar-fail); }
.sw-inconclusive { background: var(--bar-inconclusive); }
.sw-unknown { background: var(--bar-unknown); }
.sw-crit { background: transparent; border: 3px solid var(--crit); }
#bar-info { min-height: 1.4em; font-size: 0.9em; }
.findings li { margin: 2px 0; overflow-wrap: anywhere; }
footer { margin-top: 32px; color: var(--muted); font-size: 0.85em; }
.cause { font-size: 0.85em; margin-top: 4px; overflow-wrap: anywhere; }
.next ol { margin: 4px 0 0 1.4em; padding: 0; }
.next li { margin: 4px 0; overflow-wrap: anywhere; }
header code, .why li, .facts dd { overflow-wrap: anywhere; }
/* A wide table or the timeline scrolls inside its own box; the page never scrolls sideways. */
.scroll { overflow-x: auto; max-width: 100%; }
.scroll:focus { outline: 3px solid var(--focus); outline-offset: 2px; }
.scroll .gantt { max-width: none; min-width: 560px; }
@media (max-width: 640px) {
  main { padding: 10px 10px 32px; }
  h1 { font-size: 1.25rem; }
  .facts { grid-template-columns: 1fr; }
  .facts dt { margin-top: 6px; }
  th, td { padding: 4px 6px; }
  .cell { min-width: 130px; }
  td.mono { min-width: 8em; }
}
/* Print: the verdict keeps its colours, every cell's details are open, nothing to click. */
@media print {
  :root { color-scheme: light;
    --bg: #ffffff; --fg: #000000; --muted: #333333; --line: #888888; --panel: #f2f2f2;
    --ok-bg: #e3f4e8; --ok-fg: #0d4d21; --bad-bg: #fde4e6; --bad-fg: #7d0f1d;
    --warn-bg: #fff1cc; --warn-fg: #5c3b00; --none-bg: #eceef2; --none-fg: #333942;
    --nv-bg: #f1e6fc; --nv-fg: #4f1780; --stale-bg: #e4edfd; --stale-fg: #143872;
    --link: #000000; }
  * { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
  body { font-size: 10.5pt; }
  main { max-width: none; padding: 0; }
  .verdict { border: 2px solid #000000; }
  .more { display: block !important; }
  .hint, #bar-info { display: none; }
  .scroll { overflow: visible; }
  .scroll .gantt { min-width: 0; max-width: 100%; }
  a { color: inherit; text-decoration: underline; }
  section, tr, .cell { break-inside: avoid; }
  .cell:focus, .scroll:focus { outline: none; }
}
"""

JS = """
(function () {
  "use strict";
  var cells = document.querySelectorAll(".cell");
  for (var i = 0; i < cells.length; i++) {
    cells[i].addEventListener("click", function (event) {
      if (event.target.closest && event.target.closest("a")) { return; }
      this.classList.toggle("open");
    });
    cells[i].addEventListener("keydown", function (event) {
      if (event.key === "Enter" || event.key === " ") {
        event.preventDefault();
        this.classList.toggle("open");
      } else if (event.key === "Escape") {
        this.classList.remove("open");
        this.blur();
      }
    });
  }
  var info = document.getElementById("bar-info");
  var bars = document.querySelectorAll(".gantt .bar");
  function show() { if (info) { info.textContent = this.getAttribute("aria-label"); } }
  for (var j = 0; j < bars.length; j++) {
    bars[j].addEventListener("mouseenter", show);
    bars[j].addEventListener("focus", show);
  }
})();
"""
