"""Checks an item passes before it is written: its key attributes, its validity, its size."""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, Any, Final

from pydantic import ValidationError as PydanticValidationError

from lsiorm._model.wire import MAX_ITEM_BYTES
from lsiorm.errors import IndexKeyTypeError, ItemTooLargeError, KeyEncodingError, ValidationError

if TYPE_CHECKING:
    from lsiorm._model.entity import Entity
    from lsiorm._model.entity_meta import EntityMeta
    from lsiorm._model.schema import Table
    from lsiorm._model.template import KeyTemplate


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


def check_valid(meta: EntityMeta, entity: Entity) -> None:
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


def too_large(meta: EntityMeta, size: int) -> None:
    """Refuse an item of ``size`` bytes, over DynamoDB's 400 KB limit (``item.max-400kb``)."""
    raise ItemTooLargeError(
        "item.max-400kb",
        f"{meta.cls.__name__} item is {size} bytes; DynamoDB items are limited to "
        f"{MAX_ITEM_BYTES} bytes (400 KB).",
        table=meta.table.name,
    )
