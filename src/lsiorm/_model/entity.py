"""Entity: the base class of Pydantic models bound to a table through key templates.

Also the public functions over entities: `decode_item`, `shard_value` and
`key_templates`. The machinery under them works with `EntityModel`, which
Entity derives from, so that nothing below this module names Entity.
"""

from __future__ import annotations

import inspect
import types
import typing
import weakref
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, TypeAlias, cast

from pydantic import model_validator
from typing_extensions import Self

from lsiorm._model.declaration import (
    TABLE_TYPE_ATTRIBUTE,
    bind,
    pending_slots,
    timestamp_field,
    typed_declaration,
)
from lsiorm._model.entity_meta import EntityMeta, EntityModel, meta_of
from lsiorm._model.item_decoding import item_decoder
from lsiorm._model.item_encoding import build_item, encode_entity, wire_item
from lsiorm._model.item_types import entity_class
from lsiorm._model.key_styles import KeyStyle
from lsiorm._model.schema import Table
from lsiorm._model.shards import Shard, shard_for, shard_of
from lsiorm.errors import DeclarationError, ValidationError

# lsiorm 0.1's ``lsiorm.entity`` gives this module (see lsiorm._compat): the names it exported
# stay importable from here until that path goes.
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


#: The declaration of each Entity subclass being created, until pydantic has built its fields.
_DECLARED: weakref.WeakKeyDictionary[type[Entity], _Declaration] = weakref.WeakKeyDictionary()
_Declaration: TypeAlias = "Callable[[type[Entity]], None]"
#: The entities `Entity.bound_to` declared, per table: the same binding gives the same class.
_BOUND: weakref.WeakKeyDictionary[Table, dict[tuple[Any, ...], type[Entity]]] = (
    weakref.WeakKeyDictionary()
)


