"""Comparing what two implementations give: values compared with the type of every leaf."""

from __future__ import annotations

from typing import Any


def typed(value: Any) -> Any:
    """The value with every leaf paired with its type, so 1 and 1.0 and True differ."""
    if isinstance(value, dict):
        return {key: typed(v) for key, v in value.items()}
    if isinstance(value, list):
        return [typed(v) for v in value]
    return (type(value), value)
