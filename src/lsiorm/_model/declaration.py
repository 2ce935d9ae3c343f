"""Binding an entity class to its table: its key templates, and every check of its declaration."""

from __future__ import annotations

import typing
from collections.abc import Iterable
from datetime import date, datetime
from decimal import Decimal
from enum import Enum
from typing import Any, Final
from uuid import UUID

from lsiorm._model.beacons import BeaconCodec
from lsiorm._model.encoding import codec_for
from lsiorm._model.entity_meta import EntityMeta, EntityModel, meta_of
from lsiorm._model.field_types import (
    allows_none,
    bare_type,
    is_epoch_field,
    plain_metadata,
    strip_optional,
)
from lsiorm._model.indexes import GlobalIndex, LocalIndex
from lsiorm._model.key_styles import OLD_FORMAT_STYLES, KeyStyle, checked_style
from lsiorm._model.keyspace import intersection_witness
from lsiorm._model.multikey import (
    bind_multi_key_template,
    check_shared_multi_key,
    stored_key_codecs,
    stored_key_fields,
)
from lsiorm._model.protection import check_protected_declaration, field_protection
from lsiorm._model.schema import Table
from lsiorm._model.shards import shard_fields
from lsiorm._model.template import FieldSlot, KeyTemplate, Segment, parse_template
from lsiorm._model.text_codecs import EnumCodec, PlainStrCodec, PrintableStrCodec, StrCodec
from lsiorm.errors import DeclarationError

#: The default of ``Entity(..., type_attribute=)``: the table's type attribute.
TABLE_TYPE_ATTRIBUTE: Final = "<the table's>"


def typed_declaration(cls: type[EntityModel], table: Table, type_attribute: str | None) -> bool:
    """Check ``type_attribute=``; return whether the entity's items store the type attribute."""
    if type_attribute is None:
        return False
    if type_attribute in (TABLE_TYPE_ATTRIBUTE, table.type_attribute):
        return True
    raise DeclarationError(
        "entity.type-attribute",
        f"{cls.__name__} gives type_attribute={type_attribute!r}, but table {table.name!r} "
        f"stores types in {table.type_attribute!r}; declare the name on the Table "
        f"(Table(..., type_attribute={type_attribute!r})), or give None for items that carry "
        "no type attribute.",
    )


