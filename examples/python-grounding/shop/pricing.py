"""Pricing rules, reached only through the entry points."""

DISCOUNT_FROM = 10_000  # cents


def total(items: list[tuple[str, int, int]]) -> int:
    """Sum of the lines, with 10% off an order above 100.00."""
    amount = 0
    for _sku, quantity, price in items:
        amount += quantity * price
    if amount > DISCOUNT_FROM:
        amount = amount - amount // 10
    return amount


def refund(order: dict[str, object]) -> object:
    """What a refund pays back: the order's total."""
    return order["total"]
