"""Checks an item passes before it is written: its validity and its size.

Its key attributes are checked as they are rendered (`checked_key` in `entity_meta.py`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import ValidationError as PydanticValidationError

from lsiorm._model.wire import MAX_ITEM_BYTES
from lsiorm.errors import ItemTooLargeError, ValidationError

if TYPE_CHECKING:
    from lsiorm._model.entity_meta import EntityMeta, EntityModel


def check_valid(meta: EntityMeta[EntityModel], entity: EntityModel) -> None:
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


def too_large(meta: EntityMeta[EntityModel], size: int) -> None:
    """Refuse an item of ``size`` bytes, over DynamoDB's 400 KB limit (``item.max-400kb``)."""
    raise ItemTooLargeError(
        "item.max-400kb",
        f"{meta.cls.__name__} item is {size} bytes; DynamoDB items are limited to "
        f"{MAX_ITEM_BYTES} bytes (400 KB).",
        table=meta.table.name,
    )
