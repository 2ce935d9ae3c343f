"""Key conditions sent as filters: the fallbacks no index answers.

With ``allow_filter_fallback()``, a ``where()`` condition that no index answers exactly is
read as a wider key range and filtered. DynamoDB's filters differ from key conditions in two
ways this module handles: a bool compares only with = and <>, and a BETWEEN with reversed
bounds is refused, so such a plan sends no request at all.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any

from lsiorm._conditions import Between, Compare, Condition, FieldCondition, Operator, Or
from lsiorm._model.entity import Entity
from lsiorm._model.entity_meta import EntityMeta
from lsiorm._query.keyrange import IndexFit, describe_ops

__all__ = ["empty_reason", "filter_conditions"]


def filter_conditions(
    meta: EntityMeta[Entity], name: str, ops: Sequence[Operator]
) -> list[Condition]:
    """Return a key condition as filter conditions DynamoDB accepts.

    DynamoDB compares bool values only with = and <>, so a range on a bool becomes the
    equalities it allows (a None value matches neither).
    """
    if not _is_bool(meta, name):
        return [FieldCondition(name, op) for op in ops]
    values = _bool_values(ops)
    equalities: list[Condition] = [FieldCondition(name, Compare("=", v)) for v in values]
    return [equalities[0] if len(equalities) == 1 else Or(tuple(equalities))]


def empty_reason(
    fits: Sequence[IndexFit], fallback: Mapping[str, Sequence[Operator]]
) -> str | None:
    """Return why the query provably matches nothing, from its key range or its fallbacks."""
    empty = next((f.empty for f in fits if f.empty is not None), None)
    if empty is None:
        empty = next((why for fit in fits if (why := _empty_filter(fit.meta, fallback))), None)
    if empty is None:
        empty = next((why for fit in fits if (why := _empty_bool(fit.meta, fallback))), None)
    return empty


def _is_bool(meta: EntityMeta[Entity], name: str) -> bool:
    annotation = meta.cls.model_fields[name].annotation
    return annotation is bool or (
        typing.get_origin(annotation) in (typing.Union, types.UnionType)
        and bool in typing.get_args(annotation)
    )


def _bool_values(ops: Sequence[Operator]) -> list[bool]:
    """The bool values that satisfy every operator (False < True, as in key order)."""
    out = []
    for value in (False, True):
        ok = True
        for op in ops:
            if isinstance(op, Between):
                ok = ok and op.low <= value <= op.high
            elif isinstance(op, Compare):
                ok = (
                    ok
                    and {
                        "=": value == op.value,
                        "<>": value != op.value,
                        "<": value < op.value,
                        "<=": value <= op.value,
                        ">": value > op.value,
                        ">=": value >= op.value,
                    }[op.op]
                )
        if ok:
            out.append(value)
    return out


def _empty_bool(meta: EntityMeta[Entity], fallback: Mapping[str, Sequence[Operator]]) -> str | None:
    for name, ops in fallback.items():
        if _is_bool(meta, name) and not _bool_values(ops):
            return f"{describe_ops(name, ops)} leaves no value"
    return None


def _empty_filter(
    meta: EntityMeta[Entity], fallback: Mapping[str, Sequence[Operator]]
) -> str | None:
    """Return why fallback conditions match nothing, if a between() has its bounds reversed.

    DynamoDB refuses such a BETWEEN in a filter, so the plan must not send it.
    """
    for name, ops in fallback.items():
        for op in ops:
            if isinstance(op, Between):
                low = _order_key(meta, name, meta.validate_field(name, op.low))
                high = _order_key(meta, name, meta.validate_field(name, op.high))
                if low > high:
                    return f"{describe_ops(name, [op])} leaves no value"
    return None


def _order_key(meta: EntityMeta[Entity], name: str, value: Any) -> Any:
    """Return a value comparable in key order: its key text when an S template encodes it in
    value order (plain text such as an unpadded number does not sort as its values do)."""
    for tpl in meta.templates.values():
        for slot in tpl.slots:
            codec = slot.codec
            if slot.field == name and codec is not None and codec.ordered and not tpl.is_direct:
                return codec.encode(value)
    return value
