import pytest
from greeting import greet


@pytest.mark.claim("greeting")
def test_greets_by_trimmed_name():
    assert greet("  Ada ") == "Hello, Ada!"


@pytest.mark.claim("empty-name")
def test_refuses_empty_name():
    with pytest.raises(ValueError):
        greet("   ")
