"""Preflight of the services: a readiness probe only our server passes, one port each."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable

from changeloop.errors import Problem
from changeloop.model import Plan, Service
from changeloop.preflight.env import c_strings, secrets
from changeloop.preflight.locate import Locator


def services(plan: Plan, at: Locator) -> Iterable[Problem]:
    """Missing, status-only or port-less probes, bad regexes, two services on one port."""
    ports: dict[int, list[Service]] = defaultdict(list)
    for s in plan.services.values():
        label = f"service {s.name!r}"
        users = tuple(p.name for p in plan.providers.values() if s.name in p.services)
        yield from secrets(dict(s.env), label, lambda *k, s=s: at.service(s, *k), users)
        yield from c_strings(
            s.command, dict(s.env), label, lambda *k, s=s: at.service(s, *k), users
        )
        probe = s.readiness
        if probe is None:
            yield Problem(
                "missing_readiness",
                f"{label} has no readiness probe; providers would race its start-up",
                at.service(s),
                providers=users,
                fix="add readiness: {url: http://127.0.0.1:<port>/, expect: "
                "{body: <text only your app serves>}}",
            )
            continue
        if probe.body is None and probe.body_regex is None and probe.header is None:
            yield Problem(
                "status_only_probe",
                f"{label}: readiness probe expects no body or "
                "header, so any server on that port (a leftover one) would pass it",
                at.service(s, "readiness", key=True),
                providers=users,
                fix="add expect: {body: <text only your app serves>} or "
                "expect: {header: {name: ..., value: ...}}",
            )
        if probe.body_regex is not None:
            try:
                re.compile(probe.body_regex)
            except re.error as exc:
                yield Problem(
                    "invalid_regex",
                    f"{label}: readiness bodyRegex does not compile: {exc}",
                    at.service(s, "readiness", "expect", "bodyRegex"),
                    providers=users,
                    fix="fix the regular expression",
                )
        if probe.port is None:
            yield Problem(
                "probe_without_port",
                f"{label}: readiness URL {probe.url!r} has no "
                "literal port, so changeloop cannot check the port is free first",
                at.service(s, "readiness", "url"),
                providers=users,
                fix="write the port in the URL, e.g. http://127.0.0.1:4173/",
            )
        else:
            ports[probe.port].append(s)
    for port, sharing in ports.items():
        if len(sharing) > 1:
            names = ", ".join(repr(s.name) for s in sharing)
            users = tuple(
                p.name
                for p in plan.providers.values()
                if any(s.name in p.services for s in sharing)
            )
            yield Problem(
                "port_collision",
                f"services {names} both probe port {port}",
                at.service(sharing[1], "readiness", "url"),
                providers=users,
                fix="give each service its own port",
            )
