"""Receipts as signed evidence: RFC 8785 (``jcs``), DSSE envelopes, Ed25519 keys,
in-toto statements, their verification, and the summary VSA.
"""
