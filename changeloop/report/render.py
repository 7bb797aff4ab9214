"""One self-contained HTML page from a :class:`~changeloop.report.model.Report`.

Everything user-supplied is escaped; the page carries its CSS and script
inline and a Content-Security-Policy that forbids every fetch, so opening it
from a CI artifact or an air-gapped review touches no network.
"""

from __future__ import annotations

from collections.abc import Iterable
from html import escape

from changeloop.report import timeline as gantt
from changeloop.report.assets import CSS, JS
from changeloop.report.model import (
    ASIDE_WORDS,
    CELL_LABELS,
    Cell,
    ClaimRow,
    FindingItem,
    ProviderRow,
    ReceiptRef,
    Report,
)

CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
    "img-src data:; form-action 'none'; base-uri 'none'"
)
PROVIDER_STATUS = {
    "pass": ("st-pass", "✓ pass"),
    "fail": ("st-fail", "✗ fail"),
    "inconclusive": ("st-inconclusive-s", "? inconclusive"),
}
REQUIRE_WORDS = {
    "pass": "✓ pass",
    "fail": "✗ fail",
    "inconclusive": "? inconclusive",
    "missing": "∅ missing",
}
VERIFIED_CLASS = {
    "verified": "st-pass",
    "not verified": "st-nv",
    "stale": "st-stale",
    "no receipt": "st-none",
}


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def short(value: str | None, n: int = 12) -> str:
    if not value:
        return "—"
    head = value.removeprefix("sha256:")
    return head[:n]


def _ms(value: int | None) -> str:
    if value is None:
        return "—"
    if value < 1000:
        return f"{value} ms"
    return f"{value / 1000:.1f} s"


def render(report: Report) -> str:
    """The whole page."""
    verdict = "PROVEN" if report.proven else "NOT PROVEN"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{_e(CSP)}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta name="color-scheme" content="light dark">',
        '<link rel="icon" href="data:,">',
        f"<title>{_e(report.change)}: {verdict} — changeloop report</title>",
        f"<style>{CSS}</style></head><body><main>",
        _header(report),
        _next(report),
        _matrix(report),
        _requires(report),
        _providers(report),
        _timeline(report),
        _findings(report),
        _set_aside(report),
        f"<footer>Written by changeloop {_e(report.version)}. This page runs nothing and fetches "
        "nothing; every receipt above was re-verified (signature, content, wiring) when it was "
        "written.</footer>",
        f"</main><script>{JS}</script></body></html>",
    ]
    return "\n".join(parts)


def _header(report: Report) -> str:
    klass = "proven" if report.proven else "not-proven"
    word = "PROVEN" if report.proven else "NOT PROVEN"
    repos = "".join(
        f"<li><strong>{_e(r.name)}</strong>: tree <code>{_e(short(r.tree))}</code>, "
        f"HEAD <code>{_e(short(r.head))}</code>"
        f"{' (dirty: uncommitted changes)' if r.dirty else ' (clean)'}</li>"
        for r in report.repositories
    )
    run = (
        f"<code>{_e(report.run_id)}</code>, started {_e(report.run_started or 'unknown')}"
        if report.run_id
        else "no recorded run (receipts only)"
    )
    changed = ""
    if report.trust_changed:
        changed = (
            '<ul class="why" aria-label="trust-changed">'
            + "".join(f"<li>trust-changed: {_e(m)}</li>" for m in report.trust_changed)
            + "</ul>"
        )
    why = ""
    if report.reasons:
        why = (
            '<ul class="why" aria-label="why the change is not proven">'
            + "".join(f"<li>{_e(r)}</li>" for r in report.reasons)
            + "</ul>"
        )
    return (
        "<header>"
        f"<h1>Change <code>{_e(report.change)}</code></h1>"
        f'<p class="verdict {klass}" id="verdict">Verdict: {word}</p>{why}'
        '<dl class="facts">'
        f'<dt>Content</dt><dd><ul class="why">{repos or "<li>no repository</li>"}</ul></dd>'
        f"<dt>Run</dt><dd>{run}</dd>"
        f'<dt>Trust</dt><dd id="trust">{_e(report.trust)}{changed}</dd>'
        f"<dt>changeloop</dt><dd>{_e(report.version)}</dd>"
        "</dl></header>"
    )


