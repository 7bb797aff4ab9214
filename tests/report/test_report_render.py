"""The report renderer on hand-made records: words beside colours, escaping, no fetch, the chart."""

from __future__ import annotations

import re
from html.parser import HTMLParser

from changeloop.report import timeline
from changeloop.report.model import (
    CELL_LABELS,
    Bar,
    Cell,
    ClaimRow,
    Counts,
    FindingItem,
    ProviderRow,
    ReceiptRef,
    RepoIdentity,
    Report,
    Timeline,
)
from changeloop.report.render import render

REF = ReceiptRef(
    id="sha256:" + "ab" * 32,
    provider="unit",
    capability="test",
    status="pass",
    path=".changeloop/receipts/c/unit.test.json",
    issuer="local",
    keyid="k" * 64,
    verified=True,
)
TAMPERED = ReceiptRef(
    id=None,
    provider="unit",
    capability="test",
    status=None,
    path=".changeloop/receipts/c/unit.test.json",
    issuer=None,
    keyid=None,
    verified=False,
    problem="signature check failed",
    code="unverified",
)


def report(**over: object) -> Report:
    cells = {
        status: Cell(
            capability=status,
            status=status,  # type: ignore[arg-type]
            reasons=(f"because {status}",),
            receipts=(REF,),
        )
        for status in CELL_LABELS
    }
    base = dict(
        change="c",
        proven=False,
        reasons=("claim x is failed",),
        repositories=(RepoIdentity("self", "1" * 40, "2" * 40, True),),
        run_id="20260101T000000Z-abcdef",
        run_started="2026-01-01T00:00:00.000Z",
        version="0.1.0",
        capabilities=(*cells, "extra"),
        claims=(
            ClaimRow(
                id="x",
                statement="<script>alert(1)</script> & more",
                ref="specs/x.md",
                status="failed",
                cells={**cells, "extra": None},
            ),
        ),
        requires=(),
        providers=(
            ProviderRow(
                name="unit",
                adapter="command",
                repository="self",
                state="cached",
                status="pass",
                duration_ms=1234,
                tests=Counts(4, 3, 0, 1),
                findings=1,
                log=".changeloop/runs/r/unit/unit.log",
                log_href="../runs/r/unit/unit.log",
                issuer="local",
                verified="verified",
                receipts=(REF,),
            ),
        ),
        timeline=Timeline(
            slots=2,
            total_s=3.0,
            bars=(
                Bar("unit", 0, 0.0, 1.0, "pass", critical=True),
                Bar("lint", 1, 0.0, 0.5, "fail"),
                Bar("review", 0, 1.0, 3.0, "inconclusive", critical=True),
            ),
            not_drawn=(("cache-me", "cached: reused a pass"),),
        ),
        findings={
            "style": (
                FindingItem(
                    "style", "line too long", "warning", "lint", "app.py:2", "../../app.py"
                ),
            )
        },
        set_aside=(TAMPERED,),
    )
    base.update(over)
    return Report(**base)  # type: ignore[arg-type]


class _Collect(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.stack: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def parse(page: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = _Collect()
    parser.feed(page)
    return parser.tags


def test_every_cell_status_has_an_icon_and_words_and_reveals_its_reason() -> None:
    page = render(report())
    tags = parse(page)
    cells = [a for t, a in tags if t == "td" and "cell" in (a.get("class") or "")]
    assert len(cells) == len(CELL_LABELS)
    for status, (icon, word) in CELL_LABELS.items():
        match = re.search(
            rf'<td class="cell st-{status}"[^>]*tabindex="0"[^>]*aria-describedby="(cell-\d+)">'
            rf'<span class="badge"><span aria-hidden="true">{re.escape(icon)}</span> '
            rf"{re.escape(word)}</span>",
            page,
        )
        assert match, status
        detail = re.search(rf'<div class="more" id="{match.group(1)}">(.*?)</div></td>', page)
        assert detail and f"because {status}" in detail.group(1)
        assert "sha256:" not in detail.group(1) or "abab" in detail.group(1)
        assert "issuer <strong>local</strong>" in detail.group(1)
    assert '<td class="na">not required</td>' in page


def test_user_text_is_escaped() -> None:
    page = render(report())
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; more" in page
    assert page.count("<script>") == 1  # the page's own inline script only


def test_the_page_names_nothing_to_fetch() -> None:
    page = render(report())
    tags = parse(page)
    assert not [a for _, a in tags if a.get("src")]
    for tag, attrs in tags:
        href = attrs.get("href") or ""
        assert not re.match(r"^[a-z]+://", href), (tag, href)
    assert "http://" not in page and "https://" not in page
    csp = next(a for t, a in tags if t == "meta" and a.get("http-equiv"))
    assert "default-src 'none'" in (csp.get("content") or "")


def test_header_says_the_verdict_in_words_and_the_content_identity() -> None:
    page = render(report())
    assert 'class="verdict not-proven" id="verdict">Verdict: NOT PROVEN' in page
    assert "tree <code>111111111111</code>" in page and "dirty" in page
    assert "20260101T000000Z-abcdef" in page
    proven = render(report(proven=True, reasons=()))
    assert 'class="verdict proven" id="verdict">Verdict: PROVEN' in proven


def test_timeline_one_focusable_bar_per_provider_with_critical_path_outlined() -> None:
    page = render(report())
    bars = re.findall(
        r'<g class="bar s-(\w+)( critical)?" tabindex="0" role="img" '
        r'aria-label="([^"]+)" data-provider="(\w+)">',
        page,
    )
    assert [(b[3], b[0], bool(b[1])) for b in bars] == [
        ("unit", "pass", True),
        ("lint", "fail", False),
        ("review", "inconclusive", True),
    ]
    assert "review: inconclusive, 2.0 s, on the critical path" in page
    assert "Critical path: unit → review." in page
    assert "cache-me (cached: reused a pass)" in page


def test_findings_grouped_by_kind_with_relative_links_and_set_aside_shown_unverified() -> None:
    page = render(report())
    assert "<h3>style (1)</h3>" in page
    assert '<a href="../../app.py"><code>app.py:2</code></a>: line too long' in page
    assert "Receipts not counted" in page
    assert "<span class='badge st-nv'>not verified</span>" in page
    assert "3 passed" in page and "cached" in page


def test_tables_have_header_cells_with_scope() -> None:
    tags = parse(render(report()))
    headers = [a for t, a in tags if t == "th"]
    assert headers and all(a.get("scope") in ("col", "row") for a in headers)


def test_critical_path_is_the_heaviest_dependency_chain() -> None:
    durations = {"a": 1.0, "b": 5.0, "c": 1.0, "d": 1.0}
    deps = {"c": ["a", "b"], "d": ["c"]}
    assert timeline.critical_path(durations, deps) == ["b", "c", "d"]
    assert timeline.critical_path({"x": 2.0, "y": 1.0}, {}) == ["x"]
    assert timeline.critical_path({}, {}) == []
