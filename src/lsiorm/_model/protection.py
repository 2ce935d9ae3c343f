"""Protected fields: the Encrypted, Compressed and Offloaded markers, and what a table protects.

A field is declared protected with a marker in its annotation, as `EpochSeconds` and `Shard`
are declared::

    email: Annotated[str, Encrypted(beacon_bits=16)]
    body: Annotated[str, Compressed(), Offloaded(threshold=32_000)]

Its value is then stored as one opaque binary attribute (the envelope of
`lsiorm._model.sealing`): compressed, encrypted, or held in S3 behind a reference. The session
seals values on their way to DynamoDB and opens them on their way back (`lsiorm._ops.protection`),
so everything above the request path (updates, batches, transactions, the key jobs, the
migration) sees plain values.

The request path knows an item's attributes, not its entity type, so protection is a property of
a table's *attribute*: every entity of a table that stores an attribute must protect it the same
way (rule ``protect.attribute-conflict``). `table_protection` gives that map.

The refusals a declaration meets are here too: a protected field cannot be the value of a key
template (an encrypted one only through its beacon), nor be the version, a timestamp or the TTL
attribute.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from lsiorm._model.field_protection import (
    Compressed,
    Encrypted,
    FieldProtection,
    Offloaded,
    field_protection,
    protected_fields,
)
from lsiorm.errors import DeclarationError, ValidationError

if TYPE_CHECKING:
    from lsiorm._model.entity_meta import EntityMeta, EntityModel
    from lsiorm._model.schema import Table

__all__ = [
    "Compressed",
    "Encrypted",
    "FieldProtection",
    "Offloaded",
    "check_condition_field",
    "check_protected_declaration",
    "check_where_field",
    "entity_protection",
    "field_protection",
    "protect_like",
    "table_protection",
]


def check_protected_declaration(meta: EntityMeta[EntityModel]) -> dict[str, FieldProtection]:
    """Check an entity's protected fields against its declaration; return them by field.

    Refused: a protected field in a key template (an encrypted one with a beacon is allowed in
    a text template, where its beacon is written), stored as a multi-attribute key, or used as
    the version, a timestamp, a shard or the TTL attribute; and an attribute that another
    entity of the table protects otherwise (``protect.attribute-conflict``).
    """
    cls = meta.cls
    fields = protected_fields(cls)
    if not fields:
        _check_table_conflicts(meta, fields)
        return fields
    for name, spec in fields.items():
        where = f"{cls.__name__}.{name}"
        for tpl in meta.templates.values():
            if name not in tpl.fields:
                continue
            if not spec.encrypted:
                raise DeclarationError(
                    "offload.in-key" if spec.offloaded else "compressed.in-key",
                    f"{where} is {spec.describe()}, so its stored value is opaque bytes; it "
                    f"cannot stand in key template {tpl.source!r} of {tpl.attribute!r}.",
                )
            if spec.beacon_bits is None:
                raise DeclarationError(
                    "encrypted.in-key",
                    f"{where} is encrypted, so its value cannot stand in key template "
                    f"{tpl.source!r} of {tpl.attribute!r}: the key would hold the plaintext. "
                    "Declare a beacon (Encrypted(beacon_bits=16)) to find items by equality "
                    "on it; the key then holds the beacon.",
                )
            if tpl.is_direct or tpl.attribute in meta.table.multi_key_attributes:
                raise DeclarationError(
                    "encrypted.in-key",
                    f"{where} is encrypted; its beacon is text, so it cannot be the number or "
                    f"binary key attribute {tpl.attribute!r}.",
                )
            if spec.offloaded or spec.compression is not None:
                raise DeclarationError(
                    "encrypted.in-key",
                    f"{where} is {spec.describe()}; a field in a key template can be encrypted "
                    "with a beacon, but not compressed or offloaded.",
                )
            if name in meta.primary_fields:
                raise DeclarationError(
                    "encrypted.in-primary-key",
                    f"{where} is encrypted; its beacon may stand in an index key (a GSI or "
                    "LSI), not in the primary key, where two values with one beacon would "
                    "be one item.",
                )
        if name in meta.stored_keys.values():
            raise DeclarationError(
                "encrypted.in-key",
                f"{where} is {spec.describe()}, so it cannot be stored as a key attribute.",
            )
        roles = {
            meta.version_field: "the version field",
            meta.created_field: "created_at",
            meta.updated_field: "updated_at",
        }
        if name in roles:
            raise DeclarationError(
                "protect.special-field",
                f"{where} is {spec.describe()}; it cannot also be {roles[name]}.",
            )
        if name in meta.shard_fields:
            raise DeclarationError(
                "protect.special-field", f"{where} is {spec.describe()}; it cannot be a shard."
            )
        if meta.table.ttl_attribute == spec.attribute:
            raise DeclarationError(
                "protect.special-field",
                f"{where} is stored as the table's TTL attribute, which DynamoDB must read as "
                "a number; it cannot be protected.",
            )
        if spec.attribute in meta.table.key_attributes or spec.attribute == (
            meta.table.type_attribute
        ):
            raise DeclarationError(
                "protect.special-field",
                f"{where} is stored as {spec.attribute!r}, a key or the type attribute.",
            )
    _check_table_conflicts(meta, fields)
    return fields


def _check_table_conflicts(
    meta: EntityMeta[EntityModel], fields: Mapping[str, FieldProtection]
) -> None:
    """Refuse an attribute that another entity of the table stores too, protected otherwise."""
    mine = {spec.attribute: spec for spec in fields.values()}
    stored = set(meta.attributes.values())
    for other in meta.table.entities.values():
        other_meta = getattr(other, "__lsiorm__", None)
        if other is meta.cls or other_meta is None:
            continue
        theirs = {spec.attribute: spec for spec in other_meta.protected.values()}
        for attribute in sorted(stored & set(other_meta.attributes.values())):
            a, b = mine.get(attribute), theirs.get(attribute)
            if a != b:
                raise DeclarationError(
                    "protect.attribute-conflict",
                    f"{meta.cls.__name__} and {other.__name__} both store {attribute!r} in "
                    f"table {meta.table.name!r}, but protect it differently "
                    f"({a.describe() if a else 'plain'} against "
                    f"{b.describe() if b else 'plain'}); the request path seals an attribute "
                    "by its name, so every entity must declare it alike.",
                )


#: Per table's entity registry: the protection of each attribute, and the registry's size then.
_BY_TABLE: dict[int, tuple[dict[str, Any], int, dict[str, FieldProtection]]] = {}


#: Tables that protect as another declaration does (a migration's source: `protect_like`).
_LIKE: dict[int, tuple[dict[str, Any], Table]] = {}


def protect_like(table: Table, declared: Table) -> None:
    """Have ``table`` (a declaration that only names a live table, such as a migration's
    source) protect its attributes as ``declared`` does."""
    _LIKE[id(table.entities)] = (table.entities, declared)


def table_protection(table: Table) -> Mapping[str, FieldProtection]:
    """Attribute -> protection, over every entity of the table (renamed copies share it)."""
    entities = table.entities
    like = _LIKE.get(id(entities))
    if like is not None and like[0] is entities:
        return table_protection(like[1])
    cached = _BY_TABLE.get(id(entities))
    if cached is not None and cached[0] is entities and cached[1] == len(entities):
        return cached[2]
    out: dict[str, FieldProtection] = {}
    for cls in entities.values():
        meta = getattr(cls, "__lsiorm__", None)
        if meta is not None:
            for spec in meta.protected.values():
                out[spec.attribute] = spec
    _BY_TABLE[id(entities)] = (entities, len(entities), out)
    return out


def entity_protection(cls: type[Any]) -> Mapping[str, FieldProtection]:
    """Field name -> protection of a bound entity class (empty for a plain one)."""
    meta = getattr(cls, "__lsiorm__", None)
    return {} if meta is None else meta.protected


def check_condition_field(meta: EntityMeta[Any], name: str, operator: object) -> None:
    """Refuse a condition or filter on a protected field, but for (not_)exists."""
    spec = entity_protection(meta.cls).get(name)
    if spec is None:
        return
    if type(operator).__name__ in ("Exists", "NotExists"):
        return
    rule = "encrypted.condition" if spec.encrypted else "protect.condition"
    raise ValidationError(
        rule,
        f"{meta.cls.__name__}.{name} is {spec.describe()}: DynamoDB holds only its stored "
        "bytes, so a condition or filter cannot compare its value (exists() and not_exists() "
        "can). Find items by a beacon in where(), or check the value after reading.",
        table=meta.table.name,
    )


def check_where_field(meta: EntityMeta[Any], name: str, operators: Iterable[object]) -> None:
    """Refuse a ``where()`` on a protected field, but an equality on a field with a beacon."""
    spec = entity_protection(meta.cls).get(name)
    if spec is None:
        return
    where = f"{meta.cls.__name__}.{name}"
    if not spec.encrypted or spec.beacon_bits is None:
        raise ValidationError(
            "encrypted.no-beacon" if spec.encrypted else "protect.condition",
            f"{where} is {spec.describe()}, and no key holds a beacon of it, so no read can "
            "find items by its value; declare Encrypted(beacon_bits=...) and put the field in "
            "an index key template.",
            table=meta.table.name,
        )
    for operator in operators:
        if type(operator).__name__ != "Compare" or getattr(operator, "op", None) != "=":
            raise ValidationError(
                "encrypted.range",
                f"{where} is encrypted: its beacon keeps equality only, so where() can ask "
                "it = a value, not a range or a prefix.",
                table=meta.table.name,
            )
        if getattr(operator, "value", None) is None:
            raise ValidationError(
                "encrypted.range",
                f"{where} is encrypted: where() needs a value to compare it with, not None.",
                table=meta.table.name,
            )
