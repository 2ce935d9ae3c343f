"""None is absence, at every depth: what a stored map lacks that reads back as None.

lsiorm stores no None in a field: not in an entity's own fields and not in a field of a nested
model, dataclass or TypedDict, at any depth (pydantic's ``exclude_none``). A None that is an
element of a list or a value of a ``dict[str, ...]`` is stored as NULL, since the position or
the key is part of the value. Reading an item back, a field that allows None and whose
attribute is absent must then be None, even where its default is something else or it has
none. `nested_fill` builds, once per annotation, the function that puts those None back into
a decoded value, so that pydantic validates what was written; a stored NULL reads as None as
well. The entity's own fields are filled by `EntityMeta.absent_is_none`.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Mapping, MutableMapping, MutableSequence, Sequence
from functools import partial
from typing import Any, Union

from pydantic import BaseModel, TypeAdapter
from typing_extensions import is_typeddict

from lsiorm._model.field_types import allows_none, bare_type, defaults_to_none


def stored_python(adapter: TypeAdapter[Any], value: Any) -> Any:
    """A valid value as lsiorm stores it: aliases as names, no None in a record at any depth."""
    return adapter.dump_python(value, mode="python", by_alias=True, exclude_none=True)


#: Puts the None of absent attributes back into a decoded value; returns the value.
Fill = Callable[[Any], Any]

_NONE_TYPE: Any = type(None)


def nested_fill(annotation: Any) -> Fill | None:
    """The fill of a field's decoded value, or None when nothing inside it can be absent.

    Values of another shape than the annotation's (a NULL, a malformed item) are left as they
    are, for validation to judge.
    """
    return _fill(annotation, {})


#: Per model class being built: a cell holding its fill (for models that refer to themselves).
_Building = dict[type, list[Fill | None]]


def _fill(annotation: Any, building: _Building) -> Fill | None:
    inner = bare_type(annotation)
    if isinstance(inner, type) and _fields_of(inner) is not None:
        return _record_fill(inner, building)
    origin = typing.get_origin(inner)
    args = typing.get_args(inner)
    if origin is Union or origin is types.UnionType:
        # Only where one alternative can hold absent None: with two, which one a map is read
        # as is pydantic's choice, and filling one's fields could spoil the other.
        fills = [f for a in args if a is not _NONE_TYPE and (f := _fill(a, building)) is not None]
        return fills[0] if len(fills) == 1 else None
    if origin in (list, tuple, set, frozenset, Sequence, MutableSequence):
        if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
            return _positions_fill([_fill(a, building) for a in args])
        element = _fill(args[0], building) if args else None
        return None if element is None else _elements_fill(element)
    if origin in (dict, Mapping, MutableMapping) and len(args) == 2:
        value = _fill(args[1], building)
        return None if value is None else _values_fill(value)
    return None


def _fields_of(cls: type) -> list[tuple[str, Any, bool]] | None:
    """A record type's fields as stored: (key, annotation, whether absence must read as None).

    None for a type that is no pydantic model, dataclass or TypedDict.
    """
    if issubclass(cls, BaseModel):
        return [
            (info.alias or name, info.annotation, not defaults_to_none(info))
            for name, info in cls.model_fields.items()
        ]
    pydantic_fields = getattr(cls, "__pydantic_fields__", None)
    if dataclasses.is_dataclass(cls) and isinstance(pydantic_fields, dict):
        return [
            (info.alias or name, info.annotation, not defaults_to_none(info))
            for name, info in pydantic_fields.items()
        ]
    if dataclasses.is_dataclass(cls):
        hints = typing.get_type_hints(cls)
        return [
            (f.name, hints.get(f.name, Any), f.default is not None)
            for f in dataclasses.fields(cls)
            if f.init
        ]
    if is_typeddict(cls):
        hints = typing.get_type_hints(cls)
        required = getattr(cls, "__required_keys__", frozenset(hints))
        return [(key, hint, True) for key, hint in hints.items() if key in required]
    return None


def _record_fill(cls: type, building: _Building) -> Fill | None:
    known = building.get(cls)
    if known is not None:  # a model inside itself: its fill is looked up when it runs
        return partial(_later, known)
    cell: list[Fill | None] = [None]
    building[cls] = cell
    fields = _fields_of(cls) or []
    nones = tuple(key for key, hint, needs in fields if needs and allows_none(_bare_none(hint)))
    inner = tuple(
        (key, each) for key, hint, _ in fields if (each := _fill(hint, building)) is not None
    )
    if not nones and not inner:
        return None

    def fill(value: Any) -> Any:
        if type(value) is not dict:
            return value
        for key in nones:
            if key not in value:
                value[key] = None
        for key, each in inner:
            if key in value:
                value[key] = each(value[key])
        return value

    cell[0] = fill
    return fill


def _later(cell: list[Fill | None], value: Any) -> Any:
    fill = cell[0]
    return value if fill is None else fill(value)


def _bare_none(annotation: Any) -> Any:
    """An annotation without ``Annotated``, so that ``allows_none`` sees its Optional."""
    while typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    return annotation


def _elements_fill(element: Fill) -> Fill:
    def fill(value: Any) -> Any:
        if type(value) is list:
            return [element(v) for v in value]
        return value

    return fill


def _positions_fill(fills: list[Fill | None]) -> Fill | None:
    if all(f is None for f in fills):
        return None

    def fill(value: Any) -> Any:
        if type(value) is not list or len(value) != len(fills):
            return value
        return [v if f is None else f(v) for f, v in zip(fills, value, strict=True)]

    return fill


def _values_fill(each: Fill) -> Fill:
    def fill(value: Any) -> Any:
        if type(value) is dict:
            for key, v in value.items():
                value[key] = each(v)
        return value

    return fill
