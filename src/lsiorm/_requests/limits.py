"""DynamoDB's request limits, checked on the params before anything is sent (pure).

Each limit has its own rule name. The numbers are DynamoDB's documented constraints
("Constraints in Amazon DynamoDB", expression parameters and API-specific constraints):

* every expression string (condition, update, projection, key condition, filter): 4 KB;
* operators and functions in one expression: 300 (a comparison, AND, OR, NOT, BETWEEN, IN,
  a function such as ``begins_with`` or ``size``, and ``+``/``-`` in an update; a SET's own
  ``=``, parentheses and BETWEEN's ``AND`` do not count, as DynamoDB Local counts them);
* a document path: at most 32 levels of nesting (checked where update paths are resolved);
* all ExpressionAttributeNames and ExpressionAttributeValues of one request together: 2 MB;
* an ``IN`` comparison: at most 100 operands (checked where conditions are compiled);
* TransactWriteItems / TransactGetItems: at most 100 actions;
* BatchWriteItem: at most 25 requests; BatchGetItem: at most 100 keys.

Key and item sizes are checked where keys and items are built: a key as it is rendered
(`checked_key` in `_model/entity_meta.py`), an item as it is encoded (`_model/write_checks.py`).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Mapping
from typing import Any, Final

from lsiorm._model.wire import attribute_value_size
from lsiorm.errors import ValidationError

__all__ = [
    "MAX_BATCH_GET_KEYS",
    "MAX_BATCH_WRITE_REQUESTS",
    "MAX_EXPRESSION_BYTES",
    "MAX_EXPRESSION_OPERATORS",
    "MAX_SUBSTITUTION_BYTES",
    "MAX_TRANSACTION_ACTIONS",
    "check_request",
]

MAX_EXPRESSION_BYTES: Final = 4 * 1024
MAX_EXPRESSION_OPERATORS: Final = 300
MAX_SUBSTITUTION_BYTES: Final = 2 * 1024 * 1024
MAX_TRANSACTION_ACTIONS: Final = 100
MAX_BATCH_WRITE_REQUESTS: Final = 25
MAX_BATCH_GET_KEYS: Final = 100

_EXPRESSIONS: Final = (
    "ConditionExpression",
    "UpdateExpression",
    "ProjectionExpression",
    "KeyConditionExpression",
    "FilterExpression",
)


_TOKEN: Final = re.compile(r"<>|<=|>=|[=<>+\-(),]|[A-Za-z_][A-Za-z0-9_]*|[#:][A-Za-z0-9_]+|\S")
_COMPARISONS: Final = frozenset({"=", "<>", "<", "<=", ">", ">="})
_KEYWORDS: Final = frozenset({"AND", "OR", "NOT", "IN", "BETWEEN"})


def count_operators(text: str, *, update: bool = False) -> int:
    """Return how many operators and functions DynamoDB counts in one expression."""
    tokens = _TOKEN.findall(text)
    count = 0
    between_and = 0  # each BETWEEN owns the next AND
    for i, token in enumerate(tokens):
        following = tokens[i + 1] if i + 1 < len(tokens) else ""
        word = token.upper()
        if following == "(" and token[0].isalpha() and word not in _KEYWORDS:
            count += 1  # a function
        elif update:
            count += token in ("+", "-")
        elif token in _COMPARISONS:
            count += 1
        elif word == "BETWEEN":
            count += 1
            between_and += 1
        elif word == "AND" and between_and:
            between_and -= 1
        elif word in _KEYWORDS:
            count += 1
    return count


def _table(params: Mapping[str, Any]) -> str | None:
    name = params.get("TableName")
    return name if isinstance(name, str) else None


def _check_expressions(operation: str, params: Mapping[str, Any]) -> None:
    for field in _EXPRESSIONS:
        text = params.get(field)
        if isinstance(text, str) and len(text.encode("utf-8")) > MAX_EXPRESSION_BYTES:
            raise ValidationError(
                "expression.max-4kb",
                f"The {field} of this {operation} is {len(text.encode('utf-8'))} bytes; "
                f"DynamoDB allows at most {MAX_EXPRESSION_BYTES} bytes per expression. Split "
                "the condition or the update into smaller requests.",
                table=_table(params),
            )
        if isinstance(text, str) and field != "ProjectionExpression":
            operators = count_operators(text, update=field == "UpdateExpression")
            if operators > MAX_EXPRESSION_OPERATORS:
                raise ValidationError(
                    "expression.max-300-operators",
                    f"The {field} of this {operation} has {operators} operators and functions; "
                    f"DynamoDB allows at most {MAX_EXPRESSION_OPERATORS} in one expression. "
                    "Split the condition or the update into smaller requests.",
                    table=_table(params),
                )
    total = 0
    names = params.get("ExpressionAttributeNames")
    if isinstance(names, Mapping):
        total += sum(len(str(k).encode()) + len(str(v).encode()) for k, v in names.items())
    values = params.get("ExpressionAttributeValues")
    if isinstance(values, Mapping):
        for k, v in values.items():
            total += len(str(k).encode())
            if isinstance(v, Mapping):
                # A malformed value is the service's to refuse, with its own message.
                with contextlib.suppress(ValidationError):
                    total += attribute_value_size(v)
    if total > MAX_SUBSTITUTION_BYTES:
        raise ValidationError(
            "expression.max-substitutions-2mb",
            f"The expression attribute names and values of this {operation} add up to {total} "
            f"bytes; DynamoDB allows at most {MAX_SUBSTITUTION_BYTES} bytes (2 MB).",
            table=_table(params),
        )


def _count(operation: str, count: int, limit: int, rule: str, what: str) -> None:
    if count > limit:
        raise ValidationError(
            rule,
            f"This {operation} has {count} {what}; DynamoDB allows at most {limit}. Use the "
            "session's own method, which splits the request, or send fewer at a time.",
        )


def check_request(operation: str, params: Mapping[str, Any]) -> None:
    """Raise a ValidationError naming the limit when ``params`` break one of DynamoDB's limits."""
    _check_expressions(operation, params)
    if operation in ("TransactWriteItems", "TransactGetItems"):
        items = params.get("TransactItems")
        if isinstance(items, list):
            _count(operation, len(items), MAX_TRANSACTION_ACTIONS, "transaction.max-100", "actions")
            for action in items:
                if isinstance(action, Mapping):
                    for body in action.values():
                        if isinstance(body, Mapping):
                            _check_expressions(operation, body)
    elif operation == "BatchWriteItem":
        requests = params.get("RequestItems")
        if isinstance(requests, Mapping):
            count = sum(len(v) for v in requests.values() if isinstance(v, list))
            _count(operation, count, MAX_BATCH_WRITE_REQUESTS, "batch.max-25-writes", "writes")
    elif operation == "BatchGetItem":
        requests = params.get("RequestItems")
        if isinstance(requests, Mapping):
            count = sum(
                len(v.get("Keys") or ()) for v in requests.values() if isinstance(v, Mapping)
            )
            _count(operation, count, MAX_BATCH_GET_KEYS, "batch.max-100-keys", "keys")
