"""EntityModel, the pydantic model of an entity, and EntityMeta, what lsiorm knows of a bound one.

`EntityModel` is the pydantic model every entity is, as the model layer sees it: its
settings and the ``__lsiorm__`` slot that binding fills. The modules that encode, decode and
check entities work with it; the public `Entity` derives from it
and adds the declaration (``class Thread(Entity, table=..., keys=...)``), which binds.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from decimal import Decimal
from enum import Enum
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar, Final, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, TypeAdapter

from lsiorm._model.absence import Fill, nested_fill, stored_python
from lsiorm._model.field_types import allows_none, defaults_to_none, holds_text, strip_optional
from lsiorm._model.number_fit import NumberCheck, field_checks
from lsiorm._model.wire import to_wire_sized
from lsiorm.errors import IndexKeyTypeError, KeyEncodingError, ValidationError

if TYPE_CHECKING:
    from lsiorm._model.codec import KeyCodec
    from lsiorm._model.field_protection import FieldProtection
    from lsiorm._model.schema import Table
    from lsiorm._model.template import KeyTemplate

#: The model class an EntityMeta describes; upper layers say ``EntityMeta[Entity]``.
M_co = TypeVar("M_co", bound="EntityModel", covariant=True)
M = TypeVar("M", bound="EntityModel")

#: DynamoDB's limits on key attribute values, in bytes.
MAX_PARTITION_KEY_BYTES: Final = 2048
MAX_SORT_KEY_BYTES: Final = 1024


class EntityModel(BaseModel):
    """The pydantic model of an entity: lsiorm's model settings and its metadata slot.

    ``__lsiorm__`` holds the class's `EntityMeta` once it is bound to a table, and None
    on a class that is not (``Entity`` itself, or an abstract base of entities).
    """

    model_config = ConfigDict(extra="ignore", validate_by_name=True, validate_by_alias=True)

    __lsiorm__: ClassVar[EntityMeta[Any] | None] = None


@dataclass
class EntityMeta(Generic[M_co]):
    """What lsiorm knows about one entity class: its table, type name and key templates."""

    cls: type[M_co]
    table: Table
    type_name: str
    templates: dict[str, KeyTemplate]
    version_field: str | None
    #: Index key attributes written but not yet ready for reads: the planner never picks them.
    pending: frozenset[str] = frozenset()
    #: Datetime fields lsiorm sets: when the item was first written, and last written.
    created_field: str | None = None
    updated_field: str | None = None
    #: Fields declared as write shards (``Annotated[int | None, Shard(n)]``), set by binding.
    shard_fields: tuple[str, ...] = ()
    #: Multi-attribute index key attribute -> the field stored under its name (that field is
    #: the key attribute itself; nothing is derived), set by binding.
    stored_keys: dict[str, str] = field(default_factory=dict)
    #: Whether items store the table's type attribute (``Entity(..., type_attribute=None)``
    #: declares items that carry none; their keys tell them apart).
    typed: bool = True
    #: The key style of fields that do not give their own.
    key_style: str = "printable"
    #: The key style items may still carry while they are re-keyed (None: only the declared).
    rekeying_from: str | None = None
    #: In the ``rekeying_from`` style, the templates of the key attributes whose text differs
    #: from the declared templates' (empty when nothing differs).
    old_templates: dict[str, KeyTemplate] = field(default_factory=dict)
    #: Key fields whose items may not store them as attributes of their own (their values are
    #: only in the keys): a condition that must be checked on the attribute is refused. These
    #: are the key fields declared ``Field(exclude=True)``; reads parse them from the keys.
    key_only_fields: frozenset[str] = frozenset()
    #: Field name -> how its values are stored (encrypted, compressed, offloaded), set by
    #: binding; empty for an entity with no protected field.
    protected: dict[str, FieldProtection] = field(default_factory=dict)
    #: Fields stored as a multi-attribute index's string key attribute that are not text (a
    #: date, datetime or UUID), with the codec of the text they are stored as; set by binding.
    stored_codecs: dict[str, KeyCodec] = field(default_factory=dict)
    _adapters: dict[str, TypeAdapter[Any]] = field(default_factory=dict)

    @property
    def type_attribute(self) -> str | None:
        """The attribute that stores the type name in this entity's items, or None."""
        return self.table.type_attribute if self.typed else None

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
    def old_form(self) -> EntityMeta[M_co] | None:
        """The entity as items written in its ``rekeying_from`` style see it: the same class
        with the old templates where they differ (None when no key attribute differs)."""
        if not self.old_templates:
            return None
        return replace(self, templates={**self.templates, **self.old_templates}, old_templates={})

    @cached_property
    def moves_when_rekeyed(self) -> bool:
        """Whether items in the ``rekeying_from`` style have another primary key."""
        primary = self.table.index_key_attributes(None)
        return any(attr in self.old_templates for attr in primary if attr is not None)

    def old_key(self, values: Mapping[str, Any]) -> dict[str, Any] | None:
        """The primary key of these values in the ``rekeying_from`` style, when it differs."""
        old = self.old_form
        if old is None or not self.moves_when_rekeyed:
            return None
        key = old.key(values)
        return None if key == self.key(values) else key

    @cached_property
    def ambiguous_primary(self) -> bool:
        """Whether two items with other key values may share a primary key (plain text that
        may hold its separator): reads by key then check the item's own fields."""
        templates = (self.partition_template, self.sort_template)
        return any(t is not None and t.ambiguous_fields for t in templates)

    def holds_key(self, entity: Any, values: Mapping[str, Any]) -> bool:
        """Whether an entity read by key has the key field values asked for."""
        if not self.ambiguous_primary:
            return True
        return all(getattr(entity, f) == values[f] for f in self.primary_fields if f in values)

    @cached_property
    def primary_fields(self) -> frozenset[str]:
        """Fields that make up the primary key; changing one moves the item."""
        out = set(self.partition_template.fields)
        if self.sort_template is not None:
            out |= set(self.sort_template.fields)
        return frozenset(out)

    @cached_property
    def absent_is_none(self) -> tuple[str, ...]:
        """Fields whose missing attribute reads as None (None is stored as absence)."""
        return tuple(
            name
            for name, info in self.cls.model_fields.items()
            if allows_none(info.annotation) and not defaults_to_none(info)
        )

    @cached_property
    def nested_absence(self) -> tuple[tuple[str, Fill], ...]:
        """Per field that holds records (nested models, dataclasses, TypedDicts), the fill that
        puts back the None their absent attributes stand for (see `absence`)."""
        return tuple(
            (name, fill)
            for name, info in self.cls.model_fields.items()
            if (fill := nested_fill(info.annotation)) is not None
        )

    def fill_absent(self, values: dict[str, Any]) -> dict[str, Any]:
        """Put None where decoded field values (by field name) lack what None is stored as."""
        for name in self.absent_is_none:
            values.setdefault(name, None)
        return self.fill_nested(values)

    def fill_nested(self, values: dict[str, Any]) -> dict[str, Any]:
        """Put None where the records inside decoded field values lack it (see `absence`)."""
        for name, fill in self.nested_absence:
            if name in values:
                values[name] = fill(values[name])
        return values

    @cached_property
    def nullable(self) -> frozenset[str]:
        """Fields that admit None, so that a missing attribute of a read that returns them
        is None."""
        return frozenset(n for n, i in self.cls.model_fields.items() if allows_none(i.annotation))

    @cached_property
    def key_fields(self) -> frozenset[str]:
        """Every field used by any key template, or stored as a multi-attribute index key."""
        derived = {f for t in self.templates.values() for f in t.fields}
        return frozenset(derived | set(self.stored_keys.values()))

    @cached_property
    def own_keys(self) -> frozenset[str]:
        """Key attributes that are a field's own stored attribute (its template is the field)."""
        stored = self.attributes
        return frozenset(
            attr
            for attr, tpl in self.templates.items()
            if len(tpl.segments) == 1 and tpl.slots and stored.get(tpl.fields[0]) == attr
        )

    @cached_property
    def coded_fields(self) -> dict[str, KeyCodec]:
        """Fields stored as their own string key attribute that are not text (a date, datetime,
        int, UUID or Enum), each with the codec of its key text: the attribute holds that text
        (as another tool writes it, with a plain style), and reads give the value back."""
        out: dict[str, KeyCodec] = dict(self.stored_codecs)
        for attr in self.own_keys:
            tpl = self.templates[attr]
            name = tpl.fields[0]
            codec = tpl.slots[0].codec
            text = holds_text(self.cls.model_fields[name].annotation)
            if tpl.attribute_type == "S" and codec is not None and not text:
                out[name] = codec
        return out

    def read_coded(self, values: dict[str, Any], by_attribute: bool) -> dict[str, Any]:
        """Turn the key text of coded fields (`coded_fields`) into their values, in place.

        ``values`` are keyed by stored attribute (``by_attribute``) or by field name. Text the
        codec does not read is left for validation to judge.
        """
        for name, codec in self.coded_fields.items():
            key = self.attributes[name] if by_attribute else name
            text = values.get(key)
            if type(text) is str:
                with contextlib.suppress(KeyEncodingError, ValueError):
                    values[key] = codec.decode(text)
        return values

    @cached_property
    def key_types(self) -> dict[str, str]:
        """Key attribute -> its declared type (S, N or B), for the table and its indexes."""
        return dict(self.table.key_attributes)

    @cached_property
    def attributes(self) -> dict[str, str]:
        """Field name -> stored attribute name (the field's alias when it has one)."""
        return {name: info.alias or name for name, info in self.cls.model_fields.items()}

    @cached_property
    def number_checks(self) -> dict[str, tuple[str, NumberCheck]]:
        """By input key (field name and alias), the number check of each field that needs
        one (see `number_fit`)."""
        return field_checks(self.cls)

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
        numbers = self.number_checks.get(name)
        if numbers is not None and value is not None:
            numbers[1](value, numbers[0])  # pydantic would round it silently
        try:
            return self.adapter(name).validate_python(value)
        except Exception as exc:  # pydantic.ValidationError, with its own message
            raise ValidationError(
                "field.invalid",
                f"Value {value!r} is not valid for {self.cls.__name__}.{name}: {exc}",
            ) from exc

    def stored_value(self, name: str, value: Any) -> Any:
        """A valid value of one field as it is stored (see `absence.stored_python`); a coded
        field's as its key text (see `coded_fields`)."""
        codec = self.coded_fields.get(name) if value is not None else None
        if codec is not None:
            return codec.encode(value)
        return stored_python(self.adapter(name), value)

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
            out[tpl.attribute] = checked_key(self, tpl, tpl.render(values))
        return out

    def index_keys(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """Return the secondary-index key attributes whose template fields all have values."""
        out: dict[str, Any] = {}
        primary = {k for k in self.table.index_key_attributes(None) if k is not None}
        for attr, tpl in self.templates.items():
            if attr in primary:
                continue
            rendered = tpl.render(values)
            if rendered is not None:
                out[attr] = checked_key(self, tpl, rendered)
        for attr, name in self.stored_keys.items():
            # The field itself is the key: written as a field, checked as a key; one that is
            # not text is written as its key text, as the key.
            value = values.get(name)
            codec = self.stored_codecs.get(name)
            if codec is not None and value is not None:
                value = out[attr] = codec.encode(value)
            if isinstance(value, (str, bytes)):
                checked_key_value(self, attr, value)
        for index, attrs, limits in self.multi_key_sizes:
            found = {
                a: out.get(a)
                if a in self.templates or a in out
                else values.get(self.stored_keys[a])
                for a in attrs
            }
            if any(v is None for v in found.values()):
                continue  # the item is not in this index
            for role, limit, rule in limits:
                size = sum(to_wire_sized(found[a])[1] for a in role)
                if size > limit:
                    raise KeyEncodingError(
                        rule,
                        f"Key attributes {', '.join(map(repr, role))} of index {index!r} would "
                        f"take {size} bytes together in {self.cls.__name__}; DynamoDB allows at "
                        f"most {limit} bytes for them.",
                        table=self.table.name,
                    )
        return out

    @cached_property
    def multi_key_sizes(
        self,
    ) -> tuple[tuple[str, tuple[str, ...], tuple[tuple[tuple[str, ...], int, str], ...]], ...]:
        """The size limits of the multi-attribute keys this entity binds.

        Per index: its key attributes, and per role the attributes, their limit and its rule.
        DynamoDB limits the partition attributes of such a key together to 2048 bytes and its
        sort attributes together to 1024 bytes, as one key attribute is limited alone.
        """
        out = []
        for gsi in self.table.global_indexes:
            names = self.table.index_key_names(gsi)
            if not gsi.multi_attribute or any(
                a not in self.templates and a not in self.stored_keys for a in names
            ):
                continue
            roles = (
                (gsi.partition_attributes, MAX_PARTITION_KEY_BYTES, "key.partition-max-2048-bytes"),
                (gsi.sort_attributes, MAX_SORT_KEY_BYTES, "key.sort-max-1024-bytes"),
            )
            limits = tuple(
                (tuple(a.name for a in r), n, rule) for r, n, rule in roles if len(r) > 1
            )
            if limits:
                out.append((gsi.name, names, limits))
        return tuple(out)


def _strict_mismatch(annotation: Any, value: Any) -> str | None:
    """Return what a key field value should be when its Python type is the wrong kind."""
    if value is None:
        return None
    base = strip_optional(annotation)
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


def _key_limit(table: Table, attribute: str) -> tuple[int, str]:
    """Return the size limit of a key attribute: a sort key anywhere gets the smaller one."""
    sorts = {lsi.sort_key.name for lsi in table.local_indexes}
    sorts |= {a.name for g in table.global_indexes for a in g.sort_attributes}
    if table.sort_key is not None:
        sorts.add(table.sort_key.name)
    if attribute in sorts:
        return MAX_SORT_KEY_BYTES, "key.sort-max-1024-bytes"
    return MAX_PARTITION_KEY_BYTES, "key.partition-max-2048-bytes"


def checked_key(meta: EntityMeta[EntityModel], tpl: KeyTemplate, value: Any) -> Any:
    """Return a rendered key attribute value, checked against DynamoDB's key rules."""
    return checked_key_value(meta, tpl.attribute, value)


def checked_key_value(meta: EntityMeta[EntityModel], attribute: str, value: Any) -> Any:
    """Return a value of key attribute ``attribute``, checked against DynamoDB's key rules."""
    declared = meta.key_types[attribute]
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
            f"Key attribute {attribute!r} is declared as {declared} but {meta.cls.__name__} "
            f"would write a {type(value).__name__} ({value!r}); DynamoDB rejects the write.",
            table=meta.table.name,
        )
    if declared == "S" and value == "":
        raise ValidationError(
            "key.empty",
            f"Key attribute {attribute!r} of {meta.cls.__name__} would be an empty string, "
            "which DynamoDB does not accept for a key.",
            table=meta.table.name,
        )
    if declared == "B" and len(value) == 0:
        raise ValidationError(
            "key.empty-binary",
            f"Key attribute {attribute!r} of {meta.cls.__name__} would be empty bytes, "
            "which DynamoDB does not accept for a key.",
            table=meta.table.name,
        )
    if declared != "N":
        try:
            size = len(value.encode("utf-8")) if isinstance(value, str) else len(value)
        except UnicodeEncodeError:
            raise KeyEncodingError(
                "key.invalid-unicode",
                f"Key attribute {attribute!r} of {meta.cls.__name__} would be {value!r}, with "
                "a lone surrogate, which UTF-8 cannot encode.",
                table=meta.table.name,
            ) from None
        limit, rule = _key_limit(meta.table, attribute)
        if size > limit:
            raise KeyEncodingError(
                rule,
                f"Key attribute {attribute!r} of {meta.cls.__name__} would be {size} bytes; "
                f"DynamoDB allows at most {limit} bytes for this key.",
                table=meta.table.name,
            )
    return value


