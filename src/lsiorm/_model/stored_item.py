"""A stored item that does not fit its entity: the typed error a read raises for it.

Items written by another tool, by hand or by an older declaration may hold values the model
refuses (a number where a string is declared, a required field missing). Pydantic says which
fields; the read raises lsiorm's `ValidationError` (rule ``item.invalid``) that also names the
entity, the table and the item's key, with Pydantic's error kept as ``__cause__``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError as PydanticValidationError

from lsiorm._model.wire import from_wire
from lsiorm.errors import ValidationError

__all__ = ["invalid_stored_item"]

#: How many of Pydantic's errors the message lists (all stay on ``__cause__``).
_LISTED = 5


def invalid_stored_item(
    cls: type[Any],
    wire: Mapping[str, Any],
    error: PydanticValidationError,
    *,
    field: str | None = None,
) -> ValidationError:
    """The error for wire item ``wire`` that ``cls`` refused with Pydantic's ``error`` (raised
    validating the one ``field`` when given, else the whole model)."""
    meta = getattr(cls, "__lsiorm__", None)
    table = meta.table if meta is not None else None
    key: dict[str, Any] | None = None
    where = ""
    if table is not None:
        names = [k for k in table.index_key_attributes(None) if k is not None]
        key = {}
        for name in names:
            av = wire.get(name)
            if isinstance(av, Mapping):
                try:
                    key[name] = from_wire(av)
                except (ValueError, TypeError, KeyError):  # a malformed key: shown as stored
                    key[name] = dict(av)
        where = f" {key!r} of table {table.name!r}"
    problems = error.errors(include_url=False, include_input=False)
    first = (field,) if field is not None else ()
    listed = "; ".join(
        f"{'.'.join(str(part) for part in (*first, *p['loc'])) or '(item)'}: {p['msg']}"
        for p in problems[:_LISTED]
    )
    more = f" (and {len(problems) - _LISTED} more)" if len(problems) > _LISTED else ""
    return ValidationError(
        "item.invalid",
        f"The stored item{where} does not fit {cls.__name__}: {listed}{more}. It was written "
        "by something that does not follow the declaration; `lsiorm adopt` lists every such "
        "item.",
        table=table.name if table is not None else None,
        key=key,
    )
