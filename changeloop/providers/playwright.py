"""PLACEHOLDER for the `playwright` adapter — replaced by its owner (see docs/ARCHITECTURE.md)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from changeloop.errors import Problem
from changeloop.model import Plan, Provider
from changeloop.providers.base import Outcome, RunContext

NAME = "playwright"
DEFAULT_CAPABILITY = "browser"
RUNS_COMMAND = True


def default_resources(provider: Provider, plan: Plan) -> tuple[str, ...]:
    return (f"workspace-read:{provider.repository}",)


def repositories(provider: Provider, plan: Plan) -> tuple[str, ...]:
    return (provider.repository,) if provider.repository else ()


def capabilities(provider: Provider) -> tuple[str, ...]:
    return (provider.capability,)


def effective_command(provider: Provider) -> tuple[str, ...] | None:
    return provider.command


def fingerprint_inputs(provider: Provider) -> Mapping[str, Any]:
    return {}


def preflight(provider: Provider, plan: Plan) -> Sequence[Problem]:
    return ()


async def run(ctx: RunContext) -> list[Outcome]:
    raise NotImplementedError