def _next(report: Report) -> str:
    """A short "What to do next": each step in words, then the command to paste."""
    if not report.next_steps:
        return ""
    items = "".join(
        f"<li>{_e(what)}{f' <code>{_e(command)}</code>' if command else ''}</li>"
        for what, command in report.next_steps
    )
    return (
        '<section aria-labelledby="next-title" class="next"><h2 id="next-title">What to do next'
        f"</h2><ol>{items}</ol></section>"
    )


def _scroll(table: str, label: str) -> str:
    """A wide table scrolls in its own box, never the page (a phone is 390 px wide)."""
    name = f"{label}, scrolls sideways"  # its own name: the section around it has one too
    return f'<div class="scroll" role="region" aria-label="{_e(name)}" tabindex="0">{table}</div>'


def _receipt_line(r: ReceiptRef) -> str:
    if r.verified:
        return (
            f"receipt <code>{_e(short(r.id, 16))}</code> from {_e(r.provider)}, "
            f"signed by issuer <strong>{_e(r.issuer or '?')}</strong> "
            f"(key <code>{_e(short(r.keyid, 12))}</code>), <code>{_e(r.path)}</code>"
        )
    word = ASIDE_WORDS.get(r.code or "unverified", "not verified")
    return (
        f"<strong>{_e(word)}</strong>: <code>{_e(r.path)}</code>"
        f"{' — ' + _e(r.problem) if r.problem else ''}"
    )


def _cell(cell: Cell | None, cid: str, index: int) -> str:
    if cell is None:
        return '<td class="na">not required</td>'
    icon, word = CELL_LABELS[cell.status]
    detail_id = f"cell-{index}"
    sub = []
    if cell.tests:
        shown = ", ".join(cell.tests[:3]) + (
            f" +{len(cell.tests) - 3}" if len(cell.tests) > 3 else ""
        )
        sub.append(f"credited: {_e(shown)}")
    if cell.grounding:
        sub.append(f"grounding: {_e(cell.grounding)}")
    if cell.mutation:
        sub.append(f"mutation: {_e(cell.mutation)}")
    more = []
    if cell.reasons:
        more.append(
            "<strong>Why:</strong><ul>"
            + "".join(f"<li>{_e(r)}</li>" for r in cell.reasons)
            + "</ul>"
        )
    elif cell.status == "proven":
        more.append("<strong>Why:</strong> a verified pass receipt credits this claim.")
    if cell.receipts:
        more.append(
            "<strong>Receipts:</strong><ul>"
            + "".join(f"<li>{_receipt_line(r)}</li>" for r in cell.receipts)
            + "</ul>"
        )
    else:
        more.append("<strong>Receipts:</strong> none")
    label = f"{cid}, {cell.capability}: {word}"
    cause = (
        f'<div class="cause">{_e(cell.cause)}</div>'
        if cell.cause and cell.status != "proven"
        else ""
    )
    return (
        f'<td class="cell st-{cell.status}" tabindex="0" data-status="{_e(cell.status)}" '
        f'data-capability="{_e(cell.capability)}" aria-label="{_e(label)}" '
        f'aria-describedby="{detail_id}">'
        f'<span class="badge"><span aria-hidden="true">{icon}</span> {_e(word)}</span>'
        + cause
        + "".join(f'<div class="sub">{s}</div>' for s in sub)
        + f'<div class="more" id="{detail_id}">{"".join(more)}</div></td>'
    )


