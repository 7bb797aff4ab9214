"""The run core of ``prove``, as stages that return records (DESIGN.md §9).

- :mod:`.records`      options, typed events, per-provider reports
- :mod:`.job`          ``Job`` / ``JobResult`` and the ``Executor`` seam (``LocalExecutor``)
- :mod:`.sandboxes`    ``Sandboxes``: per-repository identity, sandbox and setup, with their locks
- :mod:`.fingerprinter` ``Fingerprinter``: a provider's fingerprint and wiring digest
- :mod:`.sink`         ``ReceiptSink``: the only writer of receipts (mask, seal, sign, store, cache)
- :mod:`.setup`        a repository's ``setup`` commands, run once per sandbox

``changeloop.engine`` composes them; none writes into another's state.
"""
