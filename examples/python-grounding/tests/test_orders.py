"""Three kinds of citation: grounded, ungrounded (an `assert True`), structural."""

import json
from pathlib import Path

import pytest
from shop.api import create_order

SCHEMA = Path(__file__).resolve().parent.parent / "shop" / "order.schema.json"


@pytest.mark.claim("order-total", depth="component", ref="SHOP-1")
def test_total_with_discount():
    assert create_order([("apple", 3, 5000)])["total"] == 13500


@pytest.mark.claim("order-total", depth="component")
def test_total_without_discount():
    assert create_order([("pear", 2, 1000)])["total"] == 2000


@pytest.mark.claim("order-total", depth="unit")
def test_empty_order_is_refused():
    with pytest.raises(ValueError):
        create_order([])


@pytest.mark.claim("refunds", depth="unit", ref="SHOP-2")
def test_refund():
    assert True  # cites the claim but never runs the code: not evidence


@pytest.mark.claim("schema-currency", depth="unit")
def test_schema_declares_currency():
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    assert "currency" in schema["required"]