class Entity(EntityModel):
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
    ``type_attribute=None`` declares items that carry no type attribute, as tables written by
    other tools often hold: lsiorm writes none for them and tells them apart by their keys
    (see docs/existing-tables.md).
    ``key_style`` is how key fields are written where a field's `KeyFormat` does not say
    (default: the table's, ``"printable"`` unless it says otherwise; see docs/encoding.md).
    ``rekeying_from`` names the key style the entity's items may still carry while they are
    moved to the declared one (default: the table's; see docs/migrations.md).
    """

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
        type_attribute: str | None = TABLE_TYPE_ATTRIBUTE,
        key_style: KeyStyle | None = None,
        rekeying_from: KeyStyle | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init_subclass__(**kwargs)

        # Binding reads the model's fields, which pydantic builds after this hook: it runs in
        # __pydantic_init_subclass__, with the keywords taken here.
        def declare(model: type[Entity]) -> None:
            if table is None:
                if keys is not None:
                    raise DeclarationError(
                        "entity.needs-table", f"{model.__name__} gives keys= but no table=."
                    )
                model.__lsiorm__ = None
                return
            # Bound first: the checks below read the class's meta.
            typed = typed_declaration(model, table, type_attribute)
            model.__lsiorm__ = meta = bind(
                model,
                table,
                dict(keys or {}),
                type_name or model.__name__,
                version,
                key_style,
                rekeying_from,
                typed=typed,
            )
            meta.pending = pending_slots(meta, pending)
            meta.created_field = timestamp_field(meta, "created_at", created_at)
            meta.updated_field = timestamp_field(meta, "updated_at", updated_at)

        _DECLARED[cls] = declare

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        others = {k: v for k, v in kwargs.items() if k not in _DECLARATION_KEYWORDS}
        super().__pydantic_init_subclass__(**others)
        _DECLARED.pop(cls)(cls)

    @classmethod
    def bound_to(
        cls,
        table: Table,
        keys: Mapping[str, str],
        *,
        type_name: str | None = None,
        type_attribute: str | None = TABLE_TYPE_ATTRIBUTE,
        key_style: KeyStyle | None = None,
        version: str | None = None,
    ) -> type[Self]:
        """This entity's fields declared on ``table`` with key templates ``keys``: for a table
        known only at run time (its name, or even its key attributes' names, come from
        configuration, a tenant or a test).

        ``cls`` declares fields only (no ``table=``); the class returned is a subclass of it,
        declared as ``class X(cls, table=table, keys=keys, ...)`` would be, and checked the
        same way. The same arguments on the same `Table` give the same class each time, so a
        binding made per call is declared once. The other keywords are those of a declaration
        (see `Entity`): ``version`` names the int field of optimistic locking. A bound class
        is not importable by name, so a key job that runs on an executor cannot take it; its
        items are read and written like any other entity's.
        """
        if cls.__lsiorm__ is not None:
            raise DeclarationError(
                "entity.bound-twice",
                f"{cls.__name__} is declared on table {cls.__lsiorm__.table.name!r} already; "
                "bind a class that declares fields only (no table=).",
            )
        binding = (cls, tuple(sorted(keys.items())), type_name, type_attribute, key_style, version)
        bound = _BOUND.setdefault(table, {})
        found = bound.get(binding)
        if found is None:
            declaration = {
                "table": table,
                "keys": dict(keys),
                "type_name": type_name,
                "type_attribute": type_attribute,
                "key_style": key_style,
                "version": version,
            }
            found = types.new_class(cls.__name__, (cls,), declaration)
            found.__module__, found.__qualname__ = cls.__module__, cls.__qualname__
            bound[binding] = found
        return cast("type[Self]", found)

    @model_validator(mode="after")
    def _fill_shards(self) -> Self:
        # A shard left out (None) is derived here, so the instance carries what is stored.
        meta = type(self).__lsiorm__
        if meta is not None:
            for name in meta.shard_fields:
                if getattr(self, name) is None:
                    values = {f: getattr(self, f) for f in meta.primary_fields}
                    self.__dict__[name] = shard_for(meta, name, values)
        return self

    def to_item(self) -> dict[str, Any]:
        """Return the item as python values: fields, derived key attributes and the type."""
        return build_item(self)

    def to_wire(self) -> dict[str, Any]:
        """Return the item in DynamoDB wire format, checked against the 400 KB limit."""
        return wire_item(self)


#: The class keywords of an entity declaration (``table=``, ``keys=``, ...).
_DECLARATION_KEYWORDS: Final = frozenset(inspect.signature(Entity.__init_subclass__).parameters) - {
    "kwargs"
}


def decode_item(
    table: Table,
    wire: Mapping[str, Mapping[str, Any]],
    only: Iterable[type[Entity]] | None = None,
) -> Entity | None:
    """Return a wire item as the entity its type attribute names, or its keys when it has none.

    An item without the type attribute is of the entity declared with ``type_attribute=None``
    whose key templates parse its primary key. Items of a type not in ``only`` (when given) or
    of no declared type give None; an item whose keys several such entities parse raises
    ValidationError (rule ``item.ambiguous-type``). Only the attributes the model reads are
    decoded; a malformed attribute it ignores raises nothing. An item of key attributes alone
    (a KEYS_ONLY stream image) raises ValidationError (``stream.keys-only``): it does not hold
    the entity's fields (nor, without the type attribute, say which entity it is).
    """
    found = entity_class(table, wire, only)
    keys_only = table.type_attribute not in wire and _keys_only(table, wire)
    if found is None and keys_only:
        raise _keys_only_image(
            table,
            wire,
            f"the {table.type_attribute!r} attribute that names "
            "its entity or the fields to build it from",
        )
    if found is None:
        return None
    # A table's entities are the classes Entity's subclass hook bound to it (see bind).
    try:
        return item_decoder(typing.cast("type[Entity]", found))(wire)
    except ValidationError as exc:  # keys alone of an entity without a type attribute
        if not keys_only or exc.rule != "item.invalid":
            raise
        missing = f"the other fields of {found.__name__}"
        raise _keys_only_image(table, wire, missing) from exc


def _keys_only_image(table: Table, wire: Mapping[str, Any], without: str) -> ValidationError:
    keys = ", ".join(sorted(wire))
    return ValidationError(
        "stream.keys-only",
        f"This item of table {table.name!r} holds only its key attributes ({keys}), as a "
        f"KEYS_ONLY stream image does, without {without}. Give the stream the view type "
        "NEW_IMAGE (or NEW_AND_OLD_IMAGES), or read the item by its key.",
        table=table.name,
    )


def decode_stored(
    table: Table,
    wire: Mapping[str, Mapping[str, Any]],
    only: Iterable[type[Entity]] | None = None,
) -> Entity | None:
    """`decode_item` for an item read from the table itself: an item of no declared type,
    key attributes alone included (another writer's), gives None."""
    found = entity_class(table, wire, only)
    if found is None:
        return None
    return item_decoder(typing.cast("type[Entity]", found))(wire)


def _keys_only(table: Table, wire: Mapping[str, Any]) -> bool:
    """Whether an item holds nothing but (some of) the table's primary key attributes."""
    primary = {k for k in table.index_key_attributes(None) if k is not None}
    return bool(wire) and set(wire) <= primary


def shard_value(entity_cls: type[Entity], field_name: str, values: Mapping[str, Any]) -> int:
    """Return the shard (1..count) of an item with these field values.

    Deterministic shards hash the item's primary key with CRC-32, so the same item always lands
    on the same shard in every process; random shards ignore ``values``.
    """
    return shard_for(meta_of(entity_cls), field_name, values)


def key_templates(cls: type[Entity]) -> dict[str, str]:
    """Return the key templates an entity class declares, by attribute name.

    ``{"PK": "FORUM#{forum}", "SK": "THREAD#{subject}", "LSI1SK": "..."}``: useful to list which
    entity types write each index slot of a table.
    """
    return {attr: tpl.source for attr, tpl in meta_of(cls).templates.items()}
