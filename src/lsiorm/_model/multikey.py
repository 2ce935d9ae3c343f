"""Multi-attribute GSI keys: how an entity binds each key attribute of such an index to a field.

A multi-attribute global index (a `GlobalIndex` whose keys are lists) indexes items by the
values of up to four partition and four sort attributes, each natively typed (S, N or B), with
no key text to encode or parse. An entity binds every such attribute to one of its fields:

* a field stored under the attribute's name is the key attribute itself: nothing is derived;
* otherwise the entity gives the single-field template ``"{field}"`` and lsiorm writes a copy
  of the field's value: text (str, str-valued enums, Literal of str) as it is, numbers as N,
  bytes as B, and dates, datetimes and UUIDs as their fixed-width key text, which sorts as the
  values do.

What a field stores must be the attribute's declared type (``key.attribute-type``). An item that
lacks any key attribute of the index (a field of it is None) is not in the index.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping
from datetime import date
from decimal import Decimal
from enum import Enum
from typing import Any, Final, Literal, TypeGuard
from uuid import UUID

import pydantic

from lsiorm._model.codec import KeyCodec
from lsiorm._model.encoding import codec_for
from lsiorm._model.entity_meta import EntityMeta, EntityModel, meta_of
from lsiorm._model.field_types import bare_type, is_epoch_field
from lsiorm._model.indexes import GlobalIndex, KeyType
from lsiorm._model.schema import Table
from lsiorm._model.template import FieldSlot, KeyTemplate, parse_template
from lsiorm._model.wire import to_wire
from lsiorm.errors import DeclarationError

__all__ = [
    "NativeTextCodec",
    "bind_multi_key_template",
    "binds_index",
    "check_shared_multi_key",
    "holds_text",
    "is_multi_key",
    "key_field",
    "key_wire",
    "multi_key_indexes",
    "stored_key_codecs",
    "stored_key_fields",
]

# Pydantic's constrained dates and datetimes: stored as ISO text, like date and datetime.
_PYDANTIC_TIMES: Final = (
    pydantic.AwareDatetime,
    pydantic.PastDatetime,
    pydantic.FutureDatetime,
    pydantic.PastDate,
    pydantic.FutureDate,
)
_NATIVE_TYPES: Final = (
    "str, str-valued Enum or Literal of str, date, datetime or UUID for S; int, float or "
    "Decimal for N; bytes for B"
)


def is_multi_key(index: object) -> TypeGuard[GlobalIndex]:
    """Whether ``index`` is a global index with a multi-attribute key."""
    return isinstance(index, GlobalIndex) and index.multi_attribute


def multi_key_indexes(table: Table) -> tuple[GlobalIndex, ...]:
    """The table's multi-attribute global indexes, in declared order."""
    return tuple(g for g in table.global_indexes if g.multi_attribute)


class NativeTextCodec(KeyCodec):
    """Text as it is: a str, or the value of a str-valued enum member; no escape, no terminator.

    Only a multi-attribute index key holds such text: it is a whole attribute, so no other key
    text follows it and DynamoDB compares it as the string it is.
    """

    prefix_free = False
    spec = ""

    def __init__(self, enum_type: type[Enum] | None = None, *, field_name: str = "value") -> None:
        self.enum_type = enum_type
        self.python_type = enum_type or str
        self.field_name = field_name

    def encode(self, value: Any) -> str:
        """Return the text itself (an enum member's value)."""
        if self.enum_type is not None:
            if not isinstance(value, self.enum_type):
                raise self.type_error(value, f"a {self.enum_type.__name__} member")
            value = value.value
        if not isinstance(value, str):
            raise self.type_error(value, "a str")
        return str.__str__(value)

    def validate_prefix(self, prefix: str) -> str:
        """Return the prefix itself: the stored text begins with it."""
        if not isinstance(prefix, str):
            raise self.type_error(prefix, "a str prefix")
        return str.__str__(prefix)

    def _parse(self, text: str) -> Any:
        return text if self.enum_type is None else self.enum_type(text)

    def __repr__(self) -> str:
        shown = self.enum_type.__name__ if self.enum_type is not None else "str"
        return f"NativeTextCodec({shown})"


