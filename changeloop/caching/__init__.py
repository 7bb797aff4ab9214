"""Reusing receipts: the workspace's own cache by fingerprint (``local``) and a
signed shared cache (``shared``).
"""
