"""Adapters: one module per kind of provider, listed in ``registry``."""
