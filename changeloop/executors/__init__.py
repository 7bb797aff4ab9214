"""Executors: who runs a provider's ``Job``; :mod:`~changeloop.executors.opening` chooses one.

``local`` (this machine, :mod:`~changeloop.executors.local`) is the default;
``dask`` runs jobs on a Dask cluster and needs ``pip install 'changeloop[dask]'``.
Nothing from Dask is imported unless ``--executor dask`` asks for it.

A Dask worker decides results, so it is as trusted as the signing key: the
cluster is reached over TLS with a client certificate only (``tls://`` and the
CA, certificate and key, from ``--dask-tls-*`` or Dask's own
``distributed.comm.tls.*`` configuration); any other address is refused before
anything runs (``dask-insecure``) unless ``--dask-insecure`` says otherwise.
"""
