"""The public surface: the functions execution.yaml declares as entry points."""

from shop.pricing import total


def create_order(items: list[tuple[str, int, int]]) -> dict[str, object]:
    """An order from ``(sku, quantity, unit price in cents)`` lines."""
    if not items:
        raise ValueError("an order needs at least one item")
    return {"items": list(items), "total": total(items)}
