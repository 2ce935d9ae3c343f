"""The parameters of the reads lsiorm makes for itself, on stored attributes.

A user's query is compiled from entity conditions (`lsiorm._query.compile`). lsiorm's own
reads name stored attributes and wire values instead: a collection read whole (the collection
audit, the item-collection proxy), a key job's scan of a table or a partition, narrowed to one
entity type and leaving out the partition of the jobs' ledger, the base items a query's
index rows are read back with, and one item read as it is now (a job's check of what its
write did). Each is built here, with the one condition compiler
(`lsiorm._conditions.compile_stored`), so the tests compare dictionaries.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal

from lsiorm._conditions import (
    BeginsWith,
    Condition,
    FieldCondition,
    Placeholders,
    any_of,
    compile_stored,
    cond,
)
from lsiorm._model.wire import AttributeValue

__all__ = ["consistent_get", "item_scan", "partition_query", "projection"]


def partition_query(
    table: str,
    partition_key: str,
    value: AttributeValue,
    *,
    sort_key: str | None = None,
    prefix: AttributeValue | None = None,
    consistent: bool = False,
) -> dict[str, Any]:
    """Query parameters for the items of one partition (``value`` of ``partition_key``); with
    ``prefix``, only those whose ``sort_key`` begins with it."""
    key: Condition = cond(partition_key) == value
    if prefix is not None:
        if sort_key is None:
            raise ValueError("a sort key prefix needs the sort key's name")
        key = key & FieldCondition(sort_key, BeginsWith(prefix))
    ph = Placeholders()
    params: dict[str, Any] = {
        "TableName": table,
        "KeyConditionExpression": compile_stored(key, ph),
    }
    if consistent:
        params["ConsistentRead"] = True
    return ph.into(params)


def item_scan(
    table: str,
    *,
    partition_key: str,
    partition: AttributeValue | None = None,
    type_attribute: str | None = None,
    type_name: str | None = None,
    skip: AttributeValue | None = None,
    consistent: bool = False,
) -> tuple[Literal["Query", "Scan"], dict[str, Any]]:
    """The operation and parameters of a key job's read: the whole table (a Scan; its segment is
    added per unit), or the one partition ``partition`` (a Query).

    ``type_attribute`` narrows the read to one entity type: the items whose type is
    ``type_name``, or, with ``type_name=None``, the items without a type (an untyped entity's;
    its keys tell them from other untyped types'). ``skip`` is a partition a filter must let
    through all the same (the jobs' ledger's, left out of the pages afterwards: DynamoDB counts
    an item a filter drops as read, and the job counts the ledger's apart).
    """
    ph = Placeholders()
    params: dict[str, Any] = {"TableName": table}
    operation: Literal["Query", "Scan"] = "Scan"
    if partition is not None:
        operation = "Query"
        params["KeyConditionExpression"] = compile_stored(cond(partition_key) == partition, ph)
    if type_attribute is not None:
        kept: Condition = (
            cond(type_attribute) == {"S": type_name}
            if type_name is not None
            else cond(type_attribute).not_exists()
        )
        if skip is not None and partition is None:
            kept = any_of(kept, cond(partition_key) == skip)
        params["FilterExpression"] = compile_stored(kept, ph)
    if consistent:
        params["ConsistentRead"] = True
    return operation, ph.into(params)


def projection(attributes: Iterable[str]) -> dict[str, Any]:
    """The ``ProjectionExpression`` (and its names) that reads these attributes (each once)."""
    ph = Placeholders()
    text = ", ".join(ph.name(a) for a in dict.fromkeys(attributes))
    return ph.into({"ProjectionExpression": text})


def consistent_get(table: str, key: Mapping[str, Any]) -> dict[str, Any]:
    """GetItem parameters that read the item at ``key`` (wire) as it is now: a strongly
    consistent read, which sees every write that succeeded before it."""
    return {"TableName": table, "Key": dict(key), "ConsistentRead": True}
