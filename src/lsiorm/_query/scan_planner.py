"""The scan planner: a Scan value becomes a plan (segments, type filter, projection)."""

from __future__ import annotations

from typing import (
    TYPE_CHECKING,
    Any,
)

from lsiorm._conditions import (
    Placeholders,
)
from lsiorm._model.entity import (
    EntityMeta,
    meta_of,
)
from lsiorm._model.wire import to_wire
from lsiorm._query.cursor import CursorShape, _canonical
from lsiorm._query.plan import (
    Candidate,
    IndexChoice,
    PlannedRequest,
    PlannedRequests,
    QueryPlan,
    ReadOptions,
)
from lsiorm._query.planner import _projection_attrs, _projection_of
from lsiorm._query.projection import (
    _covered,
    _filter_fields,
    _index_kind,
    _projected,
    _projection_names,
)
from lsiorm._requests.items import compile_entity_condition
from lsiorm.errors import QueryPlanError

if TYPE_CHECKING:
    from lsiorm._query.values import Scan

    pass


class _ScanPlanner:
    def __init__(self, s: Scan[Any], count: bool) -> None:
        self.s = s
        self.count = count
        self.metas = [meta_of(cls) for cls in s.entities]
        self.table = self.metas[0].table

    def plan(self) -> QueryPlan:
        s, table = self.s, self.table
        index = table.index(s.index) if s.index is not None else None
        kind = _index_kind(index)
        if kind == "global" and s.consistent_read:
            raise QueryPlanError(
                "query.gsi-consistent-read",
                f"Consistent reads are not available on global secondary index {s.index!r}.",
                table=table.name,
            )
        projected = _projected(table, index)
        type_available = projected is None or table.type_attribute in projected
        filter_fields = _filter_fields(s.filter_condition)
        if projected is not None and filter_fields:
            lacking = sorted(
                {m.attributes[f] for m in self.metas for f in filter_fields if f in m.attributes}
                - projected
            )
            if lacking:
                raise QueryPlanError(
                    "query.filter-not-projected",
                    f"The filter reads {', '.join(lacking)}, which index {s.index!r} does not "
                    "project (a filter cannot fetch from the table).",
                    table=table.name,
                )
        fetched: list[str] = []
        unavailable: list[str] = []
        for meta in self.metas:
            wanted = [] if self.count else list(s.fields or meta.cls.model_fields)
            fields, attrs = _covered(meta, table, index, wanted)
            if kind == "local":
                fetched.extend(a for a in attrs if a not in fetched)
            else:
                unavailable.extend(f for f in fields if f not in unavailable)
        if unavailable and s.missing == "error":
            raise QueryPlanError(
                "query.gsi-projection",
                f"Index {s.index!r} does not project {', '.join(unavailable)}; use hydrate(), "
                "partial() or select().",
                table=table.name,
            )
        selected = None if self.count else s.fields
        filters = {self._filter(meta, type_available) for meta in self.metas}
        if len(filters) > 1:
            raise QueryPlanError(
                "query.filter-attribute-differs",
                "The filter's fields are stored under different attribute names by these "
                "entities; scan them one at a time.",
                table=table.name,
            )
        ph = Placeholders()
        filter_text = self._filter_into(self.metas[0], type_available, ph)
        params: dict[str, Any] = {"TableName": table.name}
        if index is not None:
            params["IndexName"] = index.name
        if filter_text is not None:
            params["FilterExpression"] = filter_text
        if self.count:
            params["Select"] = "COUNT"
        elif selected is not None:
            named: list[str] = []
            for meta in self.metas:
                more = _projection_attrs(
                    meta, table, index, selected, type_available or bool(fetched)
                )
                named.extend(more or ())
            params["ProjectionExpression"] = _projection_names(dict.fromkeys(named), ph)
        elif fetched:
            params["Select"] = "ALL_ATTRIBUTES"
        if s.consistent_read:
            params["ConsistentRead"] = True
        ph.into(params)
        requests = []
        for segment in range(s.total_segments):
            seg = dict(params)
            if s.total_segments > 1:
                seg["Segment"] = segment
                seg["TotalSegments"] = s.total_segments
            limit = s.request_limit
            if s.max_items is not None and filter_text is None:
                limit = min(limit or s.max_items, s.max_items)
            requests.append(
                PlannedRequest(seg, s.entities, f"segment {segment}", None if self.count else limit)
            )
        label = index.name if index is not None else None
        return QueryPlan(
            "Scan",
            s.entities,
            IndexChoice(
                table,
                index,
                (Candidate(label, kind, None, True, "named by scan().using()"),),
                projection=_projection_of(requests, ph.names),
                fetched=tuple(fetched) if not self.count else (),
                unavailable=tuple(unavailable) if not self.count else (),
            ),
            ReadOptions.of(
                s, count=self.count, segments=s.total_segments, on_progress=s.on_progress
            ),
            PlannedRequests(
                tuple(requests),
                CursorShape(table.name, label, True, tuple(requests)),
                filter=filter_text,
                names=dict(ph.names),
                values=dict(ph.values),
                has_filter=filter_text is not None,
            ),
        )

    def _filter(self, meta: EntityMeta, type_available: bool) -> str:
        ph = Placeholders()
        text = self._filter_into(meta, type_available, ph)
        return _canonical([text, ph.names, ph.values])

    def _filter_into(self, meta: EntityMeta, type_available: bool, ph: Placeholders) -> str | None:
        parts: list[str] = []
        if type_available:
            # Only the requested entity types: other items are neither returned nor counted.
            tname = ph.name(self.table.type_attribute)
            types = [to_wire(m.type_name) for m in self.metas]
            if len(types) == 1:
                parts.append(f"{tname} = {ph.value(types[0])}")
            else:
                parts.append(f"{tname} IN ({', '.join(ph.value(t) for t in types)})")
        if self.s.filter_condition is not None:
            user = compile_entity_condition(meta, self.s.filter_condition, ph)
            parts.append(f"({user})" if parts else user)
        return " AND ".join(parts) if parts else None
