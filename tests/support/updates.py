"""UpdateItem params of an update, planned and rendered as the operations do."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lsiorm._model.entity import Entity
from lsiorm._model.entity_meta import EntityMeta
from lsiorm._requests.update_expression import render_update
from lsiorm._requests.update_plan import UpdateSpec, plan_update


def update_params(
    meta: EntityMeta[Entity], values: Mapping[str, Any], spec: UpdateSpec, **options: Any
) -> dict[str, Any]:
    """The params of updating the item with key fields ``values`` (``options``: plan_update's)."""
    return render_update(meta, plan_update(meta, values, spec, **options))
