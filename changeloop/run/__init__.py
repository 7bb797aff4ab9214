"""The run core of ``prove``, as stages that return records.

- :mod:`.engine`       ``prove``: composes the stages; each provider's life ends in one record
- :mod:`.stages`       ``RunStages`` and ``compose``: the stages of one run, made before it starts
- :mod:`.sandboxes`    ``Sandboxes``: per-repository identity, sandbox and setup, with their locks
- :mod:`.fingerprinter` ``Fingerprinter``: a provider's fingerprint and wiring digest
- :mod:`.seal`         pure: outcomes → signed receipt records; a reused pass → the same record
- :mod:`.writer`       ``ReceiptWriter``: the records on disk (run directory, ``latest/``, cache)
- :mod:`.commit`       the writer's group commit (write all, fsync all, rename all)
- :mod:`.fold`         pure: the records folded into the verdict's views and notes
- :mod:`.setup`        a repository's ``setup`` commands, run once per sandbox
- :mod:`.cache_reuse`  a cache entry read back, every envelope verified
- :mod:`.cache_from`   ``--cache-from``: the shared cache, with a fingerprint per trusted issuer
- :mod:`.runlog`, :mod:`.run_json`  ``runs/<id>/run.json``
- :mod:`.order`        the scheduler's hint: which providers a cached pass likely spares
- :mod:`.provider_services` a provider's services: their sandboxes, workdirs, leftover ports

``changeloop.run.engine`` drives them; none writes into another's state.
"""