def native_type(annotation: Any, metadata: typing.Sequence[Any] = ()) -> KeyType | None:
    """Return the DynamoDB type a field's values are stored as, when a key can hold them."""
    if is_epoch_field(annotation, metadata):
        return "N"
    base = bare_type(annotation)
    if typing.get_origin(base) is Literal:
        values = [v for v in typing.get_args(base) if v is not None]
        return "S" if values and all(type(v) is str for v in values) else None
    if base in _PYDANTIC_TIMES:
        return "S"
    if not isinstance(base, type) or issubclass(base, bool):
        return None
    if issubclass(base, Enum):
        return "S" if all(isinstance(m.value, str) for m in base) else None
    if issubclass(base, (int, float, Decimal)):
        return "N"
    if issubclass(base, bytes):
        return "B"
    if issubclass(base, (str, date, UUID)):
        return "S"
    return None


def _is_text(annotation: Any) -> bool:
    """Whether a field's values are text: str, a str-valued enum or a Literal of str."""
    base = bare_type(annotation)
    if typing.get_origin(base) is Literal:
        return True  # of str only, when a key binds it (see native_type)
    return isinstance(base, type) and issubclass(base, (str, Enum)) and not issubclass(base, bool)


def _text_codec(cls: type[EntityModel], name: str) -> KeyCodec:
    """The codec of an S copy: text as it is, or a date, datetime or UUID's fixed-width text."""
    info = cls.model_fields[name]
    base = bare_type(info.annotation)
    label = f"{cls.__name__}.{name}"
    if not _is_text(info.annotation):
        return codec_for(info.annotation, metadata=info.metadata, field_name=label)
    enum = base if isinstance(base, type) and issubclass(base, Enum) else None
    return NativeTextCodec(enum, field_name=label)


def _attribute_type_error(
    cls: type[EntityModel], name: str, attr: str, declared: str, stored: KeyType | None
) -> DeclarationError:
    what = f"stores {stored} values" if stored else "has no native key type"
    return DeclarationError(
        "key.attribute-type",
        f"{cls.__name__}.{name} {what}, but {attr!r} is a {declared} key attribute of a "
        f"multi-attribute index; a field bound to it must be of a type stored as {declared} "
        f"({_NATIVE_TYPES}).",
    )


def bind_multi_key_template(
    cls: type[EntityModel], attr: str, attr_type: str, source: str
) -> KeyTemplate:
    """Return the template that copies one field into a multi-attribute index key attribute."""
    fields = cls.model_fields
    segments = parse_template(source, attribute=attr)
    slot = segments[0] if len(segments) == 1 else None
    if not isinstance(slot, FieldSlot) or slot.spec:
        raise DeclarationError(
            "template.direct-key",
            f"{cls.__name__}: {attr!r} is a key attribute of a multi-attribute index, which holds "
            f"one field's value as it is, so its template must be a single field with no literal "
            f"text or format, like '{{status}}'; got {source!r}.",
        )
    if slot.field not in fields:
        raise DeclarationError(
            "template.unknown-field",
            f"{cls.__name__}: template {source!r} for {attr!r} uses {{{slot.field}}}, which is "
            f"not a field (fields: {', '.join(fields)}).",
        )
    info = fields[slot.field]
    stored = native_type(info.annotation, info.metadata)
    if stored != attr_type:
        raise _attribute_type_error(cls, slot.field, attr, attr_type, stored)
    if attr_type != "S":
        if is_epoch_field(info.annotation, info.metadata):
            raise DeclarationError(
                "template.direct-key",
                f"{cls.__name__}.{slot.field} is stored as epoch seconds; a copy of it cannot be "
                f"derived into {attr!r}, so store the field itself under that name (alias it "
                f"{attr!r}).",
            )
        return KeyTemplate(attr, attr_type, source, (slot,))
    codec = _text_codec(cls, slot.field)
    return KeyTemplate(attr, attr_type, source, (FieldSlot(slot.field, "", codec),))


