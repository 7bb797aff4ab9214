"""What a provider's result depends on: the fingerprint, the wiring digest, the
environment part, and the ``inputs`` pathspec.
"""
