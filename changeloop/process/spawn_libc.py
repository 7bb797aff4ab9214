"""libc's ``posix_spawn`` called directly: a working directory, every descriptor closed, no GIL.

CPython's ``os.posix_spawn`` holds the GIL while the kernel clones and the
child reaches ``exec`` (about 0.1–0.3 ms per command, bench/README.md), cannot
change the child's working directory, and cannot close every inherited
descriptor. glibc can do all three: ``posix_spawn_file_actions_addchdir_np``
(glibc ≥ 2.29) and ``posix_spawn_file_actions_addclosefrom_np`` (glibc ≥ 2.34),
and a foreign call made through ``ctypes`` releases the GIL for its duration.
So with glibc, :func:`spawn` starts a child exactly as ``subprocess.Popen(argv,
cwd=cwd, env=env, start_new_session=True, close_fds=True, stdin=…, stdout=…,
stderr=…)`` does — same working directory change, same descriptors closed,
SIGPIPE and SIGXFSZ reset — while the event loop's other threads run.

:data:`AVAILABLE` is False anywhere else (musl, macOS, an older glibc): the
caller then uses ``os.posix_spawn`` or ``Popen`` (``spawn.py``).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Mapping, Sequence

__all__ = ["AVAILABLE", "spawn"]

# glibc's flag values (bits/spawn.h); only used when the library is glibc.
_SETSIGDEF = 0x04
_SETSID = 0x80
# Opaque glibc types, given more room than they take (336, 80 and 128 bytes on x86_64).
_ATTR = ctypes.c_char * 1024
_ACTIONS = ctypes.c_char * 1024
_SIGSET = ctypes.c_char * 256


def _glibc() -> bool:
    try:
        return (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc ")
    except (ValueError, OSError):  # not glibc: no such name
        return False


def _load() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux") or not _glibc():
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        for name in (
            "posix_spawn",
            "posix_spawnp",
            "posix_spawnattr_init",
            "posix_spawnattr_setflags",
            "posix_spawnattr_setsigdefault",
            "posix_spawn_file_actions_init",
            "posix_spawn_file_actions_destroy",
            "posix_spawn_file_actions_adddup2",
            "posix_spawn_file_actions_addchdir_np",
            "posix_spawn_file_actions_addclosefrom_np",
            "sigemptyset",
            "sigaddset",
        ):
            getattr(libc, name)
    except (OSError, AttributeError):
        return None
    pointer = ctypes.c_void_p
    for name in ("posix_spawn", "posix_spawnp"):
        fn = getattr(libc, name)
        fn.argtypes = [
            ctypes.POINTER(ctypes.c_int),
            ctypes.c_char_p,
            pointer,
            pointer,
            pointer,
            pointer,
        ]
        fn.restype = ctypes.c_int
    libc.posix_spawnattr_setflags.argtypes = [pointer, ctypes.c_short]
    libc.posix_spawn_file_actions_adddup2.argtypes = [pointer, ctypes.c_int, ctypes.c_int]
    libc.posix_spawn_file_actions_addchdir_np.argtypes = [pointer, ctypes.c_char_p]
    libc.posix_spawn_file_actions_addclosefrom_np.argtypes = [pointer, ctypes.c_int]
    return libc


_LIBC = _load()
AVAILABLE = _LIBC is not None
_FS_ENCODING = (sys.getfilesystemencoding(), sys.getfilesystemencodeerrors())
_RESET = tuple(
    sig for sig in (getattr(signal, n, None) for n in ("SIGPIPE", "SIGXFSZ")) if sig is not None
)


def _attributes(libc: ctypes.CDLL) -> ctypes.Array[ctypes.c_char]:
    """What every child gets: a session of its own, SIGPIPE and SIGXFSZ at their defaults.

    Built once: ``posix_spawn`` only reads its attributes (``const``), so one
    object serves every command, from any thread.
    """
    sigset = _SIGSET()
    libc.sigemptyset(sigset)
    for sig in _RESET:
        libc.sigaddset(sigset, int(sig))
    attr = _ATTR()
    libc.posix_spawnattr_init(attr)
    libc.posix_spawnattr_setsigdefault(attr, sigset)
    libc.posix_spawnattr_setflags(attr, _SETSIGDEF | _SETSID)
    return attr


_ATTRIBUTES = _attributes(_LIBC) if _LIBC is not None else None


def spawn(
    program: str,
    argv: Sequence[str],
    env: Mapping[str, str],
    *,
    cwd: str | None,
    stdio: tuple[int, int, int],
    search_path: bool,
) -> int:
    """Start ``program`` in a new session with ``stdio`` as 0, 1, 2; its pid, or ``OSError``.

    ``search_path``: ``program`` is a bare name looked up in this process's
    ``PATH`` (``posix_spawnp``). Every descriptor above 2 is closed in the child.
    """
    libc = _LIBC
    assert libc is not None, "spawn_libc.spawn without glibc: check AVAILABLE"
    args_b, env_b = _encoded(argv, env)
    args = (ctypes.c_char_p * (len(args_b) + 1))(*args_b, None)
    envp = (ctypes.c_char_p * (len(env_b) + 1))(*env_b, None)
    actions = _ACTIONS()
    libc.posix_spawn_file_actions_init(actions)
    try:
        for target, fd in enumerate(stdio):
            _check(libc.posix_spawn_file_actions_adddup2(actions, fd, target))
        if cwd is not None:
            _check(libc.posix_spawn_file_actions_addchdir_np(actions, _c_string(cwd)))
        _check(libc.posix_spawn_file_actions_addclosefrom_np(actions, 3))
        pid = ctypes.c_int()
        call = libc.posix_spawnp if search_path else libc.posix_spawn
        err = call(ctypes.byref(pid), _c_string(program), actions, _ATTRIBUTES, args, envp)
    finally:
        libc.posix_spawn_file_actions_destroy(actions)
    if err:
        raise OSError(err, os.strerror(err), program)
    return pid.value


def _encoded(argv: Sequence[str], env: Mapping[str, str]) -> tuple[list[bytes], list[bytes]]:
    """``argv`` and ``env`` as C strings, refused where ``Popen`` refuses them.

    A C string ends at its first NUL: one inside a value would be cut short
    silently, so it is a ``ValueError`` (``embedded null byte``), as is a name
    holding ``=`` (``illegal environment variable name``), as ``Popen`` says.
    """
    encoding, errors = _FS_ENCODING
    args = [os.fsencode(a) for a in argv]
    for name in env:
        if "=" in name:
            raise ValueError("illegal environment variable name")
    pairs = [f"{k}={v}".encode(encoding, errors) for k, v in env.items()]
    if b"\0" in b"".join(args) or b"\0" in b"".join(pairs):
        raise ValueError("embedded null byte")
    return args, pairs


def _c_string(text: str) -> bytes:
    data = os.fsencode(text)
    if b"\0" in data:
        raise ValueError("embedded null byte")
    return data


def _check(err: int) -> None:
    if err:
        raise OSError(err, os.strerror(err))