def _matrix(report: Report) -> str:
    if not report.claims:
        return (
            '<section aria-labelledby="claims-title"><h2 id="claims-title">Claims</h2>'
            "<p>The change declares no claims.</p></section>"
        )
    head = "".join(f'<th scope="col">{_e(c)}</th>' for c in report.capabilities)
    rows = []
    index = 0
    for claim in report.claims:
        cells = []
        for capability in report.capabilities:
            index += 1
            cells.append(_cell(claim.cells.get(capability), claim.id, index))
        rows.append(f'<tr data-claim="{_e(claim.id)}">{_claim_header(claim)}{"".join(cells)}</tr>')
    return (
        '<section aria-labelledby="claims-title"><h2 id="claims-title">Claims × capabilities</h2>'
        '<p class="hint">Each cell says why when it is not proven. Focus a cell (Tab) or hover '
        "it for every reason, the receipt and its signer; click or press Enter to keep it "
        "open.</p>"
        + _scroll(
            '<table class="matrix"><caption class="hint">One row per claim, one column per '
            f'required capability</caption><thead><tr><th scope="col">Claim</th>{head}</tr>'
            f"</thead><tbody>{''.join(rows)}</tbody></table>",
            "claims by capability",
        )
        + "</section>"
    )


def _claim_header(claim: ClaimRow) -> str:
    icon, word = CELL_LABELS.get(claim.status, ("", claim.status))
    statement = f'<span class="statement">{_e(claim.statement)}</span>' if claim.statement else ""
    ref = f'<span class="ref">ref: {_e(claim.ref)}</span>' if claim.ref else ""
    return (
        f'<th scope="row"><code>{_e(claim.id)}</code> '
        f'<span class="sub">(<span aria-hidden="true">{icon}</span> {_e(word)})</span>'
        f"{statement}{ref}</th>"
    )


def _requires(report: Report) -> str:
    if not report.requires:
        return ""
    rows = "".join(
        f"<tr><th scope='row'>{_e(r.capability)}</th><td>{_e(r.repository)}</td>"
        f"<td>{_e(REQUIRE_WORDS.get(r.status, r.status))}</td></tr>"
        for r in report.requires
    )
    return (
        '<section aria-labelledby="requires-title"><h2 id="requires-title">Change-level '
        'requirements</h2><table><thead><tr><th scope="col">Capability</th>'
        '<th scope="col">Repository</th><th scope="col">Status</th></tr></thead>'
        f"<tbody>{rows}</tbody></table></section>"
    )


def _tests(row: ProviderRow) -> str:
    t = row.tests
    if t is None:
        return '<span class="na">not reported</span>'
    return f"{t.discovered} discovered, {t.passed} passed, {t.failed} failed, {t.skipped} skipped"


def _duration(row: ProviderRow) -> str:
    if row.state in ("cached", "shared", "committed") and row.duration_ms is not None:
        return f"{_ms(row.duration_ms)} <span class='sub'>(when it was made)</span>"
    return _ms(row.duration_ms)


def _providers(report: Report) -> str:
    if not report.providers:
        return (
            '<section aria-labelledby="providers-title"><h2 id="providers-title">Providers</h2>'
            "<p>No provider ran and no receipt was found: run <code>changeloop prove "
            f"{_e(report.change)}</code>.</p></section>"
        )
    rows = []
    for p in report.providers:
        klass, word = PROVIDER_STATUS.get(p.status or "", ("st-none", "∅ no receipt"))
        services = "".join(f'<div class="sub svc">service {_e(s)}</div>' for s in p.services)
        log = (
            f'<a href="{_e(p.log_href or p.log)}">{_e(p.log)}</a>'
            if p.log
            else '<span class="na">—</span>'
        )
        rows.append(
            f'<tr data-provider="{_e(p.name)}"><th scope="row">{_e(p.name)}{services}</th>'
            f"<td>{_e(p.adapter or '?')}</td><td>{_e(p.repository or '—')}</td>"
            f"<td>{_e(p.state)}</td>"
            f'<td><span class="badge {klass}">{_e(word)}</span></td>'
            f"<td>{_duration(p)}</td><td>{_tests(p)}</td><td>{p.findings}</td>"
            f"<td class='mono'>{log}</td><td>{_e(p.issuer or '—')}</td>"
            f'<td><span class="badge {VERIFIED_CLASS[p.verified]}">{_e(p.verified)}</span></td>'
            "</tr>"
        )
    head = "".join(
        f'<th scope="col">{h}</th>'
        for h in (
            "Provider",
            "Adapter",
            "Repository",
            "State",
            "Status",
            "Duration",
            "Tests",
            "Findings",
            "Log",
            "Issuer",
            "Receipt",
        )
    )
    return (
        '<section aria-labelledby="providers-title"><h2 id="providers-title">Providers</h2>'
        + _scroll(
            f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>",
            "providers",
        )
        + "</section>"
    )


