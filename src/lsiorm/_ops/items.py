"""Single-item operations (put, get, update, delete): send the built request, type the outcome.

Each operation generator sends its request through the pipeline and decodes the response; the
sync and async sessions run the very same generators.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from lsiorm._conditions import (
    Condition,
)
from lsiorm._model.entity import Entity, EntityMeta, decode_item, meta_of
from lsiorm._ops.pipeline import Context, call
from lsiorm._ops.steps import Operation
from lsiorm._requests.items import (
    UpdateSpec,
    delete_request,
    get_request,
    put_request,
    update_request,
)
from lsiorm.errors import (
    ConditionFailedError,
    NotFoundError,
    StaleVersionError,
)

E = TypeVar("E", bound=Entity)


def put(
    ctx: Context, entity: E, *, create_only: bool = False, condition: Condition | None = None
) -> Operation[E]:
    """Write an entity; return it as stored."""
    meta = meta_of(entity)
    params, stored = put_request(entity, create_only=create_only, condition=condition)
    try:
        yield from call(ctx, "PutItem", params, (meta.table,))
    except ConditionFailedError as exc:
        if meta.version_field is not None and (getattr(entity, meta.version_field) or 0) > 0:
            raise _stale(meta, exc, getattr(entity, meta.version_field)) from exc
        raise
    return cast("E", stored)  # put_request returns a copy of the same class


def _stale(meta: EntityMeta, exc: ConditionFailedError, expected: Any) -> StaleVersionError:
    return StaleVersionError(
        f"{meta.cls.__name__} was changed by someone else: expected stored "
        f"{meta.version_field}={expected}",
        code=exc.code,
        operation=exc.operation,
        table=exc.table,
        key=exc.key,
        response=exc.response,
    )


def get(
    ctx: Context,
    cls: type[E],
    values: Mapping[str, Any],
    *,
    consistent: bool = False,
    required: bool = False,
) -> Operation[E | None]:
    """Read one item by key; return None (or raise NotFoundError if required) when absent."""
    meta = meta_of(cls)
    params = get_request(meta, values, consistent=consistent)
    response = yield from call(ctx, "GetItem", params, (meta.table,))
    item = response.get("Item")
    found = decode_item(meta.table, item, only=(cls,)) if item else None
    if found is None and required:
        raise NotFoundError(
            f"No {cls.__name__} with key {dict(values)!r} in table {meta.table.name!r}.",
            table=meta.table.name,
            key=params["Key"],
        )
    return cast("E | None", found)  # decode_item(only=(cls,)) gives cls or None


def delete(
    ctx: Context,
    cls: type[E],
    values: Mapping[str, Any],
    *,
    condition: Condition | None = None,
    expected_version: int | None = None,
) -> Operation[E | None]:
    """Delete one item by key; return the deleted entity, or None if there was none."""
    meta = meta_of(cls)
    params = delete_request(meta, values, condition=condition, expected_version=expected_version)
    try:
        response = yield from call(ctx, "DeleteItem", params, (meta.table,))
    except ConditionFailedError as exc:
        if expected_version is not None:
            raise _stale(meta, exc, expected_version) from exc
        raise
    old = response.get("Attributes")
    return cast("E | None", decode_item(meta.table, old, only=(cls,)) if old else None)


def update(
    ctx: Context,
    cls: type[E],
    values: Mapping[str, Any],
    spec: UpdateSpec,
    *,
    condition: Condition | None = None,
    instance: Entity | None = None,
) -> Operation[E]:
    """Update one existing item; return it as stored after the update."""
    meta = meta_of(cls)
    params = update_request(meta, values, spec, condition=condition, instance=instance)
    try:
        response = yield from call(ctx, "UpdateItem", params, (meta.table,))
    except ConditionFailedError as exc:
        old = exc.response.get("Item")
        if not old:
            raise NotFoundError(
                f"No {cls.__name__} with key {dict(values)!r} in table {meta.table.name!r} "
                "to update.",
                table=meta.table.name,
                key=params["Key"],
            ) from exc
        if instance is not None and meta.version_field is not None:
            stored_version = old.get(meta.attributes[meta.version_field], {}).get("N")
            if stored_version != str(getattr(instance, meta.version_field) or 0):
                raise _stale(meta, exc, getattr(instance, meta.version_field)) from exc
        raise
    found = decode_item(meta.table, response.get("Attributes") or {}, only=(cls,))
    return cast("E", found)
