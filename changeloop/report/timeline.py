"""The run as a Gantt chart: bars per slot, the critical path, inline SVG.

The critical path is the chain of dependencies whose durations add up the
most among the providers that ran: shortening anything off it would not have
ended the run sooner.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from html import escape

from changeloop.report.model import Bar, Timeline

LANE_H = 28
BAR_H = 20
LABEL_W = 70
CHART_W = 760
AXIS_H = 24


def critical_path(
    durations: Mapping[str, float], depends_on: Mapping[str, Sequence[str]]
) -> list[str]:
    """The heaviest dependency chain among ``durations``' providers, first to last."""
    best: dict[str, tuple[float, str | None]] = {}

    def weight(name: str, seen: frozenset[str]) -> float:
        if name in best:
            return best[name][0]
        prior: tuple[float, str | None] = (0.0, None)
        for dep in depends_on.get(name, ()):
            if dep in durations and dep not in seen:
                w = weight(dep, seen | {name})
                if w > prior[0]:
                    prior = (w, dep)
        best[name] = (durations[name] + prior[0], prior[1])
        return best[name][0]

    if not durations:
        return []
    for name in durations:
        weight(name, frozenset())
    last = max(durations, key=lambda n: (best[n][0], n))
    chain = [last]
    while (prev := best[chain[-1]][1]) is not None:
        chain.append(prev)
    return list(reversed(chain))


def _seconds(value: float) -> str:
    if value < 1:
        return f"{value * 1000:.0f} ms"
    if value < 120:
        return f"{value:.1f} s"
    return f"{value / 60:.1f} min"


def _ticks(total: float) -> list[float]:
    if total <= 0:
        return [0.0]
    steps: tuple[float, ...] = (0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600)
    step = steps[-1]
    for step in steps:
        if total / step <= 8:
            break
    count = int(total / step) + 1
    return [i * step for i in range(count)]


def svg(timeline: Timeline) -> str:
    """The chart as one inline ``<svg>``; each bar is focusable and carries a ``<title>``."""
    lanes = max(timeline.slots, 1 + max((b.slot for b in timeline.bars), default=0))
    total = max(timeline.total_s, max((b.end_s for b in timeline.bars), default=0.0), 0.001)
    height = AXIS_H + lanes * LANE_H + 4
    width = LABEL_W + CHART_W + 10
    scale = CHART_W / total
    parts = [
        f'<svg class="gantt" role="group" viewBox="0 0 {width} {height}" '
        f'width="100%" aria-labelledby="timeline-title" preserveAspectRatio="xMinYMin meet">'
    ]
    for tick in _ticks(total):
        x = LABEL_W + tick * scale
        parts.append(
            f'<line class="tick" x1="{x:.1f}" y1="{AXIS_H - 4}" x2="{x:.1f}" y2="{height}"/>'
            f'<text class="axis" x="{x:.1f}" y="{AXIS_H - 8}" text-anchor="middle">'
            f"{escape(_seconds(tick))}</text>"
        )
    for lane in range(lanes):
        top = AXIS_H + lane * LANE_H
        parts.append(
            f'<text class="lane" x="4" y="{top + LANE_H / 2 + 4:.1f}">slot {lane + 1}</text>'
        )
    for bar in timeline.bars:
        x = LABEL_W + bar.start_s * scale
        w = max((bar.end_s - bar.start_s) * scale, 2.0)
        y = AXIS_H + bar.slot * LANE_H + (LANE_H - BAR_H) / 2
        duration = _seconds(max(bar.end_s - bar.start_s, 0.0))
        crit = " critical" if bar.critical else ""
        label = (
            f"{bar.provider}: {bar.status}, {duration}"
            f"{', on the critical path' if bar.critical else ''}"
        )
        parts.append(
            f'<g class="bar s-{escape(bar.status)}{crit}" tabindex="0" role="img" '
            f'aria-label="{escape(label)}" data-provider="{escape(bar.provider)}">'
            f"<title>{escape(label)}</title>"
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{BAR_H}" rx="3"/>'
        )
        if w > 60:
            parts.append(
                f'<text class="barlabel" x="{x + 4:.1f}" y="{y + BAR_H / 2 + 4:.1f}">'
                f"{escape(bar.provider)}</text>"
            )
        parts.append("</g>")
    parts.append("</svg>")
    return "".join(parts)


def bars_with_critical(bars: Sequence[Bar], depends_on: Mapping[str, Sequence[str]]) -> list[Bar]:
    """Mark the bars on the critical path."""
    durations = {b.provider: max(b.end_s - b.start_s, 0.0) for b in bars}
    chain = set(critical_path(durations, depends_on))
    return [replace(b, critical=b.provider in chain) for b in bars]
