"""Writes that bypass lsiorm, as another writer of the same table makes them."""

from __future__ import annotations

from typing import Any

from lsiorm import Session

Wire = dict[str, Any]


def set_attributes(session: Session, table_name: str, key: Wire, values: dict[str, Wire]) -> None:
    """Set attributes (name: wire value) of one item with a raw UpdateItem."""
    names = {f"#a{i}": name for i, name in enumerate(values)}
    assignments = ", ".join(f"{name} = :a{i}" for i, name in enumerate(names))
    session.call(
        "UpdateItem",
        {
            "TableName": table_name,
            "Key": key,
            "UpdateExpression": f"SET {assignments}",
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": {f":a{i}": v for i, v in enumerate(values.values())},
        },
    )


def doc_key(n: int, *, users: int = 3) -> Wire:
    """The wire key of document ``n`` of the key jobs' table (``support.models.declare_doc``),
    which belongs to user ``u{n % users}``."""
    return {"PK": {"S": f"USER#u{n % users}"}, "SK": {"S": f"DOC#{n:04d}"}}
