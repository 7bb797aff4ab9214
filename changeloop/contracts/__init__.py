"""Tool capability contracts: the flags and subcommands each adapter relies on (docs/verbs/gate.md).

:mod:`~changeloop.contracts.check` asserts them against the tools a repository
resolves (``changeloop adapters check``); :mod:`~changeloop.contracts.record` keeps
what the last check found, and :mod:`~changeloop.contracts.drift` reads it back for
``evidence doctor`` and ``prove``.
"""
