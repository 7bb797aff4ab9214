"""A tiny shop: orders and their totals."""
