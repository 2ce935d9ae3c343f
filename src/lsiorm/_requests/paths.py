"""Document paths into an entity: ``"address.city"``, ``"lines[2].qty"``, ``"labels.colour"``.

A path names a field of the model, then map keys (fields of a nested model, or keys of a
``dict[str, ...]``) and list positions. It is resolved against the model's types, so the value
written at the end of it is validated by the type declared there, and every name becomes the
attribute name that is stored (a nested model's field alias, when it has one).
"""

from __future__ import annotations

import re
import typing
from collections.abc import Mapping, MutableMapping, MutableSequence, MutableSet, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache
from typing import Any, Final

from pydantic import BaseModel, TypeAdapter

from lsiorm._model.absence import stored_python
from lsiorm._model.entity import Entity
from lsiorm._model.entity_meta import EntityMeta
from lsiorm._model.field_types import allows_none, bare_type
from lsiorm._model.number_fit import number_check
from lsiorm._model.wire import TextError, invalid_text, to_wire, valid_text
from lsiorm.errors import ValidationError

#: One step below the field: a map key (str) or a list position (int).
Step = str | int

#: DynamoDB's limit on the nesting of one document path.
MAX_PATH_DEPTH: Final = 32

_STEP = re.compile(r"\.([^.\[\]]+)|\[(\d+)\]")
_ROOT = re.compile(r"[^.\[\]]+")


@dataclass(frozen=True)
class Path:
    """A resolved document path: the field it starts at and the stored steps below it."""

    text: str
    field: str
    #: The stored attribute of the field, then each stored map key or list position.
    stored: tuple[Step, ...]
    #: The type declared at the end of the path (``Any`` when a map or list is untyped).
    annotation: Any
    #: True when the path ends at a required field of a nested model (it cannot be removed).
    required: bool = False
    #: True when the path ends at a field of a nested model, where None is stored as absence
    #: (a map key or a list position holds a stored NULL instead).
    in_model: bool = False

    @property
    def nested(self) -> bool:
        """True when the path goes below the field itself."""
        return len(self.stored) > 1

    def encode(self, meta: EntityMeta[Entity], value: Any) -> Any:
        """Validate a value by the type at the end of the path; return its wire form."""
        if not self.nested:
            valid = meta.validate_field(self.field, value)
            return self.to_wire(meta, meta.stored_value(self.field, valid))
        adapter = _adapter(self.annotation)
        numbers = number_check(self.annotation)
        if numbers is not None:
            numbers(value, f"{meta.cls.__name__}.{self.text}")  # pydantic would round it
        try:
            valid = adapter.validate_python(value)
        except Exception as exc:  # pydantic.ValidationError, with its own message
            raise ValidationError(
                "field.invalid",
                f"Value {value!r} is not valid at {meta.cls.__name__}.{self.text}: {exc}",
            ) from exc
        return self.to_wire(meta, stored_python(adapter, valid))

    def to_wire(self, meta: EntityMeta[Entity], value: Any) -> Any:
        """Return the wire form of a value written at this path; text UTF-8 cannot encode is
        refused naming the path (``item.invalid-unicode``)."""
        try:
            return to_wire(value)
        except TextError as error:
            where = f"{meta.cls.__name__}.{self.text}"
            raise invalid_text(where, value, error, table=meta.table.name) from error


def overlaps(a: tuple[Step, ...], b: tuple[Step, ...]) -> bool:
    """True when one stored path is the other or lies inside it (DynamoDB refuses both)."""
    n = min(len(a), len(b))
    return a[:n] == b[:n]


def render(stored: tuple[Step, ...], name: typing.Callable[[str], str]) -> str:
    """Return the expression text of a stored path, with names as placeholders."""
    out = [name(str(stored[0]))]
    for step in stored[1:]:
        out.append(f"[{step}]" if isinstance(step, int) else f".{name(step)}")
    return "".join(out)


def quoted(stored: tuple[Step, ...]) -> str:
    """Return a stored path as messages show it, quoted: ``'lines[2].qty'``."""
    return repr(render(stored, str))


