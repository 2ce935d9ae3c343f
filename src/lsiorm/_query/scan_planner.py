"""The scan planner: check that the index can serve the scan, then hand it to the compiler.

A scan reads the index its ``using()`` names (the base table by default). The planner refuses
what that index cannot do (consistent reads on a GSI, filters or fields it does not project),
keeps other entity types out with a filter on the type attribute when the index holds it, and
splits the request into segments.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from lsiorm._conditions import Placeholders
from lsiorm._model.entity import Entity
from lsiorm._model.entity_meta import EntityMeta, meta_of
from lsiorm._model.indexes import GlobalIndex, LocalIndex
from lsiorm._model.schema import Table
from lsiorm._query.compile import (
    RequestChoice,
    compile_request,
    filter_text,
    first_page_limit,
    scan_segments,
)
from lsiorm._query.cursor import canonical_json
from lsiorm._query.exactness import KeyPrefixes, untyped_separation
from lsiorm._query.plan import (
    Candidate,
    IndexChoice,
    PlannedRequest,
    PlannedRequests,
    QueryPlan,
    ReadOptions,
    RequestShape,
    ScanSource,
)
from lsiorm._query.projection import (
    filter_field_names,
    index_kind,
    named_attributes,
    type_projected,
    uncovered,
    unprojected_filter_attributes,
)
from lsiorm.errors import QueryPlanError

__all__ = ["plan_scan"]


def plan_scan(source: ScanSource, count: bool) -> QueryPlan:
    """Return the plan of a scan: segments, type filter and projection."""
    metas = [meta_of(cls) for cls in source.entities]
    table = metas[0].table
    index = table.index(source.index) if source.index is not None else None
    _check_index(source, metas, table, index)
    fetched, unavailable = _uncovered(source, metas, table, index, count)
    types = tuple(source.entities) if type_projected(table, index) else None
    _check_same_filter(source, metas, table, types)
    options = ReadOptions.of(
        source, count=count, segments=source.total_segments, on_progress=source.on_progress
    )
    choice = RequestChoice(
        metas[0],
        source.filter_condition,
        types,
        _projection(metas, table, index, options, types is not None or bool(fetched)),
        fetch=bool(fetched),
        prefixes=_untyped_prefixes(source, table, index, types),
    )
    compiled = compile_request("Scan", table, index, choice, options)
    limit = first_page_limit(options, compiled.filter is not None)
    requests = tuple(
        PlannedRequest(params, source.entities, f"segment {n}", limit)
        for n, params in enumerate(scan_segments(compiled.params, source.total_segments))
    )
    label = index.name if index is not None else None
    return QueryPlan(
        "Scan",
        source.entities,
        IndexChoice(
            table,
            index,
            (Candidate(label, index_kind(index), None, True, "named by scan().using()"),),
            projection=compiled.projection,
            fetched=tuple(fetched) if not count else (),
            unavailable=tuple(unavailable) if not count else (),
        ),
        options,
        PlannedRequests(
            requests,
            RequestShape(table.name, label, True, requests),
            filter=compiled.filter,
            names=compiled.names,
            values=compiled.values,
            has_filter=compiled.filter is not None,
        ),
    )


def _check_index(
    source: ScanSource,
    metas: Sequence[EntityMeta[Entity]],
    table: Table,
    index: LocalIndex | GlobalIndex | None,
) -> None:
    """Refuse a consistent read of a GSI, and a filter on attributes the index does not hold."""
    if index_kind(index) == "global" and source.consistent_read:
        raise QueryPlanError(
            "query.gsi-consistent-read",
            f"Consistent reads are not available on global secondary index {source.index!r}.",
            table=table.name,
        )
    fields = filter_field_names(source.filter_condition)
    lacking = unprojected_filter_attributes(metas, table, index, fields)
    if lacking:
        raise QueryPlanError(
            "query.filter-not-projected",
            f"The filter reads {', '.join(lacking)}, which index {source.index!r} does not "
            "project (a filter cannot fetch from the table).",
            table=table.name,
        )


def _uncovered(
    source: ScanSource,
    metas: Sequence[EntityMeta[Entity]],
    table: Table,
    index: LocalIndex | GlobalIndex | None,
    count: bool,
) -> tuple[list[str], list[str]]:
    """Return (attributes an LSI fetches, fields a GSI cannot return); refuse the latter."""
    fetched: list[str] = []
    unavailable: list[str] = []
    local = index_kind(index) == "local"
    for meta in metas:
        wanted = [] if count else list(source.fields or meta.cls.model_fields)
        fields, attrs = uncovered(meta, table, index, wanted)
        if local:
            fetched.extend(a for a in attrs if a not in fetched)
        else:
            unavailable.extend(f for f in fields if f not in unavailable)
    if unavailable and source.missing == "error":
        raise QueryPlanError(
            "query.gsi-projection",
            f"Index {source.index!r} does not project {', '.join(unavailable)}; use hydrate(), "
            "partial() or select().",
            table=table.name,
        )
    return fetched, unavailable


def _check_same_filter(
    source: ScanSource,
    metas: Sequence[EntityMeta[Entity]],
    table: Table,
    types: tuple[type[Entity], ...] | None,
) -> None:
    """One Scan carries one filter: refuse entities that would write it differently."""
    compiled = set()
    for meta in metas:
        ph = Placeholders()
        text = filter_text("Scan", table, meta, source.filter_condition, types, ph)
        compiled.add(canonical_json([text, ph.names, ph.values]))
    if len(compiled) > 1:
        raise QueryPlanError(
            "query.filter-attribute-differs",
            "The filter's fields are stored under different attribute names by these "
            "entities; scan them one at a time.",
            table=table.name,
        )


def _projection(
    metas: Sequence[EntityMeta[Entity]],
    table: Table,
    index: LocalIndex | GlobalIndex | None,
    options: ReadOptions,
    with_type: bool,
) -> tuple[str, ...] | None:
    if options.count:
        return None
    attrs = named_attributes(metas, table, index, options.selected, with_type)
    return None if attrs is None else tuple(attrs)


def _untyped_prefixes(
    source: ScanSource,
    table: Table,
    index: LocalIndex | GlobalIndex | None,
    types: tuple[type[Entity], ...] | None,
) -> KeyPrefixes:
    """The key prefixes that keep the scanned untyped types apart from the table's others."""
    if types is None:
        return ()
    others = [cast("type[Entity]", c) for c in table.entities.values() if c not in types]
    separated = untyped_separation(table, index, "Scan", types, others)
    if isinstance(separated, str):
        names = "+".join(c.__name__ for c in source.entities)
        raise QueryPlanError(
            "query.untyped-types",
            f"A scan of {names} cannot be exact: {separated}.",
            table=table.name,
        )
    return separated