def meta_of(cls: type[M] | M) -> EntityMeta[M]:
    """Return the metadata of a bound entity class or instance.

    Anything else (a dict, a key's text, a class that is no entity) is refused, naming what to
    pass (``entity.expected``).
    """
    klass = cls if isinstance(cls, type) else type(cls)
    try:
        meta = klass.__lsiorm__
    except AttributeError:
        raise _not_an_entity(cls) from None
    if meta is None:
        raise ValidationError(
            "entity.unbound",
            f"{klass.__name__} is not bound to a table; declare it with table= and keys=.",
        )
    return meta


def key_only_answer(meta: EntityMeta[EntityModel], names: str) -> str:
    """What to do with a condition on fields its items keep only in their keys, which no
    filter or condition can check: the one answer every refusal of such a condition gives."""
    return (
        f"{meta.cls.__name__} keeps {names} only in its keys (Field(exclude=True)), so no "
        "filter or condition can check it, allow_filter_fallback() included; only a key "
        "condition can: an equality in where(), or a range whose key text sorts as its values "
        f"do. For anything else, read without that condition and compare {names} in your "
        "code: each entity read carries it, parsed from its key. To query it by range, give "
        "it the printable key style (the default) and backfill the keys (see docs/encoding.md)"
    )


def instance_meta(entity: M) -> EntityMeta[M]:
    """Return the metadata of an entity instance, what a write takes.

    The entity's class is refused, naming the instance to build (``entity.class-not-instance``);
    anything else as `meta_of` refuses it.
    """
    if isinstance(entity, type):
        meta: EntityMeta[M] = meta_of(entity)
        cls = meta.cls
        fields = ", ".join(f"{n}=..." for n, i in cls.model_fields.items() if i.is_required())
        raise ValidationError(
            "entity.class-not-instance",
            f"Got the class {cls.__name__} where an entity is written: pass an instance of "
            f"it, {cls.__name__}({fields}), with the values to store.",
            table=meta.table.name,
        )
    return meta_of(entity)


def _not_an_entity(value: object) -> ValidationError:
    what = type(value).__name__ if not isinstance(value, type) else f"the class {value.__name__}"
    if isinstance(value, Mapping):
        return ValidationError(
            "entity.expected",
            f"Got a {what} where an entity class or an entity is expected. To write it, build "
            "the entity from it first (MyEntity(**data) or MyEntity.model_validate(data)); to "
            "name an item by its key, pass the class and the key fields (get(MyEntity, "
            "key=data) or get(MyEntity, field=value)).",
        )
    shown = repr(value) if not isinstance(value, type) else value.__name__
    return ValidationError(
        "entity.expected",
        f"Got {shown} ({what}) where an entity class or an entity is expected: a class declared "
        "with Entity, table= and keys= (get(MyEntity, field=value), update(MyEntity, ...)), or "
        "an instance of one (put(MyEntity(...))).",
    )