def resolve(meta: EntityMeta[Entity], text: str) -> Path:
    """Return the path ``text`` resolved against an entity's model, or raise why it is not one."""
    cls_name = meta.cls.__name__
    root = _ROOT.match(text)
    if root is None:
        raise _syntax(cls_name, text)
    field = root.group(0)
    meta.check_field(field)  # field.unknown, naming the fields
    steps: list[Step] = [meta.attributes[field]]
    annotation: Any = meta.cls.model_fields[field].rebuild_annotation()
    pos = root.end()
    required = in_model = False
    while pos < len(text):
        match = _STEP.match(text, pos)
        if match is None:
            raise _syntax(cls_name, text)
        key, index = match.groups()
        where = f"{cls_name}.{text[:pos]}"
        if index is not None:
            annotation = _element(annotation, where, text)
            steps.append(int(index))
            required = in_model = False
        else:
            stored, annotation, required, in_model = _member(annotation, key, where, text)
            if not stored.isascii():
                try:
                    valid_text(stored)
                except TextError as error:
                    where = f"Path {text!r} into {cls_name}"
                    raise invalid_text(where, stored, error, table=meta.table.name) from error
            steps.append(stored)
        pos = match.end()
    if len(steps) > MAX_PATH_DEPTH:
        raise ValidationError(
            "update.path-too-deep",
            f"Path {text!r} into {cls_name} has {len(steps)} levels; DynamoDB allows at most "
            f"{MAX_PATH_DEPTH}. Set an outer part whole.",
        )
    return Path(text, field, tuple(steps), annotation, required, in_model)


def _syntax(cls_name: str, text: str) -> ValidationError:
    return ValidationError(
        "update.path-syntax",
        f"{text!r} is not a path into {cls_name}: write a field name, then .name for a field "
        "of a nested model or a key of a map, and [n] for a list position, as in "
        "'address.city' or 'lines[0].qty'. A map key holding '.', '[' or ']' cannot be named "
        "in a path: set the whole map instead.",
    )


def _member(annotation: Any, key: str, where: str, text: str) -> tuple[str, Any, bool, bool]:
    """Return the stored name of a map member, its type, whether a model requires it, and
    whether it is a field of a model."""
    inner = bare_type(annotation)
    if inner is Any:
        return key, Any, False, False
    if isinstance(inner, type) and issubclass(inner, BaseModel):
        info = inner.model_fields.get(key)
        if info is None:
            raise ValidationError(
                "field.unknown",
                f"{where} is of the model {inner.__name__}, which has no field {key!r} (fields: "
                f"{', '.join(inner.model_fields)}); path {text!r}.",
            )
        required = info.is_required() and not allows_none(info.annotation)
        return info.alias or key, info.rebuild_annotation(), required, True
    origin = typing.get_origin(inner) or inner
    if origin in (dict, Mapping, MutableMapping):
        args = typing.get_args(inner)
        if args and bare_type(args[0]) is not str:
            raise ValidationError(
                "update.path-not-a-map",
                f"{where} is a map with {args[0]!r} keys; a path names text keys only "
                f"(path {text!r}). Set the whole map instead.",
            )
        return key, (args[1] if len(args) == 2 else Any), False, False
    raise ValidationError(
        "update.path-not-a-map",
        f"{where} is {_describe(inner)}, not a nested model or a map, so {key!r} cannot be "
        f"looked up in it (path {text!r}).",
    )


def _element(annotation: Any, where: str, text: str) -> Any:
    inner = bare_type(annotation)
    if inner is Any:
        return Any
    origin = typing.get_origin(inner) or inner
    if origin in (list, Sequence, MutableSequence):
        args = typing.get_args(inner)
        return args[0] if args else Any
    raise ValidationError(
        "update.path-not-a-list",
        f"{where} is {_describe(inner)}, not a list, so it has no positions (path {text!r}).",
    )


def _describe(annotation: Any) -> str:
    return getattr(annotation, "__name__", None) or repr(annotation)


@lru_cache(maxsize=512)
def _adapter(annotation: Any) -> TypeAdapter[Any]:
    return TypeAdapter(annotation)


def kind_of(annotation: Any) -> str:
    """Return 'list', 'set', 'number', 'any' or 'other' for the type at the end of a path."""
    inner = bare_type(annotation)
    if inner is Any:
        return "any"
    origin = typing.get_origin(inner) or inner
    if origin in (list, Sequence, MutableSequence, tuple):
        return "list"
    if origin in (set, frozenset, AbstractSet, MutableSet):
        return "set"
    if origin is bool:
        return "other"
    if origin in (int, float, Decimal):
        return "number"
    return "other"