def bind(
    cls: type[EntityModel],
    table: Table,
    keys: dict[str, str],
    type_name: str,
    version: str | None,
    key_style: KeyStyle | None = None,
    rekeying_from: KeyStyle | None = None,
    *,
    typed: bool = True,
) -> EntityMeta[EntityModel]:
    """Return what lsiorm knows about ``cls``, after checking its declaration against ``table``.

    ``key_style`` and ``rekeying_from`` are the entity's (None: the table's); ``typed`` is
    False for an entity whose items carry no type attribute. The class is registered in
    ``table.entities`` under ``type_name`` only when every check passes.
    """
    style = checked_style(key_style or table.key_style, f"{cls.__name__} (key_style)")
    old = rekeying_from if rekeying_from is not None else table.rekeying_from
    if old is not None:
        old = checked_style(old, f"{cls.__name__} (rekeying_from)")
    fields = cls.model_fields
    key_attrs = table.key_attributes
    multi = table.multi_key_attributes
    _check_stored_names(cls, table, keys)
    _check_ttl_field(cls, table)
    templates: dict[str, KeyTemplate] = {}
    for attr, source in keys.items():
        if attr not in key_attrs:
            raise DeclarationError(
                "template.unknown-attribute",
                f"{cls.__name__} gives a template for {attr!r}, which is not a key attribute of "
                f"table {table.name!r} (key attributes: {', '.join(sorted(key_attrs))}).",
            )
        if attr in multi:
            templates[attr] = bind_multi_key_template(cls, attr, key_attrs[attr], source)
        else:
            templates[attr] = bind_template(cls, attr, key_attrs[attr], source, style)
    stored_keys = stored_key_fields(cls, table, templates)
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
            if allows_none(fields[fname].annotation):
                raise DeclarationError(
                    "entity.optional-key-field",
                    f"{cls.__name__}.{fname} is part of the primary key ({required.name!r}) and "
                    "so cannot be optional.",
                )
    if version is not None:
        vinfo = fields.get(version)
        if vinfo is None or strip_optional(vinfo.annotation) is not int:
            raise DeclarationError(
                "entity.version-field",
                f"{cls.__name__}: version={version!r} must name an int field of the model.",
            )
        if version in {f for t in templates.values() for f in t.fields} | {*stored_keys.values()}:
            raise DeclarationError(
                "entity.version-field", f"{cls.__name__}: the version field cannot be in a key."
            )
    if type_name in table.entities and table.entities[type_name] is not cls:
        raise DeclarationError(
            "entity.duplicate-type",
            f"Table {table.name!r} already has an entity of type {type_name!r}; "
            "give one of them another type_name.",
        )
    meta = EntityMeta(
        cls,
        table,
        type_name,
        templates,
        version,
        stored_keys=stored_keys,
        key_style=style,
        typed=typed,
        stored_codecs=stored_key_codecs(cls, table, stored_keys),
    )
    if old is not None:
        meta.rekeying_from = old
        meta.old_templates = _old_templates(cls, table, keys, templates, old)
    meta.key_only_fields = _key_only_fields(cls, templates)
    meta.shard_fields = shard_fields(meta)
    for name in meta.shard_fields:
        if name in meta.primary_fields:
            raise DeclarationError(
                "shard.in-primary-key",
                f"{cls.__name__}.{name} is a shard but also part of the primary key; a shard is "
                "derived from the primary key, so it cannot be part of it.",
            )
    _check_overlaps(meta)
    _check_formats(meta)
    _check_coded_keys(meta)
    check_shared_multi_key(meta)
    meta.protected = check_protected_declaration(meta)
    for name, spec in meta.protected.items():
        if spec.encrypted:
            fields[name].repr = False  # an entity's repr never shows the plaintext
    table.entities[type_name] = cls
    return meta


def _key_only_fields(cls: type[EntityModel], templates: dict[str, KeyTemplate]) -> frozenset[str]:
    """Key fields the items do not store as attributes (``Field(exclude=True)``), checked.

    Other tools often keep a value only in a key (``USER#42`` with no ``user_id``): such a
    field is read back from the key text, so that text must give it back alone.
    """
    in_keys = {f for tpl in templates.values() if not tpl.is_direct for f in tpl.fields}
    out = frozenset(
        name for name, info in cls.model_fields.items() if info.exclude is True and name in in_keys
    )
    for name in sorted(out):
        if not any(name in tpl.recoverable for tpl in templates.values()):
            raise DeclarationError(
                "entity.key-only-field",
                f"{cls.__name__}.{name} is excluded from its items, so its value must be read "
                "from a key, but no key text gives it back alone (lowercased text, or plain "
                "text that may hold the separator after it). Store it as an attribute, or "
                "give it the printable key style (the default) in one of its templates.",
            )
    return out


def _check_stored_names(cls: type[EntityModel], table: Table, keys: dict[str, str]) -> None:
    """Refuse a field stored under the type attribute's name or a derived key attribute's."""
    key_attrs = table.key_attributes
    # A field stored under a multi-attribute index key attribute is that key (see .multikey).
    multi = table.multi_key_attributes
    for fname, info in cls.model_fields.items():
        name = info.alias or fname
        if name == table.type_attribute or (
            name in key_attrs
            and name not in multi
            and not _own_key(info.annotation, fname, key_attrs[name], keys.get(name))
        ):
            raise DeclarationError(
                "entity.attribute-collision",
                f"{cls.__name__}.{fname} is stored as {name!r}, the name of a key attribute of "
                f"table {table.name!r}; key attributes are derived from templates, never set by "
                "hand. Rename the field, or make it the key attribute itself: its template "
                f"{{{fname}}} alone, on a text, date, datetime, int, UUID or Enum field for a "
                "string key (stored as its key text) or on a number or bytes field for a number "
                "or binary key.",
            )


