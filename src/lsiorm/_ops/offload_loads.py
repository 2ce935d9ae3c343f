"""Loading lazy offloaded values: ``session.load(entity)``, written once for both sessions.

A field declared ``Offloaded(eager=False)`` is read as an `OffloadedRef` (the object's place,
digest and size; see `lsiorm._model.offloaded_ref`). `load` fetches each such object from S3,
checks its digest and size, opens it (decrypted under the table, item key and attribute it was
read with, when encrypted) and returns a copy of the entity holding the values. Misuse is
refused before any request, with the rule named.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from lsiorm._model.entity_meta import EntityModel, meta_of
from lsiorm._model.offloaded_ref import OffloadedRef
from lsiorm._model.wire import from_wire
from lsiorm._ops.pipeline import Context
from lsiorm._ops.protection import open_reference
from lsiorm._ops.steps import Operation
from lsiorm.errors import ConfigurationError, ValidationError

__all__ = ["load"]

E = TypeVar("E", bound=EntityModel)


def _lazy_fields(cls: type[EntityModel], fields: Sequence[str]) -> list[str]:
    """The fields to load: those named (each must be a lazy offloaded field), or every lazy
    offloaded field of the class."""
    meta = meta_of(cls)
    lazy = [name for name, spec in meta.protected.items() if spec.lazy]
    if not fields:
        return lazy
    for name in fields:
        if name not in cls.model_fields:
            raise ValidationError(
                "load.unknown-field", f"{cls.__name__} has no field {name!r} to load."
            )
        if name not in lazy:
            raise ValidationError(
                "load.not-lazy",
                f"{cls.__name__}.{name} is not declared Offloaded(eager=False), so reads "
                "already hold its value; there is nothing to load.",
            )
    return list(dict.fromkeys(fields))


def load(ctx: Context, entity: E, fields: Sequence[str] = ()) -> Operation[E]:
    """The entity with its unloaded lazy values (those of ``fields``, or all) fetched and
    opened; the entity itself when none is unloaded."""
    cls = type(entity)
    meta = meta_of(cls)
    names = _lazy_fields(cls, fields)
    refs = {n: v for n in names if isinstance(v := getattr(entity, n), OffloadedRef)}
    if not refs:
        return entity
    protection = ctx.protection
    if protection is None:
        raise ConfigurationError(
            "keyring.none",
            f"Loading {cls.__name__}.{next(iter(refs))} fetches an S3 object: use a session "
            "with the keyring the entity was read with (Session(keyring=...)).",
        )
    for name, ref in refs.items():
        spec = meta.protected[name]
        if ref.binding.table != meta.table.name or ref.binding.attribute != spec.attribute:
            raise ValidationError(
                "offload.other-field",
                f"{cls.__name__}.{name} holds the reference of {ref.binding.describe()}, "
                f"not of an attribute of {meta.table.name!r} it stores; it was copied from "
                "another entity. Load it with the entity it was read with.",
                table=meta.table.name,
            )
    changes = {}
    for name, ref in refs.items():
        av = yield from open_reference(ctx.retry, protection, ref, meta.protected[name])
        changes[name] = meta.validate_field(name, from_wire(av), strict=False)
    return entity.model_copy(update=changes)
