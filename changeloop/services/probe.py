"""The readiness probe: poll a URL until it shows the service's identity.

A 200 from *some* server is not enough — the leftover-server trap is exactly
a 200 from the wrong one — so the probe is satisfied only by the expected body
substring, body regex, or header name + value (docs/execution-yaml.md).

    seen = await probe_once(readiness)
    if seen.ready: ...
    else: print(seen.describe(readiness))
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import SplitResult, urlsplit

import anyio

from changeloop.model import Readiness

MAX_BODY = 1 << 20
ATTEMPT_S = 2.0


@dataclass(frozen=True)
class Probe:
    """What one attempt saw; ``error`` set when nothing answered."""

    ready: bool
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    body: str = ""
    error: str | None = None

    def describe(self, readiness: Readiness) -> str:
        """Why this attempt did not count as ready, for the provider's finding."""
        if self.error is not None:
            return f"{readiness.url} did not answer: {self.error}"
        excerpt = " ".join(self.body.split())[:160]
        return (
            f"{readiness.url} answered {self.status} but did not show {expectation(readiness)}"
            f" (body began: {excerpt!r})"
        )


def expectation(readiness: Readiness) -> str:
    """The identity the probe waits for, in words."""
    parts = []
    if readiness.body is not None:
        parts.append(f"body containing {readiness.body!r}")
    if readiness.body_regex is not None:
        parts.append(f"body matching /{readiness.body_regex}/")
    if readiness.header is not None:
        parts.append(f"header {readiness.header[0]}: {readiness.header[1]}")
    return " and ".join(parts) or "any answer"


def matches(readiness: Readiness, status: int, headers: dict[str, str], body: str) -> bool:
    """Ready = a 2xx/3xx answer carrying every expected part of the identity."""
    if not 200 <= status < 400:
        return False
    if readiness.body is not None and readiness.body not in body:
        return False
    if readiness.body_regex is not None and not re.search(readiness.body_regex, body):
        return False
    if readiness.header is not None:
        name, value = readiness.header
        if headers.get(name.lower(), "").strip() != value:
            return False
    return True


async def probe_once(readiness: Readiness, timeout_s: float = ATTEMPT_S) -> Probe:
    """One GET, bounded by ``timeout_s``; never raises for network trouble."""
    parts = urlsplit(readiness.url)
    try:
        with anyio.fail_after(timeout_s):
            if parts.scheme == "http":
                status, headers, body = await _get_http(
                    parts.hostname or "127.0.0.1", parts.port or 80, _target(parts)
                )
            else:
                status, headers, body = await anyio.to_thread.run_sync(
                    _get_urllib, readiness.url, timeout_s, abandon_on_cancel=True
                )
    except TimeoutError:
        return Probe(ready=False, error=f"no answer within {timeout_s:g} s")
    except (OSError, ValueError, anyio.EndOfStream, anyio.BrokenResourceError) as exc:
        return Probe(ready=False, error=str(exc) or type(exc).__name__)
    text = body.decode("utf-8", "replace")
    return Probe(matches(readiness, status, headers, text), status, headers, text)


def _target(parts: SplitResult) -> str:
    path = parts.path or "/"
    return f"{path}?{parts.query}" if parts.query else path


async def _get_http(host: str, port: int, target: str) -> tuple[int, dict[str, str], bytes]:
    """HTTP/1.0 GET (so no chunked encoding), read to EOF or :data:`MAX_BODY`."""
    async with await anyio.connect_tcp(host, port) as stream:
        request = f"GET {target} HTTP/1.0\r\nHost: {host}:{port}\r\nAccept: */*\r\n\r\n"
        await stream.send(request.encode("latin-1"))
        data = b""
        try:
            while len(data) < MAX_BODY:
                data += await stream.receive(65536)
        except anyio.EndOfStream:
            pass
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status_parts = lines[0].split(" ", 2)
    if len(status_parts) < 2 or not status_parts[0].startswith("HTTP/"):
        raise ValueError(f"not an HTTP response: {lines[0][:80]!r}")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    return int(status_parts[1]), headers, body


def _get_urllib(url: str, timeout_s: float) -> tuple[int, dict[str, str], bytes]:
    """HTTPS (or anything not plain http) through urllib, in a worker thread."""
    import ssl  # noqa: PLC0415 - with urllib.request (http.client, email), only the HTTPS probe needs it
    import urllib.error  # noqa: PLC0415 - only the HTTPS probe needs it
    import urllib.request  # noqa: PLC0415 - only the HTTPS probe needs it

    request = urllib.request.Request(url, method="GET")  # noqa: S310 - the user's own URL
    context = ssl.create_default_context()
    try:
        with urllib.request.urlopen(request, timeout=timeout_s, context=context) as resp:  # noqa: S310
            return resp.status, {k.lower(): v for k, v in resp.headers.items()}, resp.read(MAX_BODY)
    except urllib.error.HTTPError as err:
        return err.code, {k.lower(): v for k, v in err.headers.items()}, err.read(MAX_BODY)