def _own_key(annotation: Any, fname: str, attr_type: str, template: str | None) -> bool:
    """Whether a field stored under a key attribute's name is that key itself.

    Tables written by other tools often key items by a plain attribute (``user_id``): the
    field is then the key attribute, its template is the field alone, and the stored text is
    the field's own value (a text field for a string key; number and binary keys hold the
    value itself, as any such template does).
    """
    if template != f"{{{fname}}}":
        return False
    if attr_type != "S":
        return True
    base = strip_optional(annotation)
    if typing.get_origin(base) is typing.Literal:
        return all(isinstance(v, str) for v in typing.get_args(base))
    # Text is stored as it is; a date, datetime, int, UUID or Enum as its key text, which must
    # give the value back alone (`_check_coded_keys`).
    return isinstance(base, type) and issubclass(base, _OWN_KEY_TYPES) and base is not bool


_OWN_KEY_TYPES: Final = (str, Enum, date, int, UUID)


def _check_coded_keys(meta: EntityMeta[EntityModel]) -> None:
    """Refuse a field stored as its own string key whose key text does not give it back."""
    for name, codec in meta.coded_fields.items():
        if not codec.injective:
            raise DeclarationError(
                "entity.attribute-collision",
                f"{meta.cls.__name__}.{name} is stored as its own key attribute "
                f"{meta.attributes[name]!r}, as its key text, but that text does not give its "
                "value back alone (a lettercase folded away); rename the field, or store it "
                "apart from the key.",
            )


def timestamp_field(meta: EntityMeta[EntityModel], option: str, name: str | None) -> str | None:
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
    if name in meta.protected:
        raise DeclarationError(
            "protect.special-field",
            f"{cls_name}.{name} is {meta.protected[name].describe()}; lsiorm sets it "
            f"({option}=), so it cannot be protected.",
        )
    return name


def _check_ttl_field(cls: type[EntityModel], table: Table) -> None:
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
        base = strip_optional(info.annotation)
        if base is int and not any(not plain_metadata(m) for m in info.metadata):
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


def pending_slots(meta: EntityMeta[EntityModel], pending: Iterable[str]) -> frozenset[str]:
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


def _old_templates(
    cls: type[EntityModel],
    table: Table,
    keys: dict[str, str],
    templates: dict[str, KeyTemplate],
    old: KeyStyle,
) -> dict[str, KeyTemplate]:
    """The templates, in style ``old`` for every field, of the attributes whose keys differ."""
    out: dict[str, KeyTemplate] = {}
    for attr, source in keys.items():
        if attr in table.multi_key_attributes:
            continue  # a natively typed copy of one field: no key style applies
        before = bind_template(cls, attr, table.key_attributes[attr], source, old, forced=True)
        if before.form != templates[attr].form:
            out[attr] = before
    return out


def bind_template(
    cls: type[EntityModel],
    attr: str,
    attr_type: str,
    source: str,
    style: KeyStyle = "printable",
    *,
    forced: bool = False,
) -> KeyTemplate:
    """Return the template of key attribute ``attr``, each slot with its field's codec.

    ``style`` is the key style of fields that do not give their own (every field's when
    ``forced``). A text field whose encoding holds the first character of the literal after
    it (see `lsiorm._model.key_styles`) takes that character out of the literal.
    """
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
        base = strip_optional(fields[slots[0].field].annotation)
        allowed: tuple[type, ...] = (int, float, Decimal) if attr_type == "N" else (bytes,)
        if not (isinstance(base, type) and issubclass(base, allowed)) or base is bool:
            raise DeclarationError(
                "template.direct-key",
                f"{cls.__name__}.{slots[0].field} is {base!r}, which cannot be stored in the "
                f"{attr_type} key attribute {attr!r}.",
            )
        return KeyTemplate(attr, attr_type, source, tuple(segments))
    python_patterns = cls.model_config.get("regex_engine") == "python-re"
    for i, seg in enumerate(segments):
        if not isinstance(seg, FieldSlot):
            continue
        nxt = segments[i + 1] if i + 1 < len(segments) else None
        info = fields[seg.field]
        beacon = _beacon_codec(cls, seg)
        if beacon is not None:
            segments[i] = FieldSlot(seg.field, seg.spec, beacon)
            continue
        # A text field that is the key attribute itself holds its value as it is (see below).
        itself = style == "printable" and _is_key_itself(info, attr, source, seg.field)
        codec = codec_for(
            info.annotation,
            spec=seg.spec,
            metadata=info.metadata,
            field_name=f"{cls.__name__}.{seg.field}",
            following=None if nxt is None else nxt if isinstance(nxt, str) else "",
            style="plain" if itself else style,
            python_patterns=python_patterns,
            forced=forced,
        )
        if itself and codec.style == "plain":
            codec.why = (
                "the field is the key attribute itself (stored under its name), so the key "
                "holds its value as it is, as other tools read it"
            )
        if isinstance(nxt, FieldSlot) and not codec.prefix_free:
            raise DeclarationError(
                "template.ambiguous-fields",
                f"{cls.__name__}: in template {source!r}, {{{seg.field}}} has a variable-length "
                "encoding and is followed directly by another field; put a separator between "
                "them, like '{a}#{b}'.",
            )
        segments[i] = FieldSlot(seg.field, seg.spec, codec)
    return KeyTemplate(attr, attr_type, source, _absorb_terminators(segments))


