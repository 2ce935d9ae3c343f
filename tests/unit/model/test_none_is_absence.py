"""None is absence in the item: never a top-level NULL, sized as written, read back as None."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from lsiorm import decode_item, dry_run_put, dry_run_update, item_size
from lsiorm._model.item_encoding import wire_item
from support.models import DEFAULTS_TABLE, WithDefaults, declare_optional_doc

optional_text = st.none() | st.text(min_size=1, max_size=8)


@settings(max_examples=60)
@given(
    status=optional_text,
    rev=st.none() | st.integers(min_value=0, max_value=99999),
    hits=st.none() | st.integers(min_value=-5, max_value=5),
    note=optional_text,
    tags=st.none() | st.lists(st.text(max_size=3), max_size=3),
)
def test_no_top_level_null_and_sizes_agree_with_the_capacity_model(
    status: str | None, rev: int | None, hits: int | None, note: str | None, tags: Any
) -> None:
    _table, doc = declare_optional_doc()
    entity = doc(did="x", status=status, rev=rev, hits=hits, note=note, tags=tags)
    wire = wire_item(entity)
    assert not any("NULL" in av for av in wire.values())
    assert {k for k, v in entity.model_dump().items() if v is None}.isdisjoint(wire)
    assert doc.__lsiorm__.table.entities["Doc"] is doc
    # The capacity model sizes the very item that is written.
    estimate = dry_run_put(entity, assume_new=True)
    assert estimate.table_units == max(1, -(-item_size(wire) // 1024))
    cleared = dry_run_update(entity, set={"note": None, "hits": None})
    assert cleared.table_units >= 1


@given(
    count=st.none() | st.integers(-3, 3),
    labels=st.none() | st.lists(st.text(max_size=2), max_size=2),
    note=st.none() | st.text(max_size=2),
    must=st.none() | st.text(max_size=2),
)
def test_none_reads_back_as_none_whatever_the_default(
    count: int | None, labels: list[str] | None, note: str | None, must: str | None
) -> None:
    entity = WithDefaults(wid="a", count=count, labels=labels, note=note, must=must)
    assert decode_item(DEFAULTS_TABLE, wire_item(entity)) == entity
