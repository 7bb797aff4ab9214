"""Files on disk without surprises: exclusive atomic writes and bounded regular reads.

- :mod:`~changeloop.fsio.writes`: a temporary file created exclusively, then
  renamed over the name (never through a planted symlink, docs/threat-model.md);
  groups of files committed in rounds that outlive a power cut (docs/design.md).
- :mod:`~changeloop.fsio.reads`: regular files read without blocking and with
  a size cap.
- :mod:`~changeloop.fsio.beneath`: a file written below a directory others can
  write into, through no planted symlink folder.

Usage::

    write_atomic(path, data)                       # one file
    write_all([(a, data_a), (b, data_b)])          # a batch, one fsync round
    commit([[Pending(a, data_a)], [Pending(b, data_b, durable=False)]])  # groups, errors back
    create_new(key_path, pem, mode=0o600)          # never over an existing name
    write_beneath(shared, (hexdigest, "test.json"), data)  # no symlink below `shared` followed
    data = read_regular(path, limit=64 * KIB, what="public key")
    memo = load_state_json(state / "validated.json", limit=MIB)   # None: absent or damaged
"""

from changeloop.fsio.beneath import write_beneath
from changeloop.fsio.reads import (
    KIB,
    MIB,
    load_state_json,
    read_regular,
    read_regular_stat,
    read_state,
    symlink_under,
)
from changeloop.fsio.writes import Pending, commit, create_new, write_all, write_atomic

__all__ = [
    "KIB",
    "MIB",
    "Pending",
    "commit",
    "create_new",
    "load_state_json",
    "read_regular",
    "read_regular_stat",
    "read_state",
    "symlink_under",
    "write_all",
    "write_atomic",
    "write_beneath",
]
