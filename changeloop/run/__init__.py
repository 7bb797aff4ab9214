"""The run core of ``prove``, as stages that return records (DESIGN.md §9).

- :mod:`.records`      options, typed events, per-provider reports
- :mod:`.job`          ``Job`` / ``JobResult`` and the ``Executor`` seam (``LocalExecutor``)
- :mod:`.sandboxes`    ``Sandboxes``: per-repository identity, sandbox and setup, with their locks
- :mod:`.fingerprinter` ``Fingerprinter``: a provider's fingerprint and wiring digest
- :mod:`.sink`         ``ReceiptSink``: the only writer of receipts (mask, seal, sign, store, cache)
- :mod:`.setup`        a repository's ``setup`` commands, run once per sandbox
- :mod:`.stages`       ``RunStages`` and ``compose``: the stages of one run, made before it starts
- :mod:`.cache_from`   ``--cache-from``: the shared cache, with a fingerprint per trusted issuer
- :mod:`.run_json`     ``runs/<id>/run.json``: the run's ``RunLog`` made and settled
- :mod:`.order`        the scheduler's hint: which providers a cached pass likely spares
- :mod:`.recording`    ``RecordingExecutor``: what a provider's jobs left for its receipt
- :mod:`.provider_services` a provider's services: their sandboxes, workdirs, leftover ports

``changeloop.run.engine`` drives them; none writes into another's state.
"""