def _beacon_codec(cls: type[EntityModel], slot: FieldSlot) -> BeaconCodec | None:
    """The codec of an encrypted field with a beacon (None for any other field)."""
    info = cls.model_fields[slot.field]
    attribute = info.serialization_alias or info.alias or slot.field
    spec = field_protection(attribute, info.annotation, info.metadata)
    if spec is None or not spec.encrypted or spec.beacon_bits is None:
        return None
    if slot.spec:
        raise DeclarationError(
            "template.format-spec",
            f"{cls.__name__}.{slot.field} is encrypted: its key holds a beacon, which takes "
            f"no format spec (got {slot.spec!r}).",
        )
    return BeaconCodec(attribute, spec.beacon_bits, field_name=f"{cls.__name__}.{slot.field}")


def _is_key_itself(info: Any, attr: str, source: str, field: str) -> bool:
    """Whether a field is the key attribute itself: its template is ``{field}`` alone and the
    field is stored under the attribute's name.

    Such a key is the item's only copy of the value, which other tools read as the value, so
    in the printable style it holds the text as it is (the plain style): it is the whole key,
    so its text order is the order of the values.
    """
    return source == f"{{{field}}}" and (info.alias or field) == attr


def _absorb_terminators(segments: list[Segment]) -> tuple[Segment, ...]:
    """Take each literal's first character out where the field before it writes it."""
    out: list[Segment] = []
    for seg in segments:
        if isinstance(seg, str) and out and isinstance(out[-1], FieldSlot):
            codec = out[-1].codec
            if codec is not None and codec.holds_literal:
                assert seg[:1] == codec.terminator
                seg = seg[1:]
                if not seg:
                    continue
        out.append(seg)
    return tuple(out)


def _sort_roles(table: Table) -> list[tuple[str, str | None, LocalIndex | GlobalIndex | None]]:
    """Return (partition attribute, sort attribute, index) for every key schema of the table."""
    roles: list[tuple[str, str | None, LocalIndex | GlobalIndex | None]] = []
    pk = table.partition_key.name
    if table.sort_key is not None:
        roles.append((pk, table.sort_key.name, None))
    for lsi in table.local_indexes:
        roles.append((pk, lsi.sort_key.name, lsi))
    for gsi in table.global_indexes:
        if not gsi.multi_attribute:  # multi-attribute keys have no namespaces (see .multikey)
            roles.append((*table.index_key_attributes(gsi), gsi))
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


