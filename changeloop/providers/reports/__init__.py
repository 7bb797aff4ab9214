"""Test-report readers shared by the test-discovery and playwright adapters.

Every reader returns :class:`changeloop.providers.reports.model.ReportResult`.
"""

from __future__ import annotations
