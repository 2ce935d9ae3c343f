"""The size and capacity model: hand-computed cases and the invariants it must keep."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lsiorm import (
    ConsumedCapacity,
    GlobalIndex,
    KeyAttribute,
    LocalIndex,
    Projection,
    Table,
    dry_run_update,
)
from lsiorm._model.capacity import (
    INDEX_ENTRY_OVERHEAD,
    ReadEstimate,
    WriteEstimate,
    dry_run_delete,
    dry_run_put,
    estimate_batch_get,
    estimate_condition_check,
    estimate_get,
    estimate_query,
    estimate_scan,
    estimate_transact_get,
    estimate_write,
    index_entry,
    index_entry_size,
    needs_fetch,
    read_units,
    write_units,
)
from lsiorm._model.wire import WireItem, item_size, item_to_wire
from lsiorm.errors import ValidationError
from support.models import Thread, forum_table

TABLE = Table(
    "Cap",
    "PK",
    "SK",
    local_indexes=[
        LocalIndex("All", KeyAttribute("A"), Projection.all()),
        LocalIndex("Keys", KeyAttribute("K"), Projection.keys_only()),
        LocalIndex("Some", KeyAttribute("I"), Projection.include("p", "q")),
    ],
    global_indexes=[GlobalIndex("Global", KeyAttribute("G"), None, Projection.keys_only())],
)


def item(**attributes: Any) -> WireItem:
    """A wire item of TABLE with primary key PK=p, SK=s (3 + 3 bytes) and these attributes."""
    return item_to_wire({"PK": "p", "SK": "s", **attributes})


def pad(total: int, **attributes: Any) -> WireItem:
    """An item of exactly ``total`` bytes: attribute ``z`` takes up what the others leave."""
    base = item(**attributes, z="")
    return item(**attributes, z="x" * (total - item_size(base)))


# -- units ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("size", "units"), [(0, 1), (1, 1), (1024, 1), (1025, 2), (4096, 4), (400 * 1024, 400)]
)
def test_write_units_are_started_kilobytes_at_least_one(size: int, units: int) -> None:
    assert write_units(size) == units


@pytest.mark.parametrize(
    ("size", "strong"), [(0, 0.0), (1, 1.0), (4096, 1.0), (4097, 2.0), (20 * 1024, 5.0)]
)
def test_read_units_are_started_4_kb_halved_when_eventual(size: int, strong: float) -> None:
    assert read_units(size, consistent=True) == strong
    assert read_units(size, consistent=False) == strong / 2


# -- index entries ----------------------------------------------------------------------------


def test_index_entry_holds_the_keys_and_the_projection() -> None:
    full = item(A="a", K="k", I="i", p=1, q="q", r="not projected")
    assert index_entry(TABLE, "All", full) == full
    assert index_entry(TABLE, "Keys", full) == item(K="k")
    assert index_entry(TABLE, "Some", full) == item(I="i", p=1, q="q")
    assert index_entry(TABLE, "Global", full) is None  # sparse: no G
    assert index_entry(TABLE, TABLE.index("Keys"), item(A="a")) is None


def test_index_entry_size_adds_100_bytes_of_overhead() -> None:
    full = item(K="kk", r="r" * 50)
    # PK: 2 + 1, SK: 2 + 1, K: 1 + 2, plus 100.
    assert index_entry_size(TABLE, "Keys", full) == 9 + 100
    assert index_entry_size(TABLE, "All", full) is None


# -- writes -----------------------------------------------------------------------------------


def test_a_new_item_writes_the_table_and_each_index_it_appears_in() -> None:
    new = pad(500, A="a", K="k")
    assert estimate_write(TABLE, None, new) == WriteEstimate("Cap", 1.0, {"All": 1.0, "Keys": 1.0})


def test_large_index_entries_cost_one_unit_per_started_kb() -> None:
    # The ALL entry is the item plus 100 bytes: 924 bytes fit one unit, 925 need two.
    assert estimate_write(TABLE, None, pad(924, A="a")).per_index == {"All": 1.0}
    assert estimate_write(TABLE, None, pad(925, A="a")).per_index == {"All": 2.0}
    # 3000 + 100 bytes in All: 4 units; 1009 + 100 bytes in Some: 2 units.
    big = pad(3000, A="a", I="i", p="p" * 1000)
    assert estimate_write(TABLE, None, big) == WriteEstimate("Cap", 3.0, {"All": 4.0, "Some": 2.0})


def test_a_moved_index_key_costs_a_delete_and_a_put() -> None:
    old, new = pad(2000, A="a1"), pad(200, A="a2")
    # Old entry 2100 bytes: 3 units to delete; new entry 300 bytes: 1 unit to put.
    assert estimate_write(TABLE, old, new) == WriteEstimate("Cap", 2.0, {"All": 4.0})
    assert estimate_write(TABLE, item(K="k1"), item(K="k2")).per_index == {"Keys": 2.0}


def test_a_removed_index_key_costs_one_delete() -> None:
    assert estimate_write(TABLE, item(K="k", I="i"), item(I="i")).per_index == {"Keys": 1.0}


def test_an_entry_changed_in_place_costs_its_larger_size() -> None:
    before, after = item(I="i", p="x"), item(I="i", p="y" * 1000)
    assert estimate_write(TABLE, before, after).per_index == {"Some": 2.0}
    assert estimate_write(TABLE, after, before).per_index == {"Some": 2.0}


def test_untouched_entries_cost_nothing() -> None:
    # r is projected by no index but All; K and I entries stay the same.
    before, after = item(K="k", I="i", r="1"), item(K="k", I="i", r="2")
    assert estimate_write(TABLE, before, after) == WriteEstimate("Cap", 1.0)
    # Equal values in other spellings are the same entry.
    spelled = {**item(I="i"), "p": {"N": "1.50"}}
    assert estimate_write(TABLE, item(I="i", p=1.5), spelled).per_index == {}


def test_the_table_pays_for_the_larger_of_old_and_new() -> None:
    assert estimate_write(TABLE, pad(3000), pad(10)).table_units == 3.0
    assert estimate_write(TABLE, pad(10), pad(3000)).table_units == 3.0
    assert estimate_write(TABLE, pad(2049), None).table_units == 3.0
    assert estimate_write(TABLE, None, None) == WriteEstimate("Cap", 1.0)  # delete of nothing


def test_global_indexes_follow_the_same_rules() -> None:
    assert estimate_write(TABLE, item(G="g1"), item(G="g2")).per_index == {"Global": 2.0}
    assert estimate_write(TABLE, None, item(G="g")).per_index == {"Global": 1.0}


def test_a_transactional_write_costs_twice() -> None:
    new = pad(1500, A="a")
    assert estimate_write(TABLE, None, new, transactional=True) == WriteEstimate(
        "Cap", 4.0, {"All": 4.0}
    )


# -- queries ----------------------------------------------------------------------------------


def test_the_guides_fetch_example() -> None:
    """Seed 000: four 300-byte items with 200 bytes projected, each fetched: 1 + 4 units."""
    table = forum_table()
    items = []
    for n in range(4):
        projected = item_to_wire(
            {"ForumName": "S3", "Subject": f"s{n}", "LastPostDateTime": "2015", "Replies": ""}
        )
        projected["Replies"] = {"S": "r" * (200 - item_size(projected))}
        full = {**projected, "Tags": {"S": ""}}
        full["Tags"] = {"S": "t" * (300 - item_size(full))}
        assert (item_size(projected), item_size(full)) == (200, 300)
        items.append(full)
    strong = estimate_query(table, "LastPostIndex", items, consistent=True, attributes=["Tags"])
    assert strong == ReadEstimate("Thread", 4.0, {"LastPostIndex": 1.0})
    assert strong.total == 5.0  # 20 KB of result in 4 KB units
    eventual = estimate_query(table, "LastPostIndex", items, attributes=["Tags"])
    assert eventual == ReadEstimate("Thread", 2.0, {"LastPostIndex": 0.5})
    projected_only = estimate_query(
        table, "LastPostIndex", items, attributes=["Replies"], rule="documented"
    )
    assert projected_only == ReadEstimate("Thread", 0.0, {"LastPostIndex": 0.5})
    # DynamoDB Local fetches for any ProjectionExpression on the LSI (the default rule).
    engine = estimate_query(table, "LastPostIndex", items, attributes=["Replies"])
    assert engine == eventual


def test_index_reads_sum_entries_without_overhead_then_round() -> None:
    # Four KEYS_ONLY entries of 1024 bytes (PK 3 + SK 3 + K 1 + 1017): exactly 4 KB, one unit.
    items = [pad(3000, K=f"{i}" * 1017) for i in range(4)]
    assert [item_size(index_entry(TABLE, "Keys", i) or {}) for i in items] == [1024] * 4
    assert estimate_query(TABLE, "Keys", items, consistent=True).per_index == {"Keys": 1.0}
    one_more = [*items, item(K="k")]
    assert estimate_query(TABLE, "Keys", one_more, consistent=True).per_index == {"Keys": 2.0}


def test_items_not_in_the_index_are_not_read() -> None:
    items = [item(A="a"), item(K="k"), item()]
    assert estimate_query(TABLE, "Keys", items, consistent=True) == ReadEstimate(
        "Cap", 0.0, {"Keys": 1.0}
    )
    assert estimate_query(TABLE, "Some", items) == ReadEstimate("Cap", 0.0)


def test_a_base_table_query_sums_items_then_rounds() -> None:
    items = [pad(3000), pad(3000), pad(2192)]  # 8192 bytes
    assert estimate_query(TABLE, None, items, consistent=True) == ReadEstimate("Cap", 2.0)
    assert estimate_query(TABLE, None, items) == ReadEstimate("Cap", 1.0)


#: Cases where the documented rule and DynamoDB Local's agree on whether a query fetches.
BOTH_RULES = [
    (None, ["anything"], None, False),
    ("All", ["anything"], "ALL_ATTRIBUTES", False),
    ("Keys", [], None, False),
    ("Keys", [], "ALL_PROJECTED_ATTRIBUTES", False),
    ("Keys", [], "COUNT", False),
    ("Keys", [], "ALL_ATTRIBUTES", True),
]


@pytest.mark.parametrize(
    ("index", "attributes", "select", "fetches"),
    [
        *BOTH_RULES,
        ("Keys", ["PK", "K"], None, False),
        ("Keys", ["PK", "r"], None, True),
        ("Some", ["p", "q.deep[0]"], "SPECIFIC_ATTRIBUTES", False),
        ("Some", ["r[1]"], "SPECIFIC_ATTRIBUTES", True),
        ("Global", ["r"], None, False),  # a GSI never fetches
    ],
)
def test_needs_fetch_follows_the_documented_rule(
    index: str | None, attributes: list[str], select: Any, fetches: bool
) -> None:
    assert needs_fetch(TABLE, index, attributes, select=select, rule="documented") is fetches


@pytest.mark.parametrize(
    ("index", "attributes", "select", "fetches"),
    [
        *BOTH_RULES,
        ("Keys", ["PK", "K"], None, True),  # DynamoDB Local fetches for any projection
        ("Some", ["p"], "SPECIFIC_ATTRIBUTES", True),
        ("Global", ["r"], None, False),
    ],
)
def test_needs_fetch_follows_the_engine_by_default(
    index: str | None, attributes: list[str], select: Any, fetches: bool
) -> None:
    assert needs_fetch(TABLE, index, attributes, select=select) is fetches


def test_a_global_index_cannot_be_asked_to_fetch() -> None:
    with pytest.raises(ValidationError) as caught:
        estimate_query(TABLE, "Global", [item(G="g")], fetch=True)
    assert caught.value.rule == "capacity.gsi-fetch"


def test_an_unknown_index_is_refused() -> None:
    with pytest.raises(ValidationError) as caught:
        estimate_query(TABLE, "Nope", [])
    assert caught.value.rule == "index.unknown"


# -- estimates as values ----------------------------------------------------------------------


def test_estimates_read_consumed_capacity_add_up_and_print() -> None:
    consumed = {
        "TableName": "Cap",
        "CapacityUnits": 5.0,
        "Table": {"CapacityUnits": 1.0},
        "LocalSecondaryIndexes": {"All": {"CapacityUnits": 2.0}, "Keys": {"CapacityUnits": 0.0}},
        "GlobalSecondaryIndexes": {"Global": {"CapacityUnits": 2.0}},
    }
    parsed = WriteEstimate.from_consumed(consumed)
    assert parsed == WriteEstimate("Cap", 1.0, {"All": 2.0, "Global": 2.0})
    assert parsed.total == consumed["CapacityUnits"]
    summed = parsed + WriteEstimate("Cap", 2.0, {"Keys": 1.0, "All": 1.0})
    assert summed == WriteEstimate("Cap", 3.0, {"All": 3.0, "Global": 2.0, "Keys": 1.0})
    assert str(summed) == "9 units: table 3 + All 3 + Global 2 + Keys 1"
    assert ReadEstimate.from_consumed({"TableName": "Cap"}) == ReadEstimate("Cap", 0.0)
    with pytest.raises(TypeError):
        parsed + ReadEstimate("Cap", 1.0)  # type: ignore[operator]


# -- dry runs ---------------------------------------------------------------------------------


def utc(day: int) -> datetime:
    return datetime(2015, 9, day, tzinfo=timezone.utc)


def test_dry_runs_estimate_entity_writes_without_io() -> None:
    thread = Thread(forum="S3", subject="LSIs", last_post=utc(1), replies=4)
    assert dry_run_put(thread, assume_new=True) == WriteEstimate(
        "Thread", 1.0, {"LastPostIndex": 1.0}
    )
    assert dry_run_put(thread, old=thread) == WriteEstimate("Thread", 1.0)
    assert dry_run_put(thread, old=thread.to_wire(), transactional=True) == WriteEstimate(
        "Thread", 2.0
    )
    moved = dry_run_update(thread, set={"last_post": utc(2)})
    assert moved == WriteEstimate("Thread", 1.0, {"LastPostIndex": 2.0})
    assert dry_run_update(thread, remove=["last_post"]).per_index == {"LastPostIndex": 1.0}
    assert dry_run_update(thread, set={"tags": ["x"]}).per_index == {}  # Tags is not projected
    assert dry_run_update(thread, set={"replies": 5}).per_index == {"LastPostIndex": 1.0}
    assert dry_run_delete(thread) == WriteEstimate("Thread", 1.0, {"LastPostIndex": 1.0})
    unposted = Thread(forum="S3", subject="draft", tags=["t" * 1500])
    assert dry_run_put(unposted, assume_new=True) == WriteEstimate("Thread", 2.0)


def test_a_put_without_its_old_item_is_refused_not_priced_as_new() -> None:
    thread = Thread(forum="S3", subject="LSIs", last_post=utc(1))
    with pytest.raises(ValidationError) as caught:
        dry_run_put(thread)
    assert caught.value.rule == "capacity.old-item-unknown"
    assert "assume_new=True" in str(caught.value)


def test_dry_run_update_validates_like_an_update() -> None:
    thread = Thread(forum="S3", subject="LSIs")
    with pytest.raises(ValidationError):
        dry_run_update(thread, set={"replies": "many"})
    with pytest.raises(ValidationError):
        dry_run_update(thread, remove=["forum"])


# -- invariants -------------------------------------------------------------------------------

scalars = st.one_of(
    st.text(max_size=40),
    st.integers(-(10**20), 10**20),
    st.binary(max_size=30),
    st.booleans(),
    st.none(),
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=12,
)
big_text = st.text(alphabet="xyz€", min_size=0, max_size=3000)
key_text = st.text(alphabet="abc", min_size=1, max_size=300)


@st.composite
def items(draw: st.DrawFn) -> WireItem:
    attributes: dict[str, Any] = {}
    for name in ("A", "K", "I", "G"):
        if draw(st.booleans()):
            attributes[name] = draw(key_text)
    for name in ("p", "q", "r"):
        if draw(st.booleans()):
            attributes[name] = draw(values)
    attributes["z"] = draw(big_text)
    return item(**attributes)


INDEXES = [*(i.name for i in TABLE.local_indexes), *(i.name for i in TABLE.global_indexes)]


@given(items())
def test_put_and_delete_of_one_item_cost_the_same(new: WireItem) -> None:
    put, delete = estimate_write(TABLE, None, new), estimate_write(TABLE, new, None)
    assert put == delete
    assert put.table_units == write_units(item_size(new)) >= 1
    for name in INDEXES:
        size = index_entry_size(TABLE, name, new)
        if size and name == "Global":
            size -= INDEX_ENTRY_OVERHEAD  # a GSI entry's writes count no overhead
        assert put.per_index.get(name, 0.0) == (write_units(size) if size else 0)


def test_a_gsi_entry_counts_no_overhead_in_write_units_an_lsi_entry_does() -> None:
    # Two KEYS_ONLY entries of 1,007 bytes (PK 3 + SK 3 + key 1,001): one LSI's, one GSI's.
    wire = item(K="k" * 1000, G="g" * 1000)
    assert [item_size(index_entry(TABLE, n, wire) or {}) for n in ("Keys", "Global")] == [1007] * 2
    put = estimate_write(TABLE, None, wire)
    assert put.per_index["Keys"] == 2.0  # 1,107 bytes with the overhead
    assert put.per_index["Global"] == 1.0  # 1,007 bytes


@given(st.lists(st.one_of(st.none(), items()), max_size=6), st.booleans())
def test_single_item_reads_round_each_item_and_price_missing_ones(
    found: list[WireItem | None], consistent: bool
) -> None:
    gets = [estimate_get(TABLE, i, consistent=consistent) for i in found]
    batch = estimate_batch_get(TABLE, found, consistent=consistent)
    present = [g for g, i in zip(gets, found, strict=True) if i is not None]
    assert batch.table_units == sum(g.table_units for g in present)  # a missing one costs 0
    for got, wire in zip(gets, found, strict=True):
        blocks = max(1, -(-(item_size(wire) if wire else 0) // 4096))
        assert got.table_units == (blocks if consistent else blocks / 2)
        assert not got.per_index
    transact = estimate_transact_get(TABLE, found)
    strong = [estimate_get(TABLE, i, consistent=True).table_units for i in found]
    assert transact.table_units == 2 * sum(strong)
    for wire in found:
        check = estimate_condition_check(TABLE, wire)
        assert check.table_units == 2 * estimate_get(TABLE, wire, consistent=True).table_units


@given(st.lists(items(), max_size=6), st.booleans())
def test_a_scan_of_an_index_charges_the_whole_items_in_it(
    found: list[WireItem], consistent: bool
) -> None:
    for index in ("All", "Keys", "Some", "Global"):
        scanned = estimate_scan(TABLE, index, found, consistent=consistent)
        inside = [i for i in found if index_entry(TABLE, index, i) is not None]
        whole = estimate_scan(TABLE, None, inside, consistent=consistent)
        assert scanned.table_units == 0
        assert scanned.per_index.get(index, 0.0) == whole.table_units


def test_missing_items_in_writes_follow_the_engine() -> None:
    assert estimate_write(TABLE, None, None) == WriteEstimate("Cap", 1.0)
    assert estimate_write(TABLE, None, None, batched=True) == WriteEstimate("Cap", 2.0)
    assert estimate_write(TABLE, None, None, transactional=True) == WriteEstimate("Cap", 1.0)


@given(items(), items())
def test_a_write_costs_the_larger_item_and_at_most_delete_plus_put(
    old: WireItem, new: WireItem
) -> None:
    estimate = estimate_write(TABLE, old, new)
    assert estimate.table_units == write_units(max(item_size(old), item_size(new)))
    removal, addition = estimate_write(TABLE, old, None), estimate_write(TABLE, None, new)
    for name in INDEXES:
        units = estimate.per_index.get(name, 0.0)
        assert units <= removal.per_index.get(name, 0.0) + addition.per_index.get(name, 0.0)
        if index_entry(TABLE, name, old) and index_entry(TABLE, name, new):
            assert units >= 0  # present before and after: a move, an update or nothing
    assert estimate.total == estimate.table_units + sum(estimate.per_index.values())
    doubled = estimate_write(TABLE, old, new, transactional=True)
    assert doubled.total == 2 * estimate.total


@given(items())
def test_rewriting_an_item_unchanged_writes_no_index(same: WireItem) -> None:
    assert estimate_write(TABLE, same, same) == WriteEstimate("Cap", write_units(item_size(same)))


@given(items(), key_text)
def test_moving_a_key_costs_removal_plus_addition(old: WireItem, moved: str) -> None:
    if "K" not in old or old["K"] == {"S": moved}:
        old = {**old, "K": {"S": moved + "-old"}}
    new = {**old, "K": {"S": moved}}
    remove = estimate_write(TABLE, old, None).per_index["Keys"]
    add = estimate_write(TABLE, None, new).per_index["Keys"]
    assert estimate_write(TABLE, old, new).per_index["Keys"] == remove + add


@given(st.lists(items(), max_size=6), st.lists(items(), max_size=6))
def test_query_costs_round_once_per_page_and_once_per_fetch(
    first: list[WireItem], second: list[WireItem]
) -> None:
    for index in (None, "All", "Keys", "Some"):
        fetch = index in ("Keys", "Some")
        both = estimate_query(TABLE, index, first + second, consistent=True, fetch=fetch)
        a = estimate_query(TABLE, index, first, consistent=True, fetch=fetch)
        b = estimate_query(TABLE, index, second, consistent=True, fetch=fetch)
        if index is None:
            assert max(a.table_units, b.table_units) <= both.table_units
            assert both.table_units <= a.table_units + b.table_units
        else:
            assert both.table_units == a.table_units + b.table_units  # fetches never share
            reads = [e.per_index.get(index, 0.0) for e in (both, a, b)]
            assert max(reads[1], reads[2]) <= reads[0] <= reads[1] + reads[2]
        eventual = estimate_query(TABLE, index, first + second, fetch=fetch)
        assert eventual.table_units == both.table_units / 2
        assert eventual.per_index == {k: v / 2 for k, v in both.per_index.items()}


@given(items())
def test_narrower_projections_hold_smaller_entries(full: WireItem) -> None:
    with_all_keys = {**full, "A": {"S": "a"}, "K": {"S": "a"}, "I": {"S": "a"}}
    keys, some, every = (
        index_entry_size(TABLE, name, with_all_keys) or 0 for name in ("Keys", "Some", "All")
    )
    assert 0 < keys <= some <= every == item_size(with_all_keys) + INDEX_ENTRY_OVERHEAD


def test_read_estimates_are_comparable_with_consumed_capacity() -> None:
    consumed = ConsumedCapacity("T", 1.0, {"LSI1": 0.5})
    assert consumed.matches(ReadEstimate("T", 1.0, {"LSI1": 0.5}))
    assert not consumed.matches(ReadEstimate("T", 1.0))
