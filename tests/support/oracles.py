"""What DynamoDB would do, computed by hand: the reference the compiled requests must agree with."""

from __future__ import annotations

import operator
from typing import Any

from lsiorm._conditions import Between, Compare, Operator

_COMPARISONS = {
    "=": operator.eq,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def sort_key_selects(params: dict[str, Any], key: str) -> bool:
    """Whether a compiled Query's key condition selects a stored (string) sort key.

    The partition key is taken as matched; the sort-key part (after `` AND ``) is evaluated
    with DynamoDB's operators: a comparison, ``BETWEEN`` or ``begins_with``, on ``:v1``
    (and ``:v2``).
    """
    values = params["ExpressionAttributeValues"]
    text = params["KeyConditionExpression"]
    if " AND " not in text:
        return True
    sort = text.split(" AND ", 1)[1]
    if sort.startswith("begins_with"):
        return key.startswith(values[":v1"]["S"])
    if "BETWEEN" in sort:
        return bool(values[":v1"]["S"] <= key <= values[":v2"]["S"])
    comparison = _COMPARISONS[sort.split()[1]]
    return bool(comparison(key, values[":v1"]["S"]))


def holds(op: Operator, value: Any) -> bool:
    """Whether a field value meets a where() operator, computed in Python.

    Python orders text by code point, which is UTF-8 byte order, DynamoDB's order of strings.
    """
    if isinstance(op, Between):
        return bool(op.low <= value <= op.high)
    if isinstance(op, Compare):
        return bool(_COMPARISONS[op.op](value, op.value))
    return bool(value.startswith(op.prefix))  # type: ignore[union-attr]