def stored_key_fields(
    cls: type[EntityModel], table: Table, templates: Mapping[str, KeyTemplate]
) -> dict[str, str]:
    """Return, per multi-attribute key attribute, the field stored under its name.

    Such a field is the key attribute itself. Refuses a template given for it too, a field of
    another type than the attribute's, and one field bound to two attributes of one index.
    """
    by_attribute = {info.alias or name: name for name, info in cls.model_fields.items()}
    types = table.key_attributes
    out: dict[str, str] = {}
    for attr in sorted(table.multi_key_attributes):
        name = by_attribute.get(attr)
        if name is None:
            continue
        if attr in templates:
            raise DeclarationError(
                "template.key-attribute-is-field",
                f"{cls.__name__}.{name} is stored as {attr!r}, so it is that key attribute "
                f"itself; drop the template {templates[attr].source!r} given for it.",
            )
        info = cls.model_fields[name]
        stored = native_type(info.annotation, info.metadata)
        if stored != types[attr]:
            raise _attribute_type_error(cls, name, attr, types[attr], stored)
        out[attr] = name
    for gsi in multi_key_indexes(table):
        bound = [
            f for a in table.index_key_names(gsi) if (f := _field_of(templates, out, a)) is not None
        ]
        repeated = sorted({f for f in bound if bound.count(f) > 1})
        if repeated:
            raise DeclarationError(
                "template.repeated-field",
                f"{cls.__name__} binds {', '.join(repeated)} to more than one key attribute of "
                f"index {gsi.name!r}; each key attribute of an index needs a field of its own.",
            )
    return out


def _field_of(
    templates: Mapping[str, KeyTemplate], stored: Mapping[str, str], attr: str
) -> str | None:
    tpl = templates.get(attr)
    return tpl.fields[0] if tpl is not None else stored.get(attr)


def key_field(meta: EntityMeta[EntityModel], attr: str) -> str | None:
    """Return the field bound to a multi-attribute key attribute (None: the entity binds none)."""
    return _field_of(meta.templates, meta.stored_keys, attr)


def holds_text(meta: EntityMeta[EntityModel], attr: str) -> bool:
    """Whether a multi-attribute key attribute holds an entity's text as it is (begins_with
    applies), rather than a number, bytes, or a date, datetime or UUID's key text."""
    tpl = meta.templates.get(attr)
    if tpl is not None:
        return bool(tpl.slots) and isinstance(tpl.slots[0].codec, NativeTextCodec)
    field = meta.stored_keys.get(attr)
    return field is not None and _is_text(meta.cls.model_fields[field].annotation)


def binds_index(meta: EntityMeta[EntityModel], index: GlobalIndex) -> bool:
    """Whether an entity binds every key attribute of a multi-attribute index (its items can be
    in it)."""
    return all(key_field(meta, a) is not None for a in meta.table.index_key_names(index))


def check_shared_multi_key(meta: EntityMeta[EntityModel]) -> None:
    """Refuse two entity types in one multi-attribute index that cannot be told apart there.

    Their items share key values freely (no namespace keeps them apart), so a query of one
    type reads the other's items too; a filter on the type attribute drops them, which needs
    the index to project it.
    """
    table = meta.table
    for gsi in multi_key_indexes(table):
        projected = table.projected_attributes(gsi)
        if projected is None or table.type_attribute in projected or not binds_index(meta, gsi):
            continue
        for other_cls in table.entities.values():
            other = meta_of(typing.cast("type[EntityModel]", other_cls))
            if other.cls is not meta.cls and binds_index(other, gsi):
                raise DeclarationError(
                    "template.namespace-overlap",
                    f"{meta.cls.__name__} and {other.cls.__name__} both bind every key "
                    f"attribute of multi-attribute index {gsi.name!r}, so a query of one would "
                    f"read the other's items, and the index does not project the type attribute "
                    f"{table.type_attribute!r} to filter them out; project "
                    f"{table.type_attribute!r} (Projection.include({table.type_attribute!r}, "
                    "...)) or bind the index in one of them only.",
                )


def stored_key_codecs(
    cls: type[EntityModel], table: Table, stored: Mapping[str, str]
) -> dict[str, KeyCodec]:
    """The codecs of fields stored as a string key attribute that are not text (a date,
    datetime or UUID): they are stored as that text (a `KeyFormat` on the field says which)."""
    types = table.key_attributes
    return {
        name: _text_codec(cls, name)
        for attr, name in stored.items()
        if types[attr] == "S" and not _is_text(cls.model_fields[name].annotation)
    }


def key_wire(meta: EntityMeta[EntityModel], attr: str, value: Any) -> Any:
    """Return the wire value of a multi-attribute key attribute for a validated field value."""
    tpl = meta.templates.get(attr)
    if tpl is None:
        field = meta.stored_keys[attr]
        codec = meta.stored_codecs.get(field)
        if codec is not None:
            return to_wire(codec.encode(value))
        dumped = meta.adapter(field).dump_python(value, mode="python")
        return to_wire(dumped)
    return to_wire(tpl.render({tpl.fields[0]: value}))
