"""Services: started before their first provider, identity-checked, stopped after their last.

    async with ServiceManager(plan, workdirs=workdirs, env=base_env, secrets=secrets,
                              log_dir=run_dir / "services") as services:  # users: from the plan
        async with services.lease(provider.services) as problems:
            if problems:            # list[Finding]: port-in-use / service-not-ready
                ...                 # fail the provider with them
            else:
                ...                 # run it; the services are up and showed their identity
        services.release_unused(other.services)   # a provider that will never run

A service starts (its own process group, in its repository's workdir, ``env``
+ ``envFrom``) on the first lease that names it; concurrent leases share the
one start (``tg.start`` returns once the readiness probe saw the identity, or
with the problems). Its readiness port is held host-wide for its life (the
lock file ``port:<n>``, ``scheduling.hostlocks``): another prove on this host
that wants the port waits for it instead of racing. Before starting, the port
must be free: a leftover server there fails every provider that needs the
service with a ``port-in-use`` finding naming the port and, where /proc
tells, the process. Readiness counts a probe only while every socket
listening on the port belongs to the service's process group (or carries the
run's owner marker) and the service is alive (``ports.ownership``): an
impostor that bound the port after the check is named in a ``port-in-use``
finding, never taken for the service. When its ``users`` count reaches zero
the service gets SIGTERM, a grace period, then SIGKILL — and on cancellation
(Ctrl-C) the same happens before the manager exits. A failed start is
remembered: every later lease gets the same findings instead of a second
wait. A service that exits after it was ready fails the providers using it
(:meth:`ServiceManager.lost`); the next lease once they are done starts it
again.

Entering the manager inside a run directory (``log_dir`` under
``.changeloop/runs/<id>/``) first ends what a run killed with -9 left behind
(``sweep.sweep``): its providers, its servers holding our ports, its
temp files and sandboxes. Leaving a manager made with ``whole_run=True`` (the
one of a ``prove``) ends what the run's own processes left running outside
their groups (``setsid`` daemons carrying the run's marker).
"""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from urllib.parse import urlsplit

import anyio
import anyio.abc

from changeloop.model import Plan, Service
from changeloop.outcome import Finding
from changeloop.passenv import strict_environ
from changeloop.process.groups import OWNER_ENV, claim_run, close_run, owner_marker, run_dir_of
from changeloop.process.run import SpawnError, start_process
from changeloop.process.running import RunningProcess
from changeloop.process.sweep import end_run_leftovers, sweep
from changeloop.scheduling import hostlocks
from changeloop.services.ports import ownership, port_holder
from changeloop.services.probe import ATTEMPT_S, Probe, expectation, probe_once

__all__ = ["ServiceManager"]

_TAIL_LINES = 20


@dataclass
class _State:
    """One service's bookkeeping inside a manager."""

    service: Service
    remaining: int  # providers that have not finished with it yet
    active: int = 0  # leases currently holding it
    lock: anyio.Lock = field(default_factory=anyio.Lock)
    result: list[Finding] | None = None  # None: not started; []: ready; else: why not
    stop: anyio.Event = field(default_factory=anyio.Event)
    done: anyio.Event = field(default_factory=anyio.Event)
    lost: Finding | None = None  # it exited after it was ready: its users fail


def users_of(plan: Plan) -> dict[str, int]:
    """How many providers of ``plan`` need each service (it stops after the last)."""
    users: dict[str, int] = {}
    for provider in plan.providers.values():
        for name in dict.fromkeys(provider.services):
            users[name] = users.get(name, 0) + 1
    return users


