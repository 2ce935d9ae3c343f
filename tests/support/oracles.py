"""What DynamoDB would do, computed by hand: the reference the compiled requests must agree with."""

from __future__ import annotations

import operator
from decimal import Decimal
from typing import Any

from lsiorm._conditions import Between, Compare, Operator

COMPARISONS = {
    "=": operator.eq,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def _ordered(av: dict[str, Any]) -> Any:
    """The value DynamoDB orders a key by: text, the number's exact value, or the bytes."""
    ((tag, raw),) = av.items()
    return {"S": str, "N": Decimal, "B": bytes}[tag](raw)


def sort_key_selects(params: dict[str, Any], key: str | dict[str, Any]) -> bool:
    """Whether a compiled Query's key condition selects a stored sort key.

    ``key`` is a string sort key, or the AttributeValue of a Number or Binary one. The
    partition key is taken as matched; the sort-key part (after `` AND ``) is evaluated with
    DynamoDB's operators: a comparison, ``BETWEEN`` or ``begins_with``, on ``:v1`` (and
    ``:v2``).
    """
    values = params["ExpressionAttributeValues"]
    text = params["KeyConditionExpression"]
    if " AND " not in text:
        return True
    stored = _ordered({"S": key} if isinstance(key, str) else key)
    sort = text.split(" AND ", 1)[1]
    low = _ordered(values[":v1"])
    if sort.startswith("begins_with"):
        return bool(stored.startswith(low))
    if "BETWEEN" in sort:
        return bool(low <= stored <= _ordered(values[":v2"]))
    comparison = COMPARISONS[sort.split()[1]]
    return bool(comparison(stored, low))


def holds(op: Operator, value: Any) -> bool:
    """Whether a field value meets a where() operator, computed in Python.

    Python orders text by code point, which is UTF-8 byte order, DynamoDB's order of strings.
    """
    if isinstance(op, Between):
        return bool(op.low <= value <= op.high)
    if isinstance(op, Compare):
        return bool(COMPARISONS[op.op](value, op.value))
    return bool(value.startswith(op.prefix))  # type: ignore[union-attr]
