"""Entities: Pydantic models bound to a table through key templates."""

from __future__ import annotations

import base64
import json
import random
import types
import typing
import zlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, time, timezone
from decimal import Decimal
from enum import Enum
from functools import cached_property
from typing import Any, ClassVar, Final, TypeAlias, Union
from uuid import UUID

from pydantic import BaseModel, ConfigDict, TypeAdapter, model_validator
from pydantic import ValidationError as PydanticValidationError
from pydantic.fields import FieldInfo
from typing_extensions import Self

from lsiorm._model.encoding import (
    DatetimeCodec,
    IntCodec,
    KeyCodec,
    StrCodec,
    codec_for,
)
from lsiorm._model.epoch import is_epoch_seconds
from lsiorm._model.keyspace import intersection_witness
from lsiorm._model.schema import GlobalIndex, LocalIndex, Table
from lsiorm._model.template import FieldSlot, KeyTemplate, parse_template
from lsiorm._model.wire import (
    _INT_FAST_LIMIT,
    _SIZED,
    MAX_ITEM_BYTES,
    AttributeValue,
    _int_size,
    _number_from_text,
    _utf8_len,
    _value_size,
    from_wire,
    item_from_wire,
    item_to_wire,
    to_wire_sized,
)
from lsiorm.errors import (
    DeclarationError,
    IndexKeyTypeError,
    ItemTooLargeError,
    KeyEncodingError,
    ValidationError,
)

__all__ = [
    "Entity",
    "EntityMeta",
    "Shard",
    "decode_item",
    "encode_entity",
    "meta_of",
    "shard_of",
    "shard_value",
    "wire_item",
]


def allows_none(annotation: Any) -> bool:
    """Return True when a field annotation admits None (``T | None``)."""
    return _allows_none(annotation)


def _allows_none(annotation: Any) -> bool:
    origin = typing.get_origin(annotation)
    if origin is Union or origin is types.UnionType:
        return type(None) in typing.get_args(annotation)
    return annotation is None or annotation is type(None)


def _strip_optional(annotation: Any) -> Any:
    origin = typing.get_origin(annotation)
    if origin is Union or origin is types.UnionType:
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return args[0] if len(args) == 1 else annotation
    return annotation