class ServiceManager:
    """Runs the plan's services for the duration of one ``prove`` (see the module doc)."""

    def __init__(
        self,
        plan: Plan,
        *,
        workdirs: Mapping[str, Path],
        env: Mapping[str, str],
        log_dir: Path,
        users: Mapping[str, int] | None = None,
        secrets: Sequence[str] = (),
        grace_s: float = 5.0,
        whole_run: bool = False,
    ) -> None:
        self._plan = plan
        # The manager lives as long as its run (a prove): at its end, what the run's processes
        # left outside their groups is ended. Not for one job among others (a Dask worker's).
        self._whole_run = whole_run
        self._workdirs = workdirs  # read at start time: sandboxes may be made lazily
        self._env = dict(env)
        self._log_dir = log_dir
        self._secrets = tuple(s for s in secrets if s)
        self._grace_s = grace_s
        # The one place service users are counted: every provider naming the service.
        users = users if users is not None else users_of(plan)
        self._states = {
            name: _State(service, users.get(name, 0)) for name, service in plan.services.items()
        }
        self._tg: anyio.abc.TaskGroup | None = None
        # ("start" | "ready" | "stop" | "refused", service) in order: for logs and tests.
        self.events: list[tuple[str, str]] = []

    async def __aenter__(self) -> ServiceManager:
        run_dir = run_dir_of(self._log_dir)
        if run_dir is not None:
            # The run starts its processes inside this manager's lifetime: claim the
            # run first, then end what a killed run left (its server may hold our port).
            claim_run(run_dir)
            await anyio.to_thread.run_sync(sweep, run_dir.parent.parent)
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        for state in self._states.values():
            state.stop.set()  # services still up stop now; cancellation stops them too
        assert self._tg is not None
        try:
            return await self._tg.__aexit__(exc_type, exc, tb)
        finally:
            run_dir = run_dir_of(self._log_dir)
            if run_dir is not None:
                if self._whole_run:
                    # Every group of the run has ended by now; a daemon a provider started
                    # with setsid still carries the run's marker, and goes too.
                    end_run_leftovers(run_dir)
                close_run(run_dir)

    @asynccontextmanager
    async def lease(self, names: Sequence[str]) -> AsyncIterator[list[Finding]]:
        """Hold ``names`` up and ready for one provider; yields the problems (empty = ready)."""
        wanted = list(dict.fromkeys(names))
        problems: list[Finding] = []
        states = []
        for name in wanted:
            state = self._states.get(name)
            if state is None:
                problems.append(Finding("service-not-ready", f"unknown service {name!r}"))
            else:
                states.append(state)
                state.active += 1
        try:
            for state in states:
                problems += await self._ensure_started(state)
            yield problems
        finally:
            if states:  # most providers lease no service: no shielded scope to enter
                with anyio.CancelScope(shield=True):
                    for state in states:
                        state.active -= 1
                        state.remaining -= 1
                        await self._maybe_stop(state, wait=True)

    def lost(self, names: Sequence[str]) -> list[Finding]:
        """Findings for the services among ``names`` that exited after they were ready.

        Asked by a provider inside its lease, once its command is done: a service
        that died meanwhile fails it (its tests may have met nothing, or something else).
        """
        found = []
        for name in dict.fromkeys(names):
            state = self._states.get(name)
            if state is not None and state.lost is not None:
                found.append(state.lost)
        return found

    def started(self, name: str) -> bool:
        """True once this manager has started ``name`` (its port is then ours, not a leftover)."""
        state = self._states.get(name)
        return state is not None and state.result is not None

    def release_unused(self, names: Sequence[str]) -> None:
        """A provider needing ``names`` will not run (skipped, cached): count it out."""
        for name in dict.fromkeys(names):
            state = self._states.get(name)
            if state is not None:
                state.remaining -= 1
                if state.remaining <= 0 and state.active == 0 and state.result == []:
                    state.stop.set()  # the manager's task group waits for the stop

    async def _ensure_started(self, state: _State) -> list[Finding]:
        async with state.lock:
            if state.lost is not None and state.active > 1:  # died under users still at work
                return [state.lost]
            if state.result == [] and state.done.is_set():  # stopped early (or died): again
                state.result, state.stop, state.done = None, anyio.Event(), anyio.Event()
                state.lost = None
            if state.result is None:
                if self._tg is None:
                    raise RuntimeError("ServiceManager used outside `async with`")
                state.result = await self._tg.start(self._serve, state)
            return list(state.result)

    async def _maybe_stop(self, state: _State, *, wait: bool) -> None:
        if state.remaining > 0 or state.active > 0 or state.result is None:
            return
        state.stop.set()
        if wait and state.result == []:
            await state.done.wait()

    async def _serve(
        self, state: _State, *, task_status: anyio.abc.TaskStatus[list[Finding]]
    ) -> None:
        """Hold the port, check it, start, probe, report via ``task_status``; run until stopped."""
        try:
            readiness = state.service.readiness
            if readiness is None or readiness.port is None:
                await self._serve_inner(state, task_status)
            else:  # another prove on this host that wants the port waits for this one's end
                async with hostlocks.hold([f"port:{readiness.port}"]):
                    await self._serve_inner(state, task_status)
        finally:
            state.done.set()

    async def _serve_inner(
        self, state: _State, task_status: anyio.abc.TaskStatus[list[Finding]]
    ) -> None:
        svc = state.service
        refused = await self._refusal(svc)
        if refused:
            self.events.append(("refused", svc.name))
            task_status.started(refused)
            return
        env, missing = self._service_env(svc)
        if missing:
            unset = f"service {svc.name!r}: envFrom variable(s) {', '.join(missing)} not set"
            task_status.started([Finding("service-not-ready", unset, severity="error")])
            return
        self._log_dir.mkdir(parents=True, exist_ok=True)
        async with anyio.create_task_group() as tg:
            try:
                running = await start_process(
                    svc.command,
                    cwd=self._workdir(svc),
                    env=env,
                    log_dir=self._log_dir,
                    log_name=svc.name,
                    task_group=tg,
                    secrets=self._secrets,
                )
            except SpawnError as exc:
                reason = f"service {svc.name!r} could not start: {exc.reason}"
                task_status.started([Finding("service-not-ready", self._redact(reason))])
                return
            self.events.append(("start", svc.name))
            exited = anyio.Event()

            async def watch() -> None:
                await running.wait()
                exited.set()

            tg.start_soon(watch)
            why: tuple[str, str] | None = None
            try:
                why = await self._await_ready(svc, running, exited)
                if why is None:
                    self.events.append(("ready", svc.name))
                    task_status.started([])
                    await _first(state.stop, exited)
                    if not state.stop.is_set():  # it died while its providers used it
                        self.events.append(("lost", svc.name))
                        text = self._with_tail(
                            running,
                            f"service {svc.name!r} exited with code {running.returncode} after it"
                            " was ready, while providers were using it",
                        )
                        state.lost = Finding("service-not-ready", text, severity="error")
            finally:
                await running.terminate(self._grace_s)
                self.events.append(("stop", svc.name))
            if why is not None:
                kind, message = why
                text = self._with_tail(running, message)
                task_status.started([Finding(kind, text, severity="error")])

    async def _refusal(self, svc: Service) -> list[Finding]:
        """``port-in-use`` when something already listens on the readiness port."""
        if svc.readiness is None or svc.readiness.port is None:
            return []
        port = svc.readiness.port
        host = urlsplit(svc.readiness.url).hostname or "127.0.0.1"
        hosts = tuple(dict.fromkeys(("127.0.0.1", "::1", host if host != "localhost" else "::1")))
        holder = await anyio.to_thread.run_sync(port_holder, port, hosts)
        if holder is None:
            return []
        why = (
            f"service {svc.name!r} was not started: {holder.describe()} — a leftover server? "
            f"stop it, or move the service to a free port"
        )
        return [Finding("port-in-use", self._redact(why), severity="error")]

    async def _await_ready(
        self, svc: Service, running: RunningProcess, exited: anyio.Event
    ) -> tuple[str, str] | None:
        """Poll with backoff until the identity shows (None), or why not: (finding kind, message).

        A probe counts only while every socket listening on the port is the
        service's (its group, or a process carrying this run's owner marker) and the
        service is alive; a listener of anyone else is named as ``port-in-use``.
        """
        readiness = svc.readiness
        if readiness is None:
            return None
        deadline = time.monotonic() + readiness.timeout_ms / 1000
        delay = 0.05
        last: Probe | None = None
        marker = f"{OWNER_ENV}={owner_marker()}".encode()
        while True:
            held = self._held_by_another(svc, running, marker)
            if held is not None:
                return "port-in-use", held
            if exited.is_set():
                return "service-not-ready", (
                    f"service {svc.name!r} exited with code {running.returncode} before "
                    f"it was ready (waiting for {expectation(readiness)})"
                )
            left = deadline - time.monotonic()
            if left <= 0:
                seen = last.describe(readiness) if last else "no probe completed"
                return "service-not-ready", (
                    f"service {svc.name!r} never showed its identity within "
                    f"{readiness.timeout_ms} ms: {seen}"
                )
            last = await probe_once(readiness, min(ATTEMPT_S, max(left, 0.05)))
            if last.ready:  # the answer counts only if the listener is still the service's
                held = self._held_by_another(svc, running, marker)
                if held is not None:
                    return "port-in-use", held
                if not exited.is_set() and self._owned(svc, running, marker):
                    return None
            with anyio.move_on_after(min(delay, max(deadline - time.monotonic(), 0))):
                await exited.wait()
            delay = min(delay * 1.5, 1.0)

    def _held_by_another(self, svc: Service, running: RunningProcess, marker: bytes) -> str | None:
        """Why the port is not the service's, when a listener belongs to someone else."""
        port = svc.readiness.port if svc.readiness is not None else None
        if port is None:
            return None
        seen = ownership(port, group=running.pid, marker=marker)
        if seen.foreign is None:
            return None
        return (
            f"service {svc.name!r}: {seen.foreign.describe()}, not by the service's own"
            " processes — another run's server, or a leftover; its answers are never taken"
            " for the service's"
        )

    def _owned(self, svc: Service, running: RunningProcess, marker: bytes) -> bool:
        """The port's listeners are all the service's (a URL without a port: the probe decides)."""
        port = svc.readiness.port if svc.readiness is not None else None
        if port is None:
            return True
        return ownership(port, group=running.pid, marker=marker).ours

    def _with_tail(self, running: RunningProcess, message: str) -> str:
        tail = "\n".join(running.tail().splitlines()[-_TAIL_LINES:])
        text = f"{message}\n--- log tail ---\n{tail}" if tail.strip() else message
        return self._redact(text)

    def _service_env(self, svc: Service) -> tuple[dict[str, str], list[str]]:
        # only the fixed set, its passEnv and envFrom reach a service (changeloop.passenv)
        env = {**strict_environ(self._env, svc.pass_env), **svc.env}
        missing = [name for name in svc.env_from if name not in os.environ]
        env.update({name: os.environ[name] for name in svc.env_from if name in os.environ})
        for name in svc.env_from:  # values from envFrom are secrets wherever they go
            value = os.environ.get(name)
            if value and value not in self._secrets:
                self._secrets += (value,)
        return env, missing

    def _workdir(self, svc: Service) -> Path:
        if svc.repository is not None and svc.repository in self._workdirs:
            return self._workdirs[svc.repository]
        if len(self._workdirs) == 1:
            return next(iter(self._workdirs.values()))
        return self._plan.root

    def _redact(self, text: str) -> str:
        for secret in sorted(self._secrets, key=len, reverse=True):
            text = text.replace(secret, "***")
        return text


async def _first(*events: anyio.Event) -> None:
    """Return as soon as one of ``events`` is set."""
    async with anyio.create_task_group() as tg:

        async def wait(event: anyio.Event) -> None:
            await event.wait()
            tg.cancel_scope.cancel()

        for event in events:
            tg.start_soon(wait, event)