def _timeline(report: Report) -> str:
    t = report.timeline
    title = '<h2 id="timeline-title">Timeline</h2>'
    if t is None:
        return (
            f'<section aria-labelledby="timeline-title">{title}<p>No run was recorded for this '
            "change: nothing to draw.</p></section>"
        )
    legend = (
        '<ul class="legend" aria-label="legend">'
        '<li><span class="swatch sw-pass"></span>pass</li>'
        '<li><span class="swatch sw-fail"></span>fail</li>'
        '<li><span class="swatch sw-inconclusive"></span>inconclusive</li>'
        '<li><span class="swatch sw-unknown"></span>no verified receipt</li>'
        '<li><span class="swatch sw-crit"></span>outlined: critical path</li></ul>'
    )
    chart = (
        _scroll(gantt.svg(t), "timeline chart") if t.bars else "<p>No provider ran in this run.</p>"
    )
    crit = [b.provider for b in sorted(t.bars, key=lambda b: b.start_s) if b.critical]
    crit_text = f"<p>Critical path: {' → '.join(_e(c) for c in crit)}.</p>" if crit else ""
    skipped = ""
    if t.not_drawn:
        skipped = (
            "<p>Not drawn (did not run here): "
            + ", ".join(f"{_e(name)} ({_e(why)})" for name, why in t.not_drawn)
            + ".</p>"
        )
    source = (
        ""
        if t.source == "run.json"
        else '<p class="hint">Drawn from receipt times (this run left no run.json).</p>'
    )
    return (
        f'<section aria-labelledby="timeline-title">{title}{legend}{chart}'
        f'<p id="bar-info" aria-live="polite"></p>{crit_text}{skipped}{source}</section>'
    )


def _finding(item: FindingItem) -> str:
    where = ""
    if item.location and item.href:
        where = f'<a href="{_e(item.href)}"><code>{_e(item.location)}</code></a>: '
    elif item.location:
        where = f"<code>{_e(item.location)}</code>: "
    severity = f" [{_e(item.severity)}]" if item.severity else ""
    who = f"<span class='sub'>({_e(item.provider)})</span>"
    return f"<li>{where}{_e(item.message)}{severity} {who}</li>"


def _findings(report: Report) -> str:
    title = '<h2 id="findings-title">Findings</h2>'
    if not report.findings:
        return f'<section aria-labelledby="findings-title">{title}<p>No findings.</p></section>'
    groups: Iterable[str] = (
        f"<h3>{_e(kind)} ({len(items)})</h3><ul class='findings'>"
        + "".join(_finding(i) for i in items)
        + "</ul>"
        for kind, items in sorted(report.findings.items())
    )
    return f'<section aria-labelledby="findings-title">{title}{"".join(groups)}</section>'


def _set_aside(report: Report) -> str:
    if not report.set_aside:
        return ""
    rows = "".join(
        f"<tr><td class='mono'>{_e(r.path)}</td><td>{_e(r.provider)}</td>"
        f"<td><span class='badge {_aside_class(r)}'>{_e(_aside_word(r))}</span>"
        f"</td><td>{_e(r.problem or '')}</td></tr>"
        for r in report.set_aside
    )
    return (
        '<section aria-labelledby="aside-title"><h2 id="aside-title">Receipts not counted</h2>'
        + _scroll(
            '<table><thead><tr><th scope="col">File</th><th scope="col">Provider (as it '
            'claims)</th><th scope="col">Why</th><th scope="col">Detail</th></tr></thead>'
            f"<tbody>{rows}</tbody></table>",
            "receipts not counted",
        )
        + "</section>"
    )


def _aside_word(r: ReceiptRef) -> str:
    return ASIDE_WORDS.get(r.code or "unverified", "not verified")


def _aside_class(r: ReceiptRef) -> str:
    return "st-nv" if r.code in (None, "unverified") else "st-stale"