@dataclass
class EntityMeta:
    """What lsiorm knows about one entity class: its table, type name and key templates."""

    cls: type[Entity]
    table: Table
    type_name: str
    templates: dict[str, KeyTemplate]
    version_field: str | None
    #: Index key attributes written but not yet ready for reads: the planner never picks them.
    pending: frozenset[str] = frozenset()
    #: Datetime fields lsiorm sets: when the item was first written, and last written.
    created_field: str | None = None
    updated_field: str | None = None
    _adapters: dict[str, TypeAdapter[Any]] = field(default_factory=dict)

    @property
    def partition_template(self) -> KeyTemplate:
        """The template of the table's partition key."""
        return self.templates[self.table.partition_key.name]

    @property
    def sort_template(self) -> KeyTemplate | None:
        """The template of the table's sort key, if the table has one."""
        sk = self.table.sort_key
        return self.templates[sk.name] if sk is not None else None

    @cached_property
    def primary_fields(self) -> frozenset[str]:
        """Fields that make up the primary key; changing one moves the item."""
        out = set(self.partition_template.fields)
        if self.sort_template is not None:
            out |= set(self.sort_template.fields)
        return frozenset(out)

    @cached_property
    def shard_fields(self) -> tuple[str, ...]:
        """Fields declared as write shards (``Annotated[int | None, Shard(n)]``)."""
        return tuple(n for n in self.cls.model_fields if shard_of(self, n) is not None)

    @cached_property
    def absent_is_none(self) -> tuple[str, ...]:
        """Fields whose missing attribute reads as None (None is stored as absence)."""
        return tuple(
            name
            for name, info in self.cls.model_fields.items()
            if _allows_none(info.annotation) and not _defaults_to_none(info)
        )

    @cached_property
    def key_fields(self) -> frozenset[str]:
        """Every field used by any key template."""
        return frozenset(f for t in self.templates.values() for f in t.fields)

    @cached_property
    def key_types(self) -> dict[str, str]:
        """Key attribute -> its declared type (S, N or B), for the table and its indexes."""
        return dict(self.table.key_attributes)

    @cached_property
    def attributes(self) -> dict[str, str]:
        """Field name -> stored attribute name (the field's alias when it has one)."""
        return {name: info.alias or name for name, info in self.cls.model_fields.items()}

    def adapter(self, name: str) -> TypeAdapter[Any]:
        """Return a validator for one field's declared type."""
        ad = self._adapters.get(name)
        if ad is None:
            info = self.cls.model_fields[name]
            # rebuild_annotation keeps constraints such as Field(ge=0) and KeyFormat.
            ad = TypeAdapter(info.rebuild_annotation())
            self._adapters[name] = ad
        return ad

    def check_field(self, name: str) -> None:
        """Raise ``field.unknown`` unless ``name`` is a field of the model."""
        if name not in self.cls.model_fields:
            raise ValidationError(
                "field.unknown",
                f"{self.cls.__name__} has no field {name!r}; "
                f"fields are {', '.join(self.cls.model_fields)}.",
                table=self.table.name,
            )

    def validate_field(self, name: str, value: Any, *, strict: bool | None = None) -> Any:
        """Validate a value for one field, raising lsiorm's ValidationError on failure.

        Fields used by a key template are checked strictly by default (``strict=None``): a
        bool is not a number, text is not a number, and bytes are not text, though pydantic
        would convert them. The same item must not be found under a key it was not written
        with. ``strict=False`` keeps pydantic's conversions (for text typed on a command line).
        """
        self.check_field(name)
        if strict is None:
            strict = name in self.key_fields
        if strict:
            wrong = _strict_mismatch(self.cls.model_fields[name].annotation, value)
            if wrong is not None:
                raise ValidationError(
                    "key.value-type",
                    f"Value {value!r} ({type(value).__name__}) is not {wrong}, as "
                    f"{self.cls.__name__}.{name} needs; key fields are not converted.",
                    table=self.table.name,
                )
        try:
            return self.adapter(name).validate_python(value)
        except Exception as exc:  # pydantic.ValidationError, with its own message
            raise ValidationError(
                "field.invalid",
                f"Value {value!r} is not valid for {self.cls.__name__}.{name}: {exc}",
            ) from exc

    def key(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """Return the primary key attributes (python values) derived from field values."""
        out: dict[str, Any] = {}
        for tpl in (self.partition_template, self.sort_template):
            if tpl is None:
                continue
            missing = [f for f in tpl.fields if values.get(f) is None]
            if missing:
                raise ValidationError(
                    "key.missing-field",
                    f"{self.cls.__name__} key attribute {tpl.attribute!r} (template "
                    f"{tpl.source!r}) needs field(s) {', '.join(missing)}.",
                    table=self.table.name,
                )
            out[tpl.attribute] = _checked_key(self, tpl, tpl.render(values))
        return out

    def index_keys(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """Return the secondary-index key attributes whose template fields all have values."""
        out: dict[str, Any] = {}
        primary = {self.table.partition_key.name}
        if self.table.sort_key is not None:
            primary.add(self.table.sort_key.name)
        for attr, tpl in self.templates.items():
            if attr in primary:
                continue
            rendered = tpl.render(values)
            if rendered is not None:
                out[attr] = _checked_key(self, tpl, rendered)
        return out


def _strict_mismatch(annotation: Any, value: Any) -> str | None:
    """Return what a key field value should be when its Python type is the wrong kind."""
    if value is None:
        return None
    base = _strip_optional(annotation)
    if not isinstance(base, type) or issubclass(base, (bool, Enum)):
        return None
    if issubclass(base, (int, float, Decimal)):
        if isinstance(value, bool) or not isinstance(value, (int, float, Decimal)):
            return "a number"
    elif issubclass(base, str):
        if not isinstance(value, str):
            return "a str"
    elif issubclass(base, bytes) and not isinstance(value, (bytes, bytearray, memoryview)):
        return "bytes"
    return None


#: DynamoDB's limits on key attribute values, in bytes.
MAX_PARTITION_KEY_BYTES: Final = 2048
MAX_SORT_KEY_BYTES: Final = 1024


def _key_limit(table: Table, attribute: str) -> tuple[int, str]:
    """Return the size limit of a key attribute: a sort key anywhere gets the smaller one."""
    sorts = {lsi.sort_key.name for lsi in table.local_indexes}
    sorts |= {g.sort_key.name for g in table.global_indexes if g.sort_key is not None}
    if table.sort_key is not None:
        sorts.add(table.sort_key.name)
    if attribute in sorts:
        return MAX_SORT_KEY_BYTES, "key.sort-max-1024-bytes"
    return MAX_PARTITION_KEY_BYTES, "key.partition-max-2048-bytes"


def checked_key(meta: EntityMeta, tpl: KeyTemplate, value: Any) -> Any:
    """Return a rendered key attribute value, checked against DynamoDB's key rules."""
    return _checked_key(meta, tpl, value)


def _checked_key(meta: EntityMeta, tpl: KeyTemplate, value: Any) -> Any:
    declared = meta.key_types[tpl.attribute]
    ok = (
        (declared == "S" and isinstance(value, str))
        or (
            declared == "N"
            and isinstance(value, (int, float, Decimal))
            and not isinstance(value, bool)
        )
        or (declared == "B" and isinstance(value, (bytes, bytearray)))
    )
    if not ok:
        raise IndexKeyTypeError(
            "key.attribute-type",
            f"Key attribute {tpl.attribute!r} is declared as {declared} but {meta.cls.__name__} "
            f"would write a {type(value).__name__} ({value!r}); DynamoDB rejects the write.",
            table=meta.table.name,
        )
    if declared == "S" and value == "":
        raise ValidationError(
            "key.empty",
            f"Key attribute {tpl.attribute!r} of {meta.cls.__name__} would be an empty string, "
            "which DynamoDB does not accept for a key.",
            table=meta.table.name,
        )
    if declared == "B" and len(value) == 0:
        raise ValidationError(
            "key.empty-binary",
            f"Key attribute {tpl.attribute!r} of {meta.cls.__name__} would be empty bytes, "
            "which DynamoDB does not accept for a key.",
            table=meta.table.name,
        )
    if declared != "N":
        size = len(value.encode("utf-8")) if isinstance(value, str) else len(value)
        limit, rule = _key_limit(meta.table, tpl.attribute)
        if size > limit:
            raise KeyEncodingError(
                rule,
                f"Key attribute {tpl.attribute!r} of {meta.cls.__name__} would be {size} bytes; "
                f"DynamoDB allows at most {limit} bytes for this key.",
                table=meta.table.name,
            )
    return value


class Entity(BaseModel):
    """Base class of entities. Subclass it with ``table=`` and ``keys=`` to bind a model.

    ::

        class Thread(Entity, table=threads, keys={"ForumName": "{forum_name}",
                                                  "Subject": "{subject}",
                                                  "LastPostDateTime": "{last_post}"}):
            forum_name: str
            subject: str
            last_post: datetime | None = None

    ``type_name`` (default: the class name) is stored in the table's type attribute so that a
    partition holding several entity types decodes each item as its own class. ``version``
    names an int field used for optimistic locking. ``pending`` names index key attributes
    (slots) that writers derive but readers may not rely on yet, because items written before
    the slot was declared do not have it: the query planner never picks an index on a pending
    slot by itself (``using()`` still can). Remove the name once a backfill and an audit show
    nothing stale (see docs/migrations.md). ``created_at`` and ``updated_at`` name datetime
    fields that lsiorm sets on each put and update (see docs/writing.md#timestamps).
    """

    model_config = ConfigDict(extra="ignore", validate_by_name=True, validate_by_alias=True)

    __lsiorm__: ClassVar[EntityMeta | None] = None

    def __init_subclass__(
        cls,
        *,
        table: Table | None = None,
        keys: Mapping[str, str] | None = None,
        type_name: str | None = None,
        version: str | None = None,
        pending: Iterable[str] = (),
        created_at: str | None = None,
        updated_at: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init_subclass__(**kwargs)

    @classmethod
    def __pydantic_init_subclass__(
        cls,
        *,
        table: Table | None = None,
        keys: Mapping[str, str] | None = None,
        type_name: str | None = None,
        version: str | None = None,
        pending: Iterable[str] = (),
        created_at: str | None = None,
        updated_at: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        if table is None:
            if keys is not None:
                raise DeclarationError(
                    "entity.needs-table", f"{cls.__name__} gives keys= but no table=."
                )
            cls.__lsiorm__ = None
            return
        cls.__lsiorm__ = _bind(cls, table, dict(keys or {}), type_name or cls.__name__, version)
        cls.__lsiorm__.pending = _pending(cls.__lsiorm__, pending)
        cls.__lsiorm__.created_field = _timestamp_field(cls.__lsiorm__, "created_at", created_at)
        cls.__lsiorm__.updated_field = _timestamp_field(cls.__lsiorm__, "updated_at", updated_at)

    @model_validator(mode="after")
    def _fill_shards(self) -> Self:
        # A shard left out (None) is derived here, so the instance carries what is stored.
        meta = type(self).__lsiorm__
        if meta is not None:
            for name in meta.shard_fields:
                if getattr(self, name) is None:
                    values = {f: getattr(self, f) for f in meta.primary_fields}
                    self.__dict__[name] = shard_value(type(self), name, values)
        return self

    def to_item(self) -> dict[str, Any]:
        """Return the item as python values: fields, derived key attributes and the type."""
        return build_item(self)

    def to_wire(self) -> dict[str, Any]:
        """Return the item in DynamoDB wire format, checked against the 400 KB limit."""
        return wire_item(self)


# -- write sharding ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Shard:
    """Marks an int field as a write shard in 1..count: ``Annotated[int, Shard(10)]``.

    Put the field in a GSI partition template (``"STATUS#{status}#{shard:02d}"``); a query on
    that GSI then reads every shard and merges them in sort-key order. The value is derived from
    the item's primary key (a stable CRC-32), or drawn at random when ``random`` is True.
    """

    count: int
    random: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.count, bool) or not isinstance(self.count, int) or self.count < 1:
            raise DeclarationError(
                "shard.count",
                f"Shard(count) needs a whole number of at least 1, got {self.count!r}.",
            )


def shard_of(meta: EntityMeta, name: str) -> Shard | None:
    """Return the Shard marker of a field, or None if it is not a shard."""
    info = meta.cls.model_fields.get(name)
    if info is None:
        return None
    return next((m for m in info.metadata if isinstance(m, Shard)), None)


def shard_value(entity_cls: type[Entity], field_name: str, values: Mapping[str, Any]) -> int:
    """Return the shard (1..count) of an item with these field values.

    Deterministic shards hash the item's primary key with CRC-32, so the same item always lands
    on the same shard in every process; random shards ignore ``values``.
    """
    meta = meta_of(entity_cls)
    shard = shard_of(meta, field_name)
    if shard is None:
        raise DeclarationError(
            "shard.not-a-shard",
            f"{entity_cls.__name__}.{field_name} is not declared with Shard(...), so it has no "
            "shard value.",
        )
    if field_name in meta.primary_fields:
        raise DeclarationError(
            "shard.in-primary-key",
            f"{entity_cls.__name__}.{field_name} is a shard but also part of the primary key; a "
            "shard is derived from the primary key, so it cannot be part of it.",
        )
    if shard.random:
        return random.randint(1, shard.count)
    key = item_to_wire(meta.key({k: meta.validate_field(k, v) for k, v in values.items()}))
    text = json.dumps(key, sort_keys=True, default=json_default, ensure_ascii=True)
    return zlib.crc32(text.encode("ascii")) % shard.count + 1


def json_default(value: Any) -> Any:
    """Serialise bytes for ``json.dumps`` (a stable text for hashing keys and cursors)."""
    if isinstance(value, (bytes, bytearray)):
        return {"B64": base64.b64encode(bytes(value)).decode("ascii")}
    raise TypeError(f"cannot serialise {type(value).__name__}")


def meta_of(cls: type[Entity] | Entity) -> EntityMeta:
    """Return the metadata of a bound entity class or instance."""
    klass = cls if isinstance(cls, type) else type(cls)
    meta = klass.__lsiorm__
    if meta is None:
        raise ValidationError(
            "entity.unbound",
            f"{klass.__name__} is not bound to a table; declare it with table= and keys=.",
        )
    return meta


def _bind(
    cls: type[Entity], table: Table, keys: dict[str, str], type_name: str, version: str | None
) -> EntityMeta:
    fields = cls.model_fields
    key_attrs = table.key_attributes
    for fname, info in fields.items():
        name = info.alias or fname
        if name in key_attrs or name == table.type_attribute:
            raise DeclarationError(
                "entity.attribute-collision",
                f"{cls.__name__}.{fname} is stored as {name!r}, the name of a key attribute of "
                f"table {table.name!r}; key attributes are derived from templates, never set by "
                "hand. Rename the field.",
            )
    _check_ttl_field(cls, table)
    templates: dict[str, KeyTemplate] = {}
    for attr, source in keys.items():
        if attr not in key_attrs:
            raise DeclarationError(
                "template.unknown-attribute",
                f"{cls.__name__} gives a template for {attr!r}, which is not a key attribute of "
                f"table {table.name!r} (key attributes: {', '.join(sorted(key_attrs))}).",
            )
        templates[attr] = _bind_template(cls, attr, key_attrs[attr], source)
    for required in (table.partition_key, table.sort_key):
        if required is not None and required.name not in templates:
            raise DeclarationError(
                "entity.missing-primary-key",
                f"{cls.__name__} must give a template for {required.name!r}, a primary key "
                f"attribute of table {table.name!r}.",
            )
    for required in (table.partition_key, table.sort_key):
        if required is None:
            continue
        for fname in templates[required.name].fields:
            if _allows_none(fields[fname].annotation):
                raise DeclarationError(
                    "entity.optional-key-field",
                    f"{cls.__name__}.{fname} is part of the primary key ({required.name!r}) and "
                    "so cannot be optional.",
                )
    if version is not None:
        vinfo = fields.get(version)
        if vinfo is None or _strip_optional(vinfo.annotation) is not int:
            raise DeclarationError(
                "entity.version-field",
                f"{cls.__name__}: version={version!r} must name an int field of the model.",
            )
        if version in {f for t in templates.values() for f in t.fields}:
            raise DeclarationError(
                "entity.version-field", f"{cls.__name__}: the version field cannot be in a key."
            )
    if type_name in table.entities and table.entities[type_name] is not cls:
        raise DeclarationError(
            "entity.duplicate-type",
            f"Table {table.name!r} already has an entity of type {type_name!r}; "
            "give one of them another type_name.",
        )
    meta = EntityMeta(cls, table, type_name, templates, version)
    for name in meta.shard_fields:
        if name in meta.primary_fields:
            raise DeclarationError(
                "shard.in-primary-key",
                f"{cls.__name__}.{name} is a shard but also part of the primary key; a shard is "
                "derived from the primary key, so it cannot be part of it.",
            )
    _check_overlaps(meta)
    table.entities[type_name] = cls
    return meta


def _timestamp_field(meta: EntityMeta, option: str, name: str | None) -> str | None:
    """Check ``created_at=``/``updated_at=``: a datetime field outside the primary key."""
    if name is None:
        return None
    cls_name = meta.cls.__name__
    info = meta.cls.model_fields.get(name) if isinstance(name, str) else None
    if info is None:
        raise DeclarationError(
            "entity.timestamp-field",
            f"{cls_name} gives {option}={name!r}, which is not a field; declare it, e.g. "
            f"`{name}: datetime | None = None`.",
        )
    if bare_type(info.annotation) is not datetime:
        raise DeclarationError(
            "entity.timestamp-field",
            f"{cls_name}.{name} is set by lsiorm ({option}=), so it must be a datetime field "
            "(or an epoch-seconds datetime); it is declared as "
            f"{getattr(info.annotation, '__name__', info.annotation)!s}.",
        )
    if name in meta.primary_fields:
        raise DeclarationError(
            "entity.timestamp-field",
            f"{cls_name}.{name} is part of the primary key, so setting it on each write would "
            "write a different item. Use it in an index key instead.",
        )
    if name == meta.version_field:
        raise DeclarationError(
            "entity.timestamp-field", f"{cls_name}.{name} is the version field; pick another."
        )
    return name


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


def stamped(entity: Entity, now: datetime | None = None) -> Entity:
    """Return the entity with its declared timestamps set for a put at ``now``.

    ``updated_at`` becomes now; ``created_at`` becomes now unless the entity has one (it was
    read from the table, or the caller set it).
    """
    meta = meta_of(entity)
    if meta.created_field is None and meta.updated_field is None:
        return entity
    moment = now or datetime.now(timezone.utc)
    changes: dict[str, Any] = {}
    if meta.updated_field is not None:
        changes[meta.updated_field] = meta.validate_field(meta.updated_field, moment)
    if meta.created_field is not None and getattr(entity, meta.created_field) is None:
        changes[meta.created_field] = meta.validate_field(meta.created_field, moment)
    return entity.model_copy(update=changes)


def is_epoch_field(annotation: Any, metadata: Iterable[Any] = ()) -> bool:
    """Whether a field is :data:`~lsiorm.EpochSeconds`, possibly optional."""
    if is_epoch_seconds(metadata):
        return True
    base = _strip_optional(annotation)
    return typing.get_origin(base) is typing.Annotated and is_epoch_seconds(
        typing.get_args(base)[1:]
    )


def _check_ttl_field(cls: type[Entity], table: Table) -> None:
    """Refuse a field stored under the table's TTL attribute that is not stored as a number."""
    ttl = table.ttl_attribute
    if ttl is None:
        return
    for fname, info in cls.model_fields.items():
        stored = {info.alias or fname, info.serialization_alias or info.alias or fname}
        if ttl not in stored:
            continue
        if is_epoch_field(info.annotation, info.metadata):
            continue
        base = _strip_optional(info.annotation)
        if base is int and not any(not _plain_metadata(m) for m in info.metadata):
            continue
        shown = base.__name__ if isinstance(base, type) else repr(base).replace("typing.", "")
        raise DeclarationError(
            "ttl.not-epoch-seconds",
            f"{cls.__name__}.{fname} is stored as {ttl!r}, the TTL attribute of table "
            f"{table.name!r}, but its type {shown} is not stored as a number of seconds since "
            "the Unix epoch; DynamoDB's time to live ignores anything else (a datetime is "
            "stored as ISO text), so these items would never expire. Annotate it with "
            "lsiorm.EpochSeconds (or int).",
        )


def _pending(meta: EntityMeta, pending: Iterable[str]) -> frozenset[str]:
    """Check ``pending=``: index key attributes the entity derives, never its primary key."""
    slots = frozenset([pending] if isinstance(pending, str) else pending)
    primary = {
        meta.table.partition_key.name,
        *([meta.table.sort_key.name] if meta.table.sort_key else []),
    }
    allowed = ", ".join(sorted(set(meta.templates) - primary)) or "none"
    for slot in sorted(slots):
        if slot in primary or slot not in meta.templates:
            raise DeclarationError(
                "entity.pending-slot",
                f"{meta.cls.__name__} marks {slot!r} pending, but pending= names index key "
                f"attributes the entity has a template for ({allowed}).",
            )
    return slots


def _bind_template(cls: type[Entity], attr: str, attr_type: str, source: str) -> KeyTemplate:
    fields = cls.model_fields
    segments = list(parse_template(source, attribute=attr))
    slots = [s for s in segments if isinstance(s, FieldSlot)]
    for slot in slots:
        if slot.field not in fields:
            raise DeclarationError(
                "template.unknown-field",
                f"{cls.__name__}: template {source!r} for {attr!r} uses {{{slot.field}}}, which "
                f"is not a field (fields: {', '.join(fields)}).",
            )
    names = [s.field for s in slots]
    if len(set(names)) != len(names):
        raise DeclarationError(
            "template.repeated-field",
            f"{cls.__name__}: template {source!r} for {attr!r} uses a field twice.",
        )
    if attr_type != "S":
        if len(segments) != 1 or not slots or slots[0].spec:
            raise DeclarationError(
                "template.direct-key",
                f"{cls.__name__}: {attr!r} is a {attr_type} key attribute, so its template must "
                f"be a single field with no literal text or format, like '{{goals}}'; "
                f"got {source!r}.",
            )
        base = _strip_optional(fields[slots[0].field].annotation)
        allowed: tuple[type, ...] = (int, float, Decimal) if attr_type == "N" else (bytes,)
        if not (isinstance(base, type) and issubclass(base, allowed)) or base is bool:
            raise DeclarationError(
                "template.direct-key",
                f"{cls.__name__}.{slots[0].field} is {base!r}, which cannot be stored in the "
                f"{attr_type} key attribute {attr!r}.",
            )
        return KeyTemplate(attr, attr_type, source, tuple(segments))
    for i, seg in enumerate(segments):
        if not isinstance(seg, FieldSlot):
            continue
        nxt = segments[i + 1] if i + 1 < len(segments) else None
        info = fields[seg.field]
        codec = codec_for(
            info.annotation,
            spec=seg.spec,
            metadata=info.metadata,
            field_name=f"{cls.__name__}.{seg.field}",
            terminated=nxt is not None,
        )
        if isinstance(nxt, FieldSlot) and not codec.prefix_free:
            raise DeclarationError(
                "template.ambiguous-fields",
                f"{cls.__name__}: in template {source!r}, {{{seg.field}}} has a variable-length "
                "encoding and is followed directly by another field; put a separator between "
                "them, like '{a}#{b}'.",
            )
        segments[i] = FieldSlot(seg.field, seg.spec, codec)
    return KeyTemplate(attr, attr_type, source, tuple(segments))


def _sort_roles(table: Table) -> list[tuple[str, str | None, LocalIndex | GlobalIndex | None]]:
    """Return (partition attribute, sort attribute, index) for every key schema of the table."""
    roles: list[tuple[str, str | None, LocalIndex | GlobalIndex | None]] = []
    pk = table.partition_key.name
    if table.sort_key is not None:
        roles.append((pk, table.sort_key.name, None))
    for lsi in table.local_indexes:
        roles.append((pk, lsi.sort_key.name, lsi))
    for gsi in table.global_indexes:
        roles.append((gsi.partition_key.name, gsi.sort_key.name if gsi.sort_key else None, gsi))
    return roles


def _overlap(a: KeyTemplate, b: KeyTemplate) -> bool:
    na, nb = a.namespace, b.namespace
    if not a.slots and not b.slots:
        return na == nb
    if not a.slots:
        return na.startswith(nb)
    if not b.slots:
        return nb.startswith(na)
    return na.startswith(nb) or nb.startswith(na)


def _check_overlaps(meta: EntityMeta) -> None:
    """Refuse two entity types whose keys queries could not tell apart.

    Hierarchies (``ORDER#{order_id}`` next to ``ORDER#{order_id}#ITEM#{line:03d}``) are
    allowed: a query that reads the other type's items too filters on the type attribute.
    Refused are two types that could write the same primary key (one item would overwrite
    the other), and shared namespaces on an index that does not project the type attribute
    (no filter could tell the types apart there).
    """
    table = meta.table
    for other_cls in table.entities.values():
        other = meta_of(typing.cast("type[Entity]", other_cls))
        if other.cls is meta.cls:
            continue
        for pk_attr, sk_attr, index in _sort_roles(table):
            if sk_attr is None:
                continue
            mine, theirs = meta.templates.get(sk_attr), other.templates.get(sk_attr)
            pk_mine, pk_theirs = meta.templates.get(pk_attr), other.templates.get(pk_attr)
            if mine is None or theirs is None or pk_mine is None or pk_theirs is None:
                continue
            if index is None:
                pk_same = intersection_witness(pk_mine, pk_theirs)
                sk_same = intersection_witness(mine, theirs) if pk_same is not None else None
                if pk_same is not None and sk_same is not None:
                    raise DeclarationError(
                        "template.namespace-overlap",
                        f"{meta.cls.__name__} template {mine.source!r} and {other.cls.__name__} "
                        f"template {theirs.source!r} for {sk_attr!r} can write the same key "
                        f"({pk_same!r}, {sk_same!r}), so one item would overwrite the other and "
                        f"query({meta.cls.__name__}) could not tell them apart. Give each a "
                        "distinct literal prefix, like 'THREAD#' and 'REPLY#'.",
                    )
                continue
            projected = table.projected_attributes(index)
            if projected is None or table.type_attribute in projected:
                continue  # a type filter keeps queries on this index exact
            if _overlap(pk_mine, pk_theirs) and _overlap(mine, theirs):
                raise DeclarationError(
                    "template.namespace-overlap",
                    f"{meta.cls.__name__} template {mine.source!r} and {other.cls.__name__} "
                    f"template {theirs.source!r} for {sk_attr!r} can share a partition of index "
                    f"{index.name!r} and one namespace is a prefix of the other, so "
                    f"query({meta.cls.__name__}).using({index.name!r}) would also read "
                    f"{other.cls.__name__} items, and the index does not project the type "
                    f"attribute {table.type_attribute!r} to filter them out. Give each a "
                    "distinct literal prefix, like 'THREAD#' and 'REPLY#', or project "
                    f"{table.type_attribute!r}.",
                )


def build_item(entity: Entity) -> dict[str, Any]:
    """Return an entity as a python-valued item with derived keys and its type name."""
    meta = meta_of(entity)
    _check_valid(meta, entity)
    values = {name: getattr(entity, name) for name in type(entity).model_fields}
    for name in meta.shard_fields:
        _check_shard(meta, name, values.get(name))
    keys = meta.key(values)
    keys.update(meta.index_keys(values))  # key checks run before serialising the fields
    # None is absence: a field that holds None is not stored at all, as an update that sets
    # it to None REMOVEs it, so conditions and ADD see the same item either way.
    item = {
        k: v for k, v in entity.model_dump(mode="python", by_alias=True).items() if v is not None
    }
    item.update(keys)
    item[meta.table.type_attribute] = meta.type_name
    return item


def _check_valid(meta: EntityMeta, entity: Entity) -> None:
    """Validate an entity again before it is written (``model_construct`` skips validation)."""
    cls = type(entity)
    missing = [n for n in cls.model_fields if n not in entity.__dict__]
    if missing:
        raise ValidationError(
            "entity.partial",
            f"This {cls.__name__} lacks {', '.join(missing)} (a partial result of a query "
            "that selected fields, or built without them); writing it would lose them. Read "
            "the whole item, or use update(..., set=...).",
            table=meta.table.name,
        )
    try:
        cls.__pydantic_validator__.validate_python(
            {n: entity.__dict__[n] for n in cls.model_fields}
        )
    except PydanticValidationError as exc:
        raise ValidationError(
            "entity.invalid",
            f"This {cls.__name__} is not valid, so it is not written (was it built with "
            f"model_construct or changed by assignment?): {exc}",
            table=meta.table.name,
        ) from exc


def _check_shard(meta: EntityMeta, name: str, value: Any) -> None:
    shard = shard_of(meta, name)
    assert shard is not None
    if value is None or isinstance(value, bool) or not isinstance(value, int):
        return  # None leaves the sparse key out; a wrong type is caught by the key check
    if not 1 <= value <= shard.count:
        raise KeyEncodingError(
            "shard.range",
            f"{meta.cls.__name__}.{name} is {value}, outside its shards 1..{shard.count}; a "
            "query on the sharded index would never find the item. Leave it out (None) to "
            "have it derived from the primary key.",
            table=meta.table.name,
        )


def wire_item(entity: Entity) -> dict[str, Any]:
    """Return an entity in wire format, refusing items over DynamoDB's 400 KB limit."""
    return encode_entity(entity)[0]


def encode_entity(entity: Entity) -> tuple[dict[str, AttributeValue], int]:
    """Return an entity's wire item and its size in bytes, built in one pass.

    The result equals ``item_to_wire(build_item(entity))`` and its ``item_size``: key checks
    run first, then every field is converted and sized once. Items over DynamoDB's 400 KB limit
    are refused.
    """
    cls = type(entity)
    writer = _WRITERS.get(cls)
    if writer is None:
        writer = _Writer(meta_of(cls))
        if cls.__pydantic_complete__:
            _WRITERS[cls] = writer
    if writer.fast is not None:
        done = writer.fast(entity)
        if done is not None:
            return done
    meta = writer.meta
    _check_valid(meta, entity)
    values = entity.__dict__
    for name in writer.shards:
        _check_shard(meta, name, values.get(name))
    keys = writer.keys(values)  # key checks run before the fields are converted
    item: dict[str, AttributeValue] = {}
    size = 0
    if writer.fields is not None:
        for name, attr, attr_size in writer.fields:
            value = values[name]
            if type(value) is str:  # most values: inlined
                item[attr] = {"S": value}
                size += attr_size + (len(value) if value.isascii() else _utf8_len(value))
                continue
            if value is None:
                continue  # None is absence (see build_item)
            av, n = to_wire_sized(value)
            item[attr] = av
            size += attr_size + n
    else:
        for attr, value in entity.model_dump(mode="python", by_alias=True).items():
            if value is None:
                continue
            av, n = to_wire_sized(value)
            item[attr] = av
            size += _utf8_len(attr) + n
    # Keys and the type attribute replace a field of the same stored name, if there is one
    # (only possible when a field's serialization alias names one).
    keys[writer.type_attribute] = meta.type_name
    may_collide = writer.fields is None or writer.collide
    for attr, value in keys.items():
        if may_collide:
            replaced = item.get(attr)
            if replaced is not None:
                size -= _utf8_len(attr) + _value_size(replaced)
        if type(value) is str:
            item[attr] = {"S": value}
            n = len(value) if value.isascii() else _utf8_len(value)
        else:
            av, n = to_wire_sized(value)
            item[attr] = av
        size += (len(attr) if attr.isascii() else _utf8_len(attr)) + n
    if size > MAX_ITEM_BYTES:
        _too_large(meta, size)
    return item, size


class _Writer:
    """What :func:`encode_entity` needs of one entity class, worked out once."""

    __slots__ = ("collide", "fast", "fields", "meta", "shards", "text_keys", "type_attribute")

    def __init__(self, meta: EntityMeta) -> None:
        self.meta = meta
        cls = meta.cls
        #: (field, stored attribute, its UTF-8 size) when reading the fields as they are stored
        #: on the instance gives what ``model_dump`` would; None when only model_dump will do.
        self.fields: tuple[tuple[str, str, int], ...] | None = (
            tuple(
                (name, attr, _utf8_len(attr))
                for name, info in cls.model_fields.items()
                for attr in (info.serialization_alias or info.alias or name,)
            )
            if _plain_model(cls)
            else None
        )
        self.shards = meta.shard_fields
        self.type_attribute = meta.table.type_attribute
        #: Whether a field is stored under the name of a key or of the type attribute.
        self.collide = self.fields is not None and bool(
            {attr for _, attr, _ in self.fields} & {*meta.templates, self.type_attribute}
        )
        primary = {meta.table.partition_key.name}
        if meta.table.sort_key is not None:
            primary.add(meta.table.sort_key.name)
        # Text templates, in the order meta.key then meta.index_keys render them: (attribute,
        # literal-or-(field, encode) parts, primary?). Number and binary keys take meta's way.
        ordered = [meta.partition_template, meta.sort_template]
        ordered += [t for a, t in meta.templates.items() if a not in primary]
        self.text_keys: tuple[tuple[str, tuple[Any, ...], bool], ...] | None = None
        if all(t is None or not t.is_direct for t in ordered):
            self.text_keys = tuple(
                (
                    t.attribute,
                    tuple(
                        seg if isinstance(seg, str) else (seg.field, _codec(seg).encode)
                        for seg in t.segments
                    ),
                    t.attribute in primary,
                )
                for t in ordered
                if t is not None
            )
        #: The class's own straight-line encoder (see :func:`_fast_encoder`), or None.
        self.fast: Callable[[Entity], tuple[dict[str, AttributeValue], int] | None] | None = (
            _fast_encoder(self) if cls.__pydantic_complete__ else None
        )

    def keys(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """Return the key attributes ``meta.key`` and ``meta.index_keys`` would, checked alike."""
        meta = self.meta
        if self.text_keys is None:
            keys = meta.key(values)
            keys.update(meta.index_keys(values))
            return keys
        out: dict[str, Any] = {}
        for attr, parts, primary in self.text_keys:
            texts = []
            for part in parts:
                if type(part) is str:
                    texts.append(part)
                    continue
                value = values.get(part[0])
                if value is None:
                    break
                texts.append(part[1](value))
            else:
                text = "".join(texts)
                # Text of at most 256 characters is at most 1,024 UTF-8 bytes, within every key
                # limit; anything else gets the full check (key.empty, the byte limits).
                if not text or len(text) > 256:
                    _checked_key(meta, meta.templates[attr], text)
                out[attr] = text
                continue
            if primary:
                return meta.key(values)  # raises key.missing-field, as meta.key does
        return out


_TIMESPECS: Final = {6: "microseconds", 3: "milliseconds", 0: "seconds"}


def _segment_source(var: str, value: str, codec: KeyCodec, enc: str) -> str:
    """Source that sets ``var`` to ``codec.encode(value)``, inlining the codec's common case.

    Each inlined branch runs only where the codec would return that very text without a check
    failing (a plain ASCII str with no U+0000/U+0001, an int within its width, a UTC datetime
    at the key precision); anything else calls the codec itself, so results and errors match.
    """
    if type(codec) is StrCodec:
        tail = " + '\\x00'" if codec.terminated else ""
        fast = (
            f"type({value}) is str and {value}.isascii() and '\\x00' not in {value} "
            f"and '\\x01' not in {value}",
            f"{value}{tail}",
        )
    elif type(codec) is IntCodec:
        fast = (
            f"type({value}) is int and 0 <= {value} < {10**codec.width}",
            f"f'{{{value}:0{codec.width}d}}'",
        )
    elif type(codec) is DatetimeCodec:
        fast = (
            f"type({value}) is datetime and {value}.tzinfo is UTC"
            + (
                f" and not {value}.microsecond % {10 ** (6 - codec.digits)}"
                if codec.digits < 6
                else ""
            ),
            f"{value}.isoformat(timespec={_TIMESPECS[codec.digits]!r})[:-6] + 'Z'",
        )
    else:
        return f"{var} = {enc}({value})"
    return f"if {fast[0]}:\n    {var} = {fast[1]}\nelse:\n    {var} = {enc}({value})"


def _field_source(name: str, attr: str, attr_size: int, annotation: Any) -> str:
    """Source that adds field ``name`` to ``item`` and ``size`` as the generic loop would."""
    base = _strip_optional(annotation)
    lines = [
        f"v = values[{name!r}]",
        "if type(v) is str:",
        f"    item[{attr!r}] = {{'S': v}}",
        f"    size += {attr_size} + (len(v) if v.isascii() else utf8_len(v))",
    ]
    if base is datetime:
        lines += [
            "elif type(v) is datetime and v.tzinfo is UTC:",
            "    text = v.isoformat(timespec='microseconds')[:-6] + 'Z'",
            f"    item[{attr!r}] = {{'S': text}}",
            f"    size += {attr_size} + len(text)",
        ]
    elif base is int:
        lines += [
            f"elif type(v) is int and {-_INT_FAST_LIMIT} < v < {_INT_FAST_LIMIT}:",
            "    text = str(v)",
            f"    item[{attr!r}] = {{'N': text}}",
            f"    size += {attr_size} + int_size(text)",
        ]
    lines += [
        "elif v is not None:",
        "    sized = SIZED.get(type(v))",
        "    av, n = sized(v) if sized is not None else to_wire_sized(v)",
        f"    item[{attr!r}] = av",
        f"    size += {attr_size} + n",
    ]
    return "\n".join(lines)


def _fast_encoder(
    writer: _Writer,
) -> Callable[[Entity], tuple[dict[str, AttributeValue], int] | None] | None:
    """Build one class's encoder as straight-line source, as :func:`_item_decoder` does.

    It does what :func:`encode_entity`'s general path does for a plain class whose keys are all
    text templates (no field stored under a key's name): the same checks in the same order, the
    same item in the same attribute order, the same size. It returns None where only the
    general path knows the answer (a primary key field is None: that path raises
    key.missing-field), before anything is built.
    """
    meta = writer.meta
    if writer.fields is None or writer.text_keys is None or writer.collide:
        return None
    annotations = {name: info.annotation for name, info in meta.cls.model_fields.items()}
    namespace: dict[str, Any] = {
        "UTC": timezone.utc,
        "datetime": datetime,
        "check_valid": _check_valid,
        "check_shard": _check_shard,
        "checked_key": _checked_key,
        "meta": meta,
        "SIZED": _SIZED,
        "to_wire_sized": to_wire_sized,
        "utf8_len": _utf8_len,
        "int_size": _int_size,
        "too_large": _too_large,
    }
    values_check = _validity_source(meta)
    if values_check is None:
        body = ["check_valid(meta, entity)", "values = entity.__dict__"]
    else:
        # Values of exactly the declared plain types are valid without asking Pydantic; any
        # other value (or a missing field) gets check_valid's full validation and its errors.
        body = [
            "values = entity.__dict__",
            "get = values.get",
            f"if not ({values_check}):\n    check_valid(meta, entity)",
        ]
        namespace.update(ABSENT=_ABSENT, Decimal=Decimal, date=date, all_str=_all_str)
    for name in writer.shards:
        body.append(f"check_shard(meta, {name!r}, values.get({name!r}))")
    # Keys first (their checks run before any field is converted), one local per attribute.
    key_vars = []
    for n, (attr, parts, primary) in enumerate(writer.text_keys):
        var = f"k{n}"
        key_vars.append((attr, var))
        namespace[f"tpl{n}"] = meta.templates[attr]
        body.append(f"{var} = None")
        texts: list[str] = []
        block: list[str] = []
        depth = 0
        for m, part in enumerate(parts):
            if isinstance(part, str):
                texts.append(repr(part))
                continue
            enc = f"enc{n}_{m}"
            namespace[enc] = part[1]
            pad = "    " * depth
            block.append(f"{pad}p = values.get({part[0]!r})")
            block.append(f"{pad}if p is not None:")
            inner = _segment_source(f"s{m}", "p", _codec_of(meta, attr, m), enc)
            block.extend(pad + "    " + line for line in inner.split("\n"))
            texts.append(f"s{m}")
            depth += 1
        pad = "    " * depth
        block.append(f"{pad}text = {' + '.join(texts) if texts else repr('')}")
        block.append(f"{pad}if not text or len(text) > 256:")
        block.append(f"{pad}    checked_key(meta, tpl{n}, text)")
        block.append(f"{pad}{var} = text")
        body.extend(block)
        if primary:
            body.append(f"if {var} is None:\n    return None")
    body.append("item = {}\nsize = 0")
    for name, attr, attr_size in writer.fields:
        body.append(_field_source(name, attr, attr_size, annotations[name]))
    for attr, var in key_vars:
        line = (
            f"item[{attr!r}] = {{'S': {var}}}\n"
            f"size += {_utf8_len(attr)} + (len({var}) if {var}.isascii() else utf8_len({var}))"
        )
        if not any(a == attr and p for a, _, p in writer.text_keys):
            line = f"if {var} is not None:\n" + _indent(line)
        body.append(line)
    type_name = meta.type_name
    body.append(f"item[{writer.type_attribute!r}] = {{'S': {type_name!r}}}")
    body.append(f"size += {_utf8_len(writer.type_attribute) + _utf8_len(type_name)}")
    body.append(f"if size > {MAX_ITEM_BYTES}:\n    too_large(meta, size)")
    body.append("return item, size")
    source = "def encode(entity):\n" + _indent("\n".join(body))
    exec(source, namespace)
    encode: Callable[[Entity], tuple[dict[str, AttributeValue], int] | None] = namespace["encode"]
    return encode


#: Per plain type, an expression true only for values Pydantic's validation of that type
#: (lax, no constraints) accepts as they are.
_EXACT_CHECKS: Final[dict[Any, str]] = {
    str: "type({v}) is str",
    int: "type({v}) is int",
    bool: "type({v}) is bool",
    float: "type({v}) is float",
    Decimal: "type({v}) is Decimal and {v}.is_finite()",
    datetime: "type({v}) is datetime",
    date: "type({v}) is date",
    list[str]: "type({v}) is list and all_str({v})",
}
#: Model settings that do not change which values validation accepts.
_NEUTRAL_CONFIG: Final = frozenset(
    {
        "extra",
        "validate_by_name",
        "validate_by_alias",
        "populate_by_name",
        "frozen",
        "title",
        "protected_namespaces",
        "use_attribute_docstrings",
        "json_schema_extra",
    }
)


def _validity_source(meta: EntityMeta) -> str | None:
    """An expression over ``get`` (the instance dict's get) that is true only when Pydantic's
    validation of the fields would accept them, or None when no such shortcut is sure.

    Only for classes whose validation depends on nothing but the field types: no validators
    (Entity's own shard filler aside, on a class without shards), no post-init, no settings
    or field metadata (constraints, strictness) that could refuse a value of the right type,
    and fields of the plain types in :data:`_EXACT_CHECKS` (or None where allowed).
    """
    cls = meta.cls
    decorators = cls.__pydantic_decorators__
    if decorators.validators or decorators.field_validators or decorators.root_validators:
        return None
    if set(decorators.model_validators) - {"_fill_shards"} or meta.shard_fields:
        return None
    if cls.__pydantic_post_init__ is not None or set(cls.model_config) - _NEUTRAL_CONFIG:
        return None
    if any(
        "__get_pydantic_core_schema__" in vars(c) for c in cls.__mro__[: cls.__mro__.index(Entity)]
    ):
        return None
    checks = []
    for name, info in cls.model_fields.items():
        if info.metadata:
            return None
        annotation = info.annotation
        base = _strip_optional(annotation)
        check = _EXACT_CHECKS.get(base)
        if check is None:
            return None
        # A missing field reads as ABSENT, which no check accepts.
        read = f"(v := get({name!r}, ABSENT))"
        if base is not annotation:  # Optional: None is valid too
            test = f"{read} is None or {check.replace('{v}', 'v')}"
        else:
            test = check.replace("{v}", read, 1).replace("{v}", "v")
        checks.append(f"({test})")
    return " and ".join(checks) if checks else "True"


def _all_str(values: list[Any]) -> bool:
    # A plain loop: about twice as fast as all() over a generator for short lists.
    for value in values:  # noqa: SIM110
        if type(value) is not str:
            return False
    return True


def _codec_of(meta: EntityMeta, attr: str, position: int) -> KeyCodec:
    segment = meta.templates[attr].segments[position]
    assert not isinstance(segment, str)
    return _codec(segment)


def _too_large(meta: EntityMeta, size: int) -> None:
    raise ItemTooLargeError(
        "item.max-400kb",
        f"{meta.cls.__name__} item is {size} bytes; DynamoDB items are limited to "
        f"{MAX_ITEM_BYTES} bytes (400 KB).",
        table=meta.table.name,
    )


def _codec(slot: FieldSlot) -> KeyCodec:
    """The codec a bound template gave this slot (binding sets every slot's codec)."""
    assert slot.codec is not None
    return slot.codec


_WRITERS: dict[type, _Writer] = {}

_PLAIN_TYPES: Final = frozenset(
    {str, int, float, bool, Decimal, bytes, datetime, date, time, UUID, type(None)}
)


def _plain_model(cls: type[Entity]) -> bool:
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
        if not all(_plain_metadata(m) for m in info.metadata):
            return False
        if not _plain_annotation(info.annotation):
            return False
    return True


def _plain_metadata(item: Any) -> bool:
    # Serializers and anything that builds its own core schema may change what model_dump gives.
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
        return _plain_annotation(args[0]) and all(_plain_metadata(m) for m in args[1:])
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


def decode_item(
    table: Table,
    wire: Mapping[str, Mapping[str, Any]],
    only: Iterable[type[Entity]] | None = None,
) -> Entity | None:
    """Return a wire item as the entity its type attribute names.

    Items of a type not in ``only`` (when given) or of no registered type give None. Only the
    attributes the model reads are decoded; a malformed attribute it ignores raises nothing.
    """
    type_av = wire.get(table.type_attribute)
    type_name = type_av.get("S") if type_av is not None else None
    found = table.entities.get(type_name) if type_name is not None else None
    if found is None or (only is not None and found not in tuple(only)):
        return None
    decode = _ITEM_DECODERS.get(found)
    if decode is None:
        cls = typing.cast("type[Entity]", found)
        decode = _item_decoder(cls)
        if cls.__pydantic_complete__:
            _ITEM_DECODERS[cls] = decode
    return decode(wire)


_ItemDecoder: TypeAlias = Callable[[Mapping[str, Any]], Entity]

# One decoder per entity class, built on first use and kept for the life of the process, as
# entity classes normally are: a weak mapping would cost more per item than the decode saves.
_ITEM_DECODERS: dict[type, _ItemDecoder] = {}
_BASE_MODEL_VALIDATE = getattr(BaseModel.model_validate, "__func__", None)


def _model_keys(cls: type[Entity]) -> dict[str, Any] | None:
    """Return every input key the model reads, with its field annotation, or None.

    None means the model may look at keys beyond its fields (extra keys allowed or forbidden,
    a before/wrap model validator, an overridden ``model_validate``, path aliases), so the whole
    item must be decoded.
    """
    if cls.model_config.get("extra") not in (None, "ignore"):
        return None
    validators = cls.__pydantic_decorators__.model_validators.values()
    if any(v.info.mode in ("before", "wrap") for v in validators):
        return None
    if getattr(cls.model_validate, "__func__", None) is not _BASE_MODEL_VALIDATE:
        return None
    keys: dict[str, Any] = {}
    for name, info in cls.model_fields.items():
        if info.validation_alias is not None and not isinstance(info.validation_alias, str):
            return None
        for key in (name, info.alias, info.validation_alias):
            if key is not None:
                keys.setdefault(key, info.annotation)
    return keys


def _wire_tag(annotation: Any) -> str:
    """Return the wire form a field of this type is expected in; a guess used only for speed."""
    base = _strip_optional(annotation)
    if base is bool:
        return "BOOL"
    if typing.get_origin(base) is list and typing.get_args(base) == (str,):
        return "L:S"
    if not isinstance(base, type):
        return ""
    if issubclass(base, int):
        return "N:int"
    if issubclass(base, (float, Decimal)):
        return "N"
    if issubclass(base, bytes):
        return "B"
    if issubclass(base, (str, date, time, UUID)):
        return "S"
    return ""


# Each template reads the AttributeValue ``av`` of key ``{k}`` into ``out``. Its fast branch
# runs only when ``av`` is exactly the expected one-member AttributeValue, and then gives what
# from_wire would; anything else goes through from_wire itself, so results and errors match.
_DECODE_TEMPLATES: Final[dict[str, str]] = {
    "": "out[{k}] = from_wire(av)",
    "S": """
raw = av.get({tag})
out[{k}] = raw if raw is not None and len(av) == 1 else from_wire(av)
""",
    "N": """
raw = av.get("N")
out[{k}] = number(raw) if type(raw) is str and len(av) == 1 else from_wire(av)
""",
    # Where int() succeeds the text has no ".", "e" or "E", so number() would return the same.
    "N:int": """
raw = av.get("N")
if type(raw) is str and len(av) == 1:
    try:
        out[{k}] = int(raw)
    except ValueError:
        out[{k}] = number(raw)
else:
    out[{k}] = from_wire(av)
""",
    "L:S": """
raw = av.get("L")
value = string_list(raw) if raw is not None and len(av) == 1 else None
out[{k}] = value if value is not None else from_wire(av)
""",
}


def _string_list(values: Any) -> list[Any] | None:
    """Return the S values of an L of S AttributeValues, or None if it is anything else."""
    if type(values) is not list:
        return None
    out = []
    for av in values:
        if type(av) is not dict or len(av) != 1:
            return None
        text = av.get("S")
        if text is None:
            return None
        out.append(text)
    return out


_ABSENT: Final = object()


def _indent(text: str, levels: int = 1) -> str:
    return "\n".join("    " * levels + line for line in text.split("\n"))


def _absent_is_none(cls: type[Entity]) -> tuple[str, ...]:
    """Stored names of fields that allow None and have no None default: absent reads as None.

    None is stored as absence (see :func:`build_item`), so a field declared ``x: T | None``
    must read back as None when its attribute is missing: without a default, and also with a
    default other than None (``x: T | None = "new"`` written as None is absent, not "new").
    """
    fields = cls.model_fields
    return tuple(fields[name].alias or name for name in meta_of(cls).absent_is_none)


def _defaults_to_none(info: FieldInfo) -> bool:
    if info.is_required():
        return False
    if info.default_factory is not None:
        return False  # a factory may give anything; absence must still read as None
    return info.default is None


def _item_decoder(cls: type[Entity]) -> _ItemDecoder:
    """Build the function that turns a wire item into a ``cls`` instance.

    The result always equals ``cls.model_validate(item_from_wire(item))`` restricted to the
    attributes the model reads; attributes it ignores (keys, the type attribute, index keys)
    are not decoded. The function is generated as source, one straight-line block per key, so
    a page of items pays no per-attribute loop or dispatch.
    """
    keys = _model_keys(cls) if cls.__pydantic_complete__ else None
    absent = _absent_is_none(cls)
    if keys is None:

        def validate(wire: Mapping[str, Any]) -> Entity:
            item = item_from_wire(wire)
            for name in absent:
                item.setdefault(name, None)
            return cls.model_validate(item)

        return validate
    blocks = []
    for key, annotation in keys.items():
        tag = _wire_tag(annotation)
        template = _DECODE_TEMPLATES["S" if tag in ("S", "B", "BOOL") else tag]
        block = template.strip().format(k=repr(key), tag=repr(tag))
        blocks.append(f"av = get({key!r}, absent)\nif av is not absent:\n{_indent(block)}")
    source = f"""
def decode(wire):
    out = {{}}
    get = wire.get
    try:
{_indent(chr(10).join(blocks), 2)}
    except (ValueError, TypeError, AttributeError, ArithmeticError):
        # item_from_wire raises the error it would have raised for this item.
        item_from_wire(wire)
        raise
    for name in absent_none:
        if name not in out:
            out[name] = None
    return cls.__pydantic_validator__.validate_python(out)
"""
    namespace: dict[str, Any] = {
        "absent": _ABSENT,
        "absent_none": absent,
        "cls": cls,
        "from_wire": from_wire,
        "item_from_wire": item_from_wire,
        "number": _number_from_text,
        "string_list": _string_list,
    }
    exec(source, namespace)
    decode: _ItemDecoder = namespace["decode"]
    return decode


def key_templates(cls: type[Entity]) -> dict[str, str]:
    """Return the key templates an entity class declares, by attribute name.

    ``{"PK": "FORUM#{forum}", "SK": "THREAD#{subject}", "LSI1SK": "..."}``: useful to list which
    entity types write each index slot of a table.
    """
    return {attr: tpl.source for attr, tpl in meta_of(cls).templates.items()}
