"""A tiny module the example change proves: a greeting for a name."""


def greet(name: str) -> str:
    name = name.strip()
    if not name:
        raise ValueError("a greeting needs a name")
    return f"Hello, {name}!"
