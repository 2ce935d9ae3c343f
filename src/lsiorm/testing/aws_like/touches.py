"""What a request touches: its items (table, key, position, kind) and the partitions it reads.

Every behaviour of the engine that looks into a request starts here: the partition limits
charge the partitions of the items a write or read touches, the GSI lag captures the items a
write changed, and transaction conflicts hold the items a transaction touches.

* PutItem, UpdateItem, DeleteItem and GetItem touch the item of their key (a put's key is read
  from its item through the table's key schema).
* BatchWriteItem and BatchGetItem touch one item per entry, numbered in the order of the
  request (tables in the order given, entries in each table's order).
* TransactWriteItems and TransactGetItems touch one item per action, at the action's position.
* A Query reads the partition its key condition names: the ``=`` on the partition key of the
  table, of the local index (the table's partition) or of the global index it names; the
  expression is read with its ``ExpressionAttributeNames`` and ``ExpressionAttributeValues``
  far enough to find that ``=`` (and the older ``KeyConditions`` form too).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from lsiorm.testing.aws_like.tables import TableShape, key_id, partition_id

__all__ = ["Touch", "equalities", "query_partition", "touches"]

_TOKEN = re.compile(r"\s*(#[\w]+|:[\w]+|[A-Za-z_][\w.]*|<>|<=|>=|=|<|>|\(|\)|,|\S)")


@dataclass
class Touch:
    """One item a request touches; ``before`` and ``after`` are its images once read."""

    position: int
    table: TableShape
    key: dict[str, Any]
    #: "put", "update", "delete", "check" (a transaction's ConditionCheck) or "get".
    kind: str
    #: A put's item.
    item: dict[str, Any] | None = None
    before: dict[str, Any] | None = None
    after: dict[str, Any] | None = None

    @property
    def identity(self) -> str:
        """The item's identity (its table and key)."""
        return key_id(self.table.name, self.key)

    @property
    def writes(self) -> bool:
        """Whether the touch is a write (a ConditionCheck counts as one, as AWS charges it)."""
        return self.kind != "get"

    @property
    def changes(self) -> bool:
        """Whether the touch may change the item."""
        return self.kind in ("put", "update", "delete")

    @property
    def new_image(self) -> dict[str, Any] | None:
        """The item after the write, as far as known: the put's item, else the image read."""
        return self.item if self.kind == "put" else self.after


Shapes = Callable[[str], "TableShape | None"]


def _raw(operation: str, params: Mapping[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(table, kind, key-or-item) per touched item, in position order."""
    if operation in ("PutItem", "UpdateItem", "DeleteItem", "GetItem"):
        kind = {"PutItem": "put", "UpdateItem": "update", "DeleteItem": "delete"}
        source = params["Item"] if operation == "PutItem" else params["Key"]
        yield params["TableName"], kind.get(operation, "get"), dict(source)
    elif operation == "BatchWriteItem":
        for table, writes in (params.get("RequestItems") or {}).items():
            for write in writes:
                if "PutRequest" in write:
                    yield table, "put", dict(write["PutRequest"]["Item"])
                else:
                    yield table, "delete", dict(write["DeleteRequest"]["Key"])
    elif operation == "BatchGetItem":
        for table, spec in (params.get("RequestItems") or {}).items():
            for key in spec.get("Keys") or ():
                yield table, "get", dict(key)
    elif operation in ("TransactWriteItems", "TransactGetItems"):
        kinds = {"Put": "put", "Update": "update", "Delete": "delete", "ConditionCheck": "check"}
        for action in params.get("TransactItems") or ():
            if "Get" in action:
                yield action["Get"]["TableName"], "get", dict(action["Get"]["Key"])
                continue
            ((name, spec),) = ((k, v) for k, v in action.items() if k in kinds)
            source = spec["Item"] if name == "Put" else spec["Key"]
            yield spec["TableName"], kinds[name], dict(source)


def touches(operation: str, params: Mapping[str, Any], shapes: Shapes) -> list[Touch] | None:
    """The items a request touches; None when it cannot be read (a malformed request, or a
    table the upstream engine does not have: the engine passes it on and the upstream engine
    says what is wrong)."""
    found: list[Touch] = []
    try:
        for position, (table, kind, source) in enumerate(_raw(operation, params)):
            shape = shapes(table)
            if shape is None:
                return None
            key = shape.key_of(source)
            item = source if kind == "put" else None
            found.append(Touch(position, shape, key, kind, item))
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
    return found


def equalities(
    expression: str, names: Mapping[str, str], values: Mapping[str, Any]
) -> dict[str, Any]:
    """The ``attribute = :value`` comparisons of an expression, by attribute name."""
    tokens = _TOKEN.findall(expression)
    found: dict[str, Any] = {}
    for i, token in enumerate(tokens):
        if token != "=" or i == 0 or i + 1 == len(tokens):
            continue
        left, right = tokens[i - 1], tokens[i + 1]
        if left.startswith(":"):
            left, right = right, left
        if not right.startswith(":") or right not in values or left.startswith(":"):
            continue
        name = names.get(left, left) if left.startswith("#") else left
        found[name] = values[right]
    return found


def query_partition(params: Mapping[str, Any], shape: TableShape) -> tuple[str | None, str | None]:
    """The global index a Query reads (None: the table or a local index) and the partition
    its key condition names (None when it names none the engine can find)."""
    index = params.get("IndexName")
    gsi = shape.global_indexes.get(index) if isinstance(index, str) else None
    attributes = gsi.partition if gsi is not None else (shape.partition,)
    expression = params.get("KeyConditionExpression")
    if isinstance(expression, str):
        found = equalities(
            expression,
            params.get("ExpressionAttributeNames") or {},
            params.get("ExpressionAttributeValues") or {},
        )
    else:
        found = {
            name: (condition.get("AttributeValueList") or [None])[0]
            for name, condition in (params.get("KeyConditions") or {}).items()
            if condition.get("ComparisonOperator") == "EQ"
        }
    if any(found.get(name) is None for name in attributes):
        return (gsi.name if gsi else None), None
    return (gsi.name if gsi else None), partition_id(tuple(found[n] for n in attributes))
