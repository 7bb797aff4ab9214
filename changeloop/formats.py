"""Version numbers of what changeloop writes, importable without the modules that write them.

The no-change record keys on them (changeloop.nochange) before anything heavier is
imported; ``fingerprint.FORMAT`` and ``fingerprint.SCHEMA_VERSION`` are these.
"""

from __future__ import annotations

# Bump when the meaning of the fingerprint document changes: every old cache entry misses.
# 2: the wiring digest is part of the document; 3: services as wiring has them;
# 4: every passed environment value, services' envFrom values, ignored inputs.
FINGERPRINT_FORMAT = 4
RECEIPT_SCHEMA = "changeloop/receipt@2"  # the receipts a fingerprint speaks for
# Bump when the `prove --json` document or the board changes shape: a no-change record
# replays them, so an older record must not answer. 2: they name their trust.
PROVE_DOCUMENT = 2
