"""The plan of one update: the typed changes asked for, and the actions and guards they become.

An update is planned first, as a list of actions on stored paths (set, set-if-absent, remove,
add, delete, append, prepend) and the conditions it needs. The request's expression text is
rendered from that plan (`lsiorm._requests.update_expression`), and the same plan is
applied to a stored item as DynamoDB would (`lsiorm._requests.update_effect`). Derived key
attributes are part of the plan, so they stay consistent with the fields they are made of in
every form of update.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from decimal import Decimal
from typing import Any, Literal, TypedDict

from pydantic import ValidationError as PydanticValidationError

from lsiorm._conditions import Condition
from lsiorm._model.entity import Entity
from lsiorm._model.entity_meta import EntityMeta, checked_key, checked_key_value
from lsiorm._model.field_types import allows_none
from lsiorm._model.item_encoding import wire_item
from lsiorm._model.template import KeyTemplate
from lsiorm._model.wire import to_wire
from lsiorm._requests.items import wire_key
from lsiorm._requests.paths import Path, Step, kind_of, overlaps, quoted, resolve
from lsiorm.errors import PartialKeyUpdateError, ValidationError

Op = Literal["set", "set_if_absent", "remove", "add", "delete", "append", "prepend"]


@dataclass(frozen=True)
class UpdateSpec:
    """The typed changes of one update, each keyed by a field name or a path into a field.

    ``set`` writes values (None removes a field, or a field of a nested model: None is
    absence), ``remove`` drops
    paths, ``add`` adds to numbers and sets, ``delete`` takes elements out of sets, ``append``
    and ``prepend`` extend lists, and ``if_not_exists`` writes a value only where there is
    none. ``upsert`` creates the item when it is missing, with its derived keys.
    """

    set: Mapping[str, Any]
    remove: tuple[str, ...] = ()
    add: Mapping[str, Any] | None = None
    delete: Mapping[str, Any] | None = None
    append: Mapping[str, Any] | None = None
    prepend: Mapping[str, Any] | None = None
    if_not_exists: Mapping[str, Any] | None = None
    upsert: bool = False

    @property
    def additive(self) -> bool:
        """Whether applying the update twice differs from applying it once.

        Adding to a number and extending a list are; adding or deleting set elements, setting
        and removing are not.
        """
        numbers = any(not isinstance(v, (set, frozenset)) for v in (self.add or {}).values())
        return numbers or bool(self.append) or bool(self.prepend)


class UpdateChanges(TypedDict, total=False):
    """The changes of an update, as the keywords ``Session.update`` and ``dry_run_update``
    take them, each keyed by a field name or a path into a field (see `UpdateSpec`)."""

    set: Mapping[str, Any] | None
    remove: Sequence[str]
    add: Mapping[str, Any] | None
    delete: Mapping[str, Any] | None
    append: Mapping[str, Any] | None
    prepend: Mapping[str, Any] | None
    if_not_exists: Mapping[str, Any] | None


def update_spec(
    set: Mapping[str, Any] | None = None,
    remove: Sequence[str] = (),
    add: Mapping[str, Any] | None = None,
    delete: Mapping[str, Any] | None = None,
    append: Mapping[str, Any] | None = None,
    prepend: Mapping[str, Any] | None = None,
    if_not_exists: Mapping[str, Any] | None = None,
    upsert: bool = False,
) -> UpdateSpec:
    """Return the spec of the keyword arguments an update takes (copies of each mapping)."""
    if isinstance(remove, str):
        remove = (remove,)
    return UpdateSpec(
        dict(set or {}),
        tuple(remove),
        dict(add or {}),
        delete=dict(delete or {}),
        append=dict(append or {}),
        prepend=dict(prepend or {}),
        if_not_exists=dict(if_not_exists or {}),
        upsert=upsert,
    )


@dataclass(frozen=True)
class Action:
    """One change of an UpdateItem: an operation on a stored path, with a wire value."""

    op: Op
    path: tuple[Step, ...]
    value: Any = None
    #: Written by lsiorm, not asked for: a key attribute, the type, the version, a timestamp.
    derived: bool = False


@dataclass(frozen=True)
class Guard:
    """One condition an update needs: the item exists, an attribute is absent or equal."""

    kind: Literal["exists", "absent", "equals", "absent-or-type"]
    attribute: str
    #: The value compared with; for "absent-or-type", None stands for an item with no type
    #: attribute (an entity declared with ``type_attribute=None``).
    value: Any = None
    other: str = ""


@dataclass(frozen=True)
class UpdatePlan:
    """Everything one update sends, before it is rendered to expression text."""

    table: str
    key: dict[str, Any]
    actions: tuple[Action, ...]
    guards: tuple[Guard, ...]
    condition: Condition | None = None
    #: The version this update writes, when it knows it (an update through an instance).
    version: tuple[str, int] | None = None


def plan_update(
    meta: EntityMeta[Entity],
    values: Mapping[str, Any],
    spec: UpdateSpec,
    *,
    condition: Condition | None = None,
    instance: Entity | None = None,
    now: datetime | None = None,
) -> UpdatePlan:
    """Return the plan of an update of the item with key field ``values``; refuse bad input.

    Every key attribute whose template fields change is rewritten. A template that would be
    only partly known after the update is refused (it would leave the index key stale), unless
    ``instance`` supplies the unchanged fields: then their current stored values are made a
    condition of the update, so a stale instance cannot corrupt a key.
    """
    return _Planner(meta, values, spec, instance, now).plan(condition)


@dataclass
class _Planner:
    """One update being planned: what it was asked, and the actions and guards found so far."""

    meta: EntityMeta[Entity]
    values: Mapping[str, Any]
    spec: UpdateSpec
    instance: Entity | None
    now: datetime | None
    actions: list[Action] = field(default_factory=list, init=False)
    guards: list[Guard] = field(default_factory=list, init=False)
    #: Top-level fields: value written for sure (None: removed), or written where absent.
    definite: dict[str, Any] = field(default_factory=dict, init=False)
    conditional: dict[str, Any] = field(default_factory=dict, init=False)
    #: Fields an upsert leaves alone: kept where stored, their defaults where created.
    kept: dict[str, Any] = field(default_factory=dict, init=False)
    touched: set[str] = field(default_factory=set, init=False)

    @property
    def name(self) -> str:
        return self.meta.cls.__name__

    # -- user changes ----------------------------------------------------------------------

    def plan(self, condition: Condition | None) -> UpdatePlan:
        meta, spec = self.meta, self.spec
        if spec.upsert and self.instance is not None:
            raise ValidationError(
                "update.upsert-instance",
                f"An upsert of {self.name} takes the class and key fields, not an instance: an "
                "instance was read from the table already. Use put() to write it whole.",
                table=meta.table.name,
            )
        self.guards.append(
            Guard(
                "absent-or-type",
                meta.table.partition_key.name,
                to_wire(meta.type_name) if meta.typed else None,
                meta.table.type_attribute,
            )
            if spec.upsert
            else Guard("exists", meta.table.partition_key.name)
        )
        self._changes()
        if not self.actions and not spec.upsert:
            raise ValidationError("update.empty", f"Update of {self.name} changes nothing.")
        self._timestamps()
        image = self._creation_image() if spec.upsert else None
        self._key_attributes(image)
        version = self._version()
        self._check_overlaps()
        return UpdatePlan(
            table=meta.table.name,
            key=wire_key(meta, self.values),
            actions=tuple(self.actions),
            guards=tuple(self.guards),
            condition=condition,
            version=version,
        )

    def _changes(self) -> None:
        """Plan the changes the spec asks for, in the order they are rendered."""
        spec = self.spec
        for text, value in spec.set.items():
            self._set(text, value)
        for text in sorted(spec.remove):
            self._remove(text)
        for text, value in (spec.if_not_exists or {}).items():
            self._if_not_exists(text, value)
        collections: tuple[tuple[Op, Mapping[str, Any] | None], ...] = (
            ("add", spec.add),
            ("delete", spec.delete),
            ("append", spec.append),
            ("prepend", spec.prepend),
        )
        for op, changes in collections:
            for text, value in (changes or {}).items():
                self._collection(op, text, value)

    def _path(self, text: str, op: str) -> Path:
        if not isinstance(text, str):
            raise ValidationError(
                "update.path-syntax",
                f"Update of {self.name} names {text!r}; fields and paths are given as text.",
            )
        path = resolve(self.meta, text)
        meta = self.meta
        if path.field in meta.primary_fields:
            raise ValidationError(
                "update.primary-key-field",
                f"Update of {self.name} changes {path.field}, part of the primary key; that "
                "would be a different item. Delete and put instead.",
                table=meta.table.name,
            )
        if path.field == meta.version_field:
            raise ValidationError(
                "update.version-field",
                f"{self.name}.{meta.version_field} is managed by optimistic locking; do not "
                "set it.",
            )
        if path.field in meta.key_fields:
            if path.nested:
                raise ValidationError(
                    "update.nested-key-field",
                    f"Update of {self.name} changes {text!r}, inside {path.field}, which a key "
                    "template reads; the key can only be rewritten from the whole value. Set "
                    f"{path.field} whole.",
                    table=meta.table.name,
                )
            if op in ("add", "delete", "append", "prepend"):
                raise ValidationError(
                    "update.add-key-field" if op == "add" else "update.key-field-operation",
                    f"Cannot {op.upper() if op == 'add' else op} {self.name}.{path.field}: it is "
                    "part of a key template and the new key must be computed client-side. Use "
                    "set= with the new value, and condition=cond("
                    f"{path.field!r}) == <the value it was computed from> (or a versioned "
                    "entity), so that a concurrent change is refused instead of lost.",
                    table=meta.table.name,
                )
        if path.nested and self.spec.upsert:
            raise ValidationError(
                "update.upsert-nested-path",
                f"An upsert of {self.name} names {text!r}, a path inside {path.field}; when the "
                "item is created, that path has no parent to write into. Set the field whole.",
                table=meta.table.name,
            )
        self.touched.add(path.field)
        return path

    def _set(self, text: str, value: Any) -> None:
        path = self._path(text, "set")
        if not path.nested:
            valid = self.meta.validate_field(path.field, value)
            if valid is None:  # None is absence
                self._remove_field(path)
                return
            self.definite[path.field] = valid
            value = valid
        wire = path.encode(self.meta, value)  # validated: None only where the type allows it
        if value is None and path.in_model:  # None is absence in a nested model too
            self.actions.append(Action("remove", path.stored))
            return
        self.actions.append(Action("set", path.stored, wire))

    def _remove(self, text: str) -> None:
        path = self._path(text, "remove")
        if not path.nested:
            self._remove_field(path)
            return
        if path.required:
            raise ValidationError(
                "update.remove-required",
                f"Cannot remove {self.name}.{text}: the nested model requires it.",
            )
        self.actions.append(Action("remove", path.stored))

    def _remove_field(self, path: Path) -> None:
        info = self.meta.cls.model_fields[path.field]
        # None is absence: a required field that allows None may be removed (it reads as None).
        if info.is_required() and not allows_none(info.annotation):
            raise ValidationError(
                "update.remove-required",
                f"Cannot remove {self.name}.{path.field}: the field is required.",
            )
        self.definite[path.field] = None
        self.actions.append(Action("remove", path.stored))

    def _if_not_exists(self, text: str, value: Any) -> None:
        path = self._path(text, "if_not_exists")
        if value is None:
            raise ValidationError(
                "update.if-not-exists-none",
                f"if_not_exists of {self.name}.{text} is None; None is absence, so there is "
                "nothing to write. Give a value, or use remove=.",
            )
        if not path.nested:
            value = self.meta.validate_field(path.field, value)
            self.conditional[path.field] = value
        self.actions.append(Action("set_if_absent", path.stored, path.encode(self.meta, value)))

    def _collection(self, op: Op, text: str, value: Any) -> None:
        path = self._path(text, op)
        kind = kind_of(path.annotation)
        where = f"{self.name}.{text}"
        if op in ("append", "prepend"):
            if kind not in ("list", "any") or isinstance(value, (str, bytes, Mapping)):
                raise ValidationError(
                    "update.list-operation",
                    f"Cannot {op} to {where}: {op} extends a list field with a list of "
                    f"elements (got {type(value).__name__} for a {kind} field).",
                )
            if not isinstance(value, Sequence):
                value = list(value)
            wire = (
                path.encode(self.meta, list(value))
                if kind == "list"
                else path.to_wire(self.meta, list(value))
            )
            if "L" not in wire:
                raise ValidationError(
                    "update.list-operation", f"Cannot {op} to {where}: it is not stored as a list."
                )
            self.actions.append(Action(op, path.stored, wire))
            return
        if isinstance(value, (set, frozenset)):
            if kind not in ("set", "any"):
                raise ValidationError(
                    f"update.{op}-type",
                    f"Cannot {op} a set to {where}, which is not a set field.",
                )
            if not value:
                raise ValidationError(
                    f"update.{op}-type",
                    f"{op} of an empty set to {where}: DynamoDB has no empty set; there is "
                    "nothing to change.",
                )
            wire = (
                path.encode(self.meta, value) if kind == "set" else path.to_wire(self.meta, value)
            )
            self.actions.append(Action(op, path.stored, wire))
            return
        is_number = isinstance(value, (int, float, Decimal)) and not isinstance(value, bool)
        if op == "add" and is_number and kind in ("number", "any"):
            self.actions.append(Action("add", path.stored, to_wire(value)))
            return
        wanted = "a number to a number field, or a set to a set field"
        if op == "delete":
            wanted = "a non-empty set of elements from a set field"
        raise ValidationError(
            f"update.{op}-type",
            f"Cannot {op} {value!r} to {where}: {op} takes {wanted}.",
        )

    # -- what lsiorm derives ---------------------------------------------------------------

    def _timestamps(self) -> None:
        meta = self.meta
        created, updated = meta.created_field, meta.updated_field
        if created is None and updated is None:
            return
        now = self.now or datetime.now(timezone.utc)
        if updated is not None and updated not in self.touched:
            value = meta.validate_field(updated, now)
            self.definite[updated] = value
            self.touched.add(updated)
            self.actions.append(
                Action("set", (meta.attributes[updated],), _field_wire(meta, updated, value), True)
            )
        if created is not None and created not in self.touched and self.spec.upsert:
            value = meta.validate_field(created, now)
            # Like a field the upsert leaves alone: kept where stored, now where created.
            self.kept[created] = value
            self.touched.add(created)
            self.actions.append(
                Action(
                    "set_if_absent",
                    (meta.attributes[created],),
                    _field_wire(meta, created, value),
                    True,
                )
            )

    def _creation_image(self) -> dict[str, Any]:
        """The item an upsert creates when none is stored: the changes over the defaults."""
        meta = self.meta
        entity = self._created_entity()
        stored = wire_item(entity)
        # Untouched fields take their defaults where the item has no value yet.
        for name in meta.cls.model_fields:
            attr = meta.attributes[name]
            if name in self.touched or name == meta.version_field:
                continue
            if name not in meta.primary_fields:
                self.kept[name] = getattr(entity, name)
            if attr not in stored:
                continue
            op: Op = "set" if name in meta.primary_fields else "set_if_absent"
            self.actions.append(Action(op, (attr,), stored[attr], True))
        type_attr = meta.type_attribute
        if type_attr is not None:
            self.actions.append(Action("set", (type_attr,), stored[type_attr], True))
        return stored

    def _created_entity(self) -> Entity:
        """The entity an upsert creates: its key, the values it writes, and the defaults."""
        meta, spec = self.meta, self.spec
        image: dict[str, Any] = dict(self.values)
        image.update(self.kept)
        image.update(self.conditional)
        image.update({k: v for k, v in self.definite.items() if v is not None})
        for mapping in (spec.add, spec.append, spec.prepend):
            for text, value in (mapping or {}).items():
                image[text] = value
        # None is stored as absence: a field that allows None reads None where it is absent,
        # so its default is not written, or it would overwrite a stored None.
        for name in meta.absent_is_none:
            image.setdefault(name, None)
        missing = [
            name
            for name, info in meta.cls.model_fields.items()
            if info.is_required()
            and name not in image
            and name != meta.version_field
            and not allows_none(info.annotation)
        ]
        if missing:
            raise ValidationError(
                "update.upsert-missing-field",
                f"An upsert of {self.name} may create the item, which then needs "
                f"{', '.join(missing)}; give them in set= or if_not_exists=.",
                table=meta.table.name,
            )
        try:
            return meta.cls.model_validate(image)
        except PydanticValidationError as exc:
            raise ValidationError(
                "field.invalid",
                f"An upsert of {self.name} would create an invalid item: {exc}",
                table=meta.table.name,
            ) from exc

    def _key_attributes(self, image: Mapping[str, Any] | None) -> None:
        """Rewrite each secondary key attribute made of fields this update writes.

        ``image`` is the item an upsert creates (None for a plain update): then every key
        attribute is written, so a created item has all of its keys.
        """
        meta = self.meta
        for attr, name in meta.stored_keys.items():
            # A field stored as a multi-attribute index key is that key: checked as one.
            value = self.definite.get(name)
            if isinstance(value, (str, bytes)):
                checked_key_value(meta, attr, value)
        primary_attrs = {k for k in meta.table.index_key_attributes(None) if k is not None}
        for attr, tpl in meta.templates.items():
            if attr in primary_attrs or attr in meta.own_keys:
                continue  # a field that is its key attribute is written as the field
            own = [f for f in tpl.fields if f not in meta.primary_fields]
            if image is None and not set(own) & self.touched:
                continue
            if image is not None and not own:
                # Made of primary key fields only: as the created item has it.
                if attr in image:
                    self.actions.append(Action("set", (attr,), image[attr], True))
                continue
            if any(f in self.definite and self.definite[f] is None for f in own):
                # A field the key needs is gone: the slot becomes sparse, drop the key.
                self.actions.append(Action("remove", (attr,), derived=True))
                continue
            self._rewrite_key(attr, tpl, own)

    def _rewrite_key(self, attr: str, tpl: KeyTemplate, own: Sequence[str]) -> None:
        """Write key attribute ``attr`` from the values its non-primary fields ``own`` get."""
        known, pending, kept = self._template_values(attr, tpl, own)
        # A key made only of fields an upsert leaves alone, or of one field written only
        # where absent, is itself written only where absent: it keeps going with the
        # stored values. Any other mix would need stored values this update cannot see.
        if_absent = bool(pending or kept)
        if (if_absent and len(pending) + len(kept) < len(own)) or len(pending) > 1:
            unknown = pending or kept
            raise self._partial(attr, tpl.source, tpl.fields, unknown, conditional=True)
        if pending and kept:
            raise self._partial(attr, tpl.source, tpl.fields, kept, conditional=True)
        rendered = tpl.render(known)
        if rendered is None:
            if not if_absent:
                self.actions.append(Action("remove", (attr,), derived=True))
            return
        wire = to_wire(checked_key(self.meta, tpl, rendered))
        op: Op = "set_if_absent" if if_absent else "set"
        self.actions.append(Action(op, (attr,), wire, True))

    def _template_values(
        self, attr: str, tpl: KeyTemplate, own: Sequence[str]
    ) -> tuple[dict[str, Any], list[str], list[str]]:
        """Return the values a key template renders from after the update.

        Also which of its fields are written only where absent (pending), and which an
        upsert leaves alone (kept). A field the update does not write is read from the
        instance, whose stored value becomes a guard; without an instance it is refused.
        """
        known: dict[str, Any] = {f: self.values[f] for f in tpl.fields if f not in own}
        pending: list[str] = []
        kept: list[str] = []
        for f in own:
            if f in self.definite:
                known[f] = self.definite[f]
            elif f in self.conditional:
                pending.append(f)
                known[f] = self.conditional[f]
            elif f in self.kept:
                kept.append(f)
                known[f] = self.kept[f]
            elif self.instance is not None:
                known[f] = self._instance_value(f)
            else:
                raise self._partial(attr, tpl.source, tpl.fields, [f])
        return known, pending, kept

    def _instance_value(self, name: str) -> Any:
        assert self.instance is not None
        current = getattr(self.instance, name)
        attr = self.meta.attributes[name]
        if current is None:
            self.guards.append(Guard("absent", attr))
        else:
            self.guards.append(Guard("equals", attr, _field_wire(self.meta, name, current)))
        return current

    def _partial(
        self,
        attr: str,
        source: str,
        fields: Sequence[str],
        missing: Sequence[str],
        *,
        conditional: bool = False,
    ) -> PartialKeyUpdateError:
        changed = ", ".join(sorted(set(fields) & self.touched))
        if conditional:
            why = (
                f"would keep the stored value of {', '.join(missing)} where there is one, which "
                "this update cannot see, so the key could not be rendered; give every field of "
                "the template in set=, or none of them"
            )
        else:
            why = (
                f"also needs {', '.join(missing)}; pass them in set= too (or update through "
                "the instance) so the key can be rewritten instead of left stale"
            )
        return PartialKeyUpdateError(
            "update.partial-key",
            f"Update of {self.name} changes {changed} but key attribute {attr!r} (template "
            f"{source!r}) {why}.",
            table=self.meta.table.name,
        )

    def _version(self) -> tuple[str, int] | None:
        meta = self.meta
        if meta.version_field is None:
            return None
        attr = meta.attributes[meta.version_field]
        if self.instance is not None:
            current = getattr(self.instance, meta.version_field) or 0
            self.guards.append(Guard("equals", attr, to_wire(current)))
            self.actions.append(Action("set", (attr,), to_wire(current + 1), True))
            return attr, current + 1
        self.actions.append(Action("add", (attr,), to_wire(1), True))
        return None

    def _check_overlaps(self) -> None:
        paths = [a.path for a in self.actions]
        for i, a in enumerate(paths):
            for b in paths[i + 1 :]:
                if overlaps(a, b):
                    raise ValidationError(
                        "update.overlapping-paths",
                        f"Update of {self.name} changes {quoted(a)} and {quoted(b)}; one lies "
                        "inside the other (or they are the same), which one UpdateItem cannot "
                        "do. Change the outer one whole, or split the update.",
                        table=self.meta.table.name,
                    )


def _field_wire(meta: EntityMeta[Entity], name: str, value: Any) -> Any:
    return to_wire(meta.stored_value(name, value))
