"""What a field's annotation says: optional or not, its bare type, epoch seconds, plain values."""

from __future__ import annotations

import types
import typing
from collections.abc import Iterable
from datetime import date, datetime, time
from decimal import Decimal
from enum import Enum
from typing import Any, Final, Union
from uuid import UUID

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from lsiorm._model.epoch import is_epoch_seconds


def allows_none(annotation: Any) -> bool:
    """Return True when a field annotation admits None (``T | None``)."""
    origin = typing.get_origin(annotation)
    if origin is Union or origin is types.UnionType:
        return type(None) in typing.get_args(annotation)
    return annotation is None or annotation is type(None)


def strip_optional(annotation: Any) -> Any:
    """Return the one real member of ``T | None``; any other annotation as it is."""
    origin = typing.get_origin(annotation)
    if origin is Union or origin is types.UnionType:
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return args[0] if len(args) == 1 else annotation
    return annotation


def bare_type(annotation: Any) -> Any:
    """Strip Annotated and Optional, repeatedly; several real alternatives stay a Union."""
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation = typing.get_args(annotation)[0]
            continue
        if origin is Union or origin is types.UnionType:
            real = [a for a in typing.get_args(annotation) if a is not type(None)]
            if len(real) == 1:
                annotation = real[0]
                continue
        return annotation


def holds_text(annotation: Any) -> bool:
    """Whether a field's values are text as they are: str, a str-valued Enum, a Literal of str."""
    base = bare_type(annotation)
    if typing.get_origin(base) is typing.Literal:
        return all(isinstance(v, str) for v in typing.get_args(base))
    if not isinstance(base, type):
        return False
    if issubclass(base, Enum):
        return all(isinstance(m.value, str) for m in base)
    return issubclass(base, str)


def is_epoch_field(annotation: Any, metadata: Iterable[Any] = ()) -> bool:
    """Whether a field is `EpochSeconds`, possibly optional."""
    if is_epoch_seconds(metadata):
        return True
    base = strip_optional(annotation)
    return typing.get_origin(base) is typing.Annotated and is_epoch_seconds(
        typing.get_args(base)[1:]
    )


def defaults_to_none(info: FieldInfo) -> bool:
    """Whether a field has a plain default of None."""
    if info.is_required():
        return False
    if info.default_factory is not None:
        return False  # a factory may give anything; absence must still read as None
    return info.default is None


_PLAIN_TYPES: Final = frozenset(
    {str, int, float, bool, Decimal, bytes, datetime, date, time, UUID, type(None)}
)


def plain_model(cls: type[BaseModel]) -> bool:
    """True when ``model_dump(mode="python")`` returns each field's value as it is stored.

    Not so with serializers, computed or excluded fields, nested models or values typed ``Any``
    (which model_dump may convert); those classes go through model_dump.
    """
    decorators = cls.__pydantic_decorators__
    if decorators.field_serializers or decorators.model_serializers:
        return False
    if cls.model_computed_fields or cls.model_config.get("extra") == "allow":
        return False
    for info in cls.model_fields.values():
        if info.exclude or getattr(info, "exclude_if", None) is not None:
            return False
        if not all(plain_metadata(m) for m in info.metadata):
            return False
        if not _plain_annotation(info.annotation):
            return False
    return True


def plain_metadata(item: Any) -> bool:
    """Whether a field's metadata item leaves the value model_dump gives as it is stored.

    Serializers and anything that builds its own core schema may change it.
    """
    return not hasattr(item, "__get_pydantic_core_schema__") and type(item).__module__ != (
        "pydantic.functional_serializers"
    )


def _plain_annotation(annotation: Any) -> bool:
    if annotation in _PLAIN_TYPES or annotation is None:
        return True
    if isinstance(annotation, type):
        return issubclass(annotation, Enum) and not issubclass(annotation, BaseModel)
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return _plain_annotation(args[0]) and all(plain_metadata(m) for m in args[1:])
    if origin is Union or origin is types.UnionType:
        return all(_plain_annotation(a) for a in args)
    if origin is typing.Literal:
        return all(a is None or type(a) in (str, int, bool) for a in args)
    if origin in (list, set, frozenset):
        return len(args) == 1 and _plain_annotation(args[0])
    if origin is tuple:
        return bool(args) and all(a is Ellipsis or _plain_annotation(a) for a in args)
    if origin is dict:
        return len(args) == 2 and args[0] is str and _plain_annotation(args[1])
    return False