def _check_overlaps(meta: EntityMeta[EntityModel]) -> None:
    """Refuse two entity types whose keys queries could not tell apart.

    Hierarchies (``ORDER#{order_id}`` next to ``ORDER#{order_id}#ITEM#{line:03d}``) are
    allowed: a query that reads the other type's items too filters on the type attribute.
    Refused are two types that could write the same primary key (one item would overwrite
    the other), and shared namespaces on an index that does not project the type attribute
    (no filter could tell the types apart there).
    """
    table = meta.table
    for other_cls in table.entities.values():
        other = meta_of(typing.cast("type[EntityModel]", other_cls))
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
                if pk_same is not None and sk_same is not None and not (meta.typed and other.typed):
                    untyped = meta.cls.__name__ if not meta.typed else other.cls.__name__
                    raise DeclarationError(
                        "entity.indistinguishable",
                        f"{meta.cls.__name__} and {other.cls.__name__} can both have an item "
                        f"with the key ({pk_same!r}, {sk_same!r}), and {untyped} items carry "
                        "no type attribute, so neither a read nor `lsiorm adopt` could tell "
                        "which type such an item is (and one would overwrite the other). Make "
                        "the key templates disjoint (distinct literal prefixes), or store the "
                        "type attribute in both types' items.",
                    )
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


def _key_roles(table: Table) -> list[tuple[str, str | None, LocalIndex | GlobalIndex | None]]:
    """Return (partition attribute, sort attribute, index) for every key schema whose keys
    are derived from templates (not multi-attribute GSIs)."""
    roles: list[tuple[str, str | None, LocalIndex | GlobalIndex | None]] = [
        (table.partition_key.name, table.sort_key.name if table.sort_key else None, None)
    ]
    pk = table.partition_key.name
    roles.extend((pk, lsi.sort_key.name, lsi) for lsi in table.local_indexes)
    roles.extend(
        (*table.index_key_attributes(gsi), gsi)
        for gsi in table.global_indexes
        if not gsi.multi_attribute
    )
    return roles


def _format_of(slot: FieldSlot) -> str | None:
    """The key format a text field writes: "printable", "U+0000" (the readable and exact
    styles) or None (plain text, and forms that are the same in every style)."""
    codec = slot.codec
    inner = codec.inner if isinstance(codec, EnumCodec) else codec
    if not isinstance(inner, (StrCodec, PlainStrCodec, PrintableStrCodec)):
        return None
    assert codec is not None
    if codec.style == "printable":
        return "printable"
    return "U+0000" if codec.style in OLD_FORMAT_STYLES else None


def _check_formats(meta: EntityMeta[EntityModel]) -> None:
    """Refuse an index whose keys would hold text in the printable style and in the readable or
    exact style: one index holds one key format, so that keys a 0.2 development version wrote
    are never taken for printable ones, nor the other way round (see docs/encoding.md)."""
    table = meta.table
    metas = [meta] + [
        meta_of(typing.cast("type[EntityModel]", cls))
        for cls in table.entities.values()
        if cls is not meta.cls
    ]
    for pk_attr, sk_attr, index in _key_roles(table):
        seen: dict[str, tuple[str, str, str, str]] = {}
        for m in metas:
            for attr in [a for a in (pk_attr, sk_attr) if a is not None]:
                tpl = m.templates.get(attr)
                if tpl is None or tpl.is_direct:
                    continue
                for slot in tpl.slots:
                    found = _format_of(slot)
                    if found is not None and slot.codec is not None:
                        seen.setdefault(found, (m.cls.__name__, slot.field, attr, slot.codec.style))
        if len(seen) < 2:
            continue
        (p_cls, p_field, p_attr, _) = seen["printable"]
        (o_cls, o_field, o_attr, o_style) = seen["U+0000"]
        where = f"index {index.name!r}" if index is not None else "the primary key"
        raise DeclarationError(
            "template.mixed-formats",
            f"Table {table.name!r} would hold two key formats in {where}: {p_cls}.{p_field} in "
            f"{p_attr!r} has the printable key style, {o_cls}.{o_field} in {o_attr!r} the "
            f"{o_style} style (a format of lsiorm 0.2's development versions, which ends text with "
            "U+0000). One index holds one format. For a table written in that style, declare it "
            f"on the table (Table(..., key_style={o_style!r})); for a new table, "
            "give every entity the printable style (the default). To move a table to printable "
            "keys, see docs/migrations.md.",
        )
