"""Virtual stream shards against what AWS documents: placement, split lineage, iterators,
retention, GetRecords' limits and throttling, DescribeStream's pages.

Every test drives a `VirtualStream` directly with the time it chooses, so each rule is checked
at its exact edge.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lsiorm.testing.aws_like.options import StreamShards
from lsiorm.testing.aws_like.protocol import ServiceError
from lsiorm.testing.aws_like.stats import Tally
from lsiorm.testing.aws_like.streams import (
    HASH_SPACE,
    Sequencer,
    VirtualStream,
    iterator_stream,
)
from lsiorm.testing.aws_like.tables import hash_of, partition_id

ARN = "arn:aws:dynamodb:us-east-1:000000000000:table/t/stream/2025-01-01T00:00:00.000"
T0 = 1_700_000_000.0
DAY = 24 * 3600


def stream(now: float = T0, time_scale: float = 1.0, **options: Any) -> VirtualStream:
    options.setdefault("get_records_per_second", 10_000)
    return VirtualStream(
        ARN,
        {"StreamArn": ARN, "StreamViewType": "NEW_AND_OLD_IMAGES", "Shards": ["dropped"]},
        ("pk",),
        StreamShards(**options),
        sequencer=Sequencer(),
        now=now,
        time_scale=time_scale,
        stats=Tally(),
    )


def record(item: str, n: int, size: int = 10) -> dict[str, Any]:
    keys = {"pk": {"S": item}, "sk": {"S": "x"}}
    return {
        "eventID": f"e{n}",
        "eventName": "MODIFY",
        "dynamodb": {
            "Keys": keys,
            "NewImage": {**keys, "n": {"N": str(n)}},
            "SequenceNumber": "000000000000000000001",
            "SizeBytes": size,
            "StreamViewType": "NEW_AND_OLD_IMAGES",
        },
    }


def shards(s: VirtualStream, now: float = T0) -> list[dict[str, Any]]:
    """Every shard DescribeStream lists, through its pages."""
    found: list[dict[str, Any]] = []
    params: dict[str, Any] = {"Limit": 3}
    while True:
        page = s.describe(params, now)
        found += page["Shards"]
        if "LastEvaluatedShardId" not in page:
            return found
        params["ExclusiveStartShardId"] = page["LastEvaluatedShardId"]


def parents_first(listed: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Shards with every parent before its children (as a reader must read them)."""
    by_id = {s["ShardId"]: s for s in listed}
    order: list[dict[str, Any]] = []

    def place(shard: dict[str, Any]) -> None:
        if shard in order:
            return
        parent = by_id.get(shard.get("ParentShardId", ""))
        if parent is not None:
            place(parent)
        order.append(shard)

    for shard in listed:
        place(shard)
    return order


def read_all(s: VirtualStream, shard: str, now: float = T0) -> Iterator[dict[str, Any]]:
    """A shard's records from TRIM_HORIZON, page by page, to its end (or its open edge)."""
    iterator = s.iterator({"ShardId": shard, "ShardIteratorType": "TRIM_HORIZON"}, now)
    while True:
        page = s.records({"ShardIterator": iterator, "Limit": 2}, now)
        yield from page["Records"]
        if "NextShardIterator" not in page or not page["Records"]:
            return
        iterator = page["NextShardIterator"]


def n_of(raw: dict[str, Any]) -> int:
    return int(raw["dynamodb"]["NewImage"]["n"]["N"])


def code(exc: pytest.ExceptionInfo[ServiceError]) -> str:
    return exc.value.code


# -- shards and placement -----------------------------------------------------------------------


def test_shards_divide_the_hash_space_and_records_go_by_partition_key() -> None:
    s = stream(shards=4)
    listed = list(s.shards.values())
    assert [(x.low, x.high) for x in listed] == [
        (i * HASH_SPACE // 4, (i + 1) * HASH_SPACE // 4) for i in range(4)
    ]
    for n, item in enumerate(["a", "b", "c", "d", "e", "f", "a", "a"]):
        placed = s.ingest(record(item, n), T0)
        assert s.shards[placed].owns(hash_of(partition_id(({"S": item},))))
    # Records of one partition key value share a shard whatever their sort key.
    other = record("a", 99)
    other["dynamodb"]["Keys"]["sk"] = {"S": "y"}
    assert s.ingest(other, T0) == s.ingest(record("a", 100), T0)


def test_sequence_numbers_are_long_numeric_strings_increasing_in_a_shard() -> None:
    s = stream(shards=2)
    for n in range(20):
        s.ingest(record(f"i{n % 5}", n), T0)
    for listed in shards(s):
        start = int(listed["SequenceNumberRange"]["StartingSequenceNumber"])
        numbers = [r["dynamodb"]["SequenceNumber"] for r in read_all(s, listed["ShardId"])]
        assert all(len(x) >= 21 and x.isdigit() for x in numbers)
        assert [int(x) for x in numbers] == sorted({int(x) for x in numbers})
        assert all(int(x) > start for x in numbers)


def test_a_record_keeps_what_upstream_gave_with_its_own_sequence_and_time() -> None:
    s = stream(shards=1)
    given_record = record("a", 1)
    s.ingest(given_record, T0 + 12.75)
    (shard,) = s.shards
    (got,) = read_all(s, shard)
    assert got["eventID"] == "e1"
    assert got["dynamodb"]["NewImage"] == given_record["dynamodb"]["NewImage"]
    assert got["dynamodb"]["Keys"] == given_record["dynamodb"]["Keys"]
    # Rounded down to the second, as AWS rounds it; the record given is not changed.
    assert got["dynamodb"]["ApproximateCreationDateTime"] == int(T0) + 12
    assert got["dynamodb"]["SequenceNumber"] != "000000000000000000001"
    assert given_record["dynamodb"]["SequenceNumber"] == "000000000000000000001"


# -- splits and lineage -------------------------------------------------------------------------


def test_a_split_closes_the_parent_at_its_last_record_and_opens_two_halves() -> None:
    s = stream(shards=1)
    for n in range(3):
        s.ingest(record(f"i{n}", n), T0)
    (parent_id,) = s.shards
    last = [r["dynamodb"]["SequenceNumber"] for r in read_all(s, parent_id)][-1]
    children = s.split(parent_id, T0 + 1)
    listed = {x["ShardId"]: x for x in shards(s)}
    parent = listed[parent_id]
    assert parent["SequenceNumberRange"]["EndingSequenceNumber"] == last
    assert len(children) == 2
    for child in children:
        assert listed[child]["ParentShardId"] == parent_id
        start = int(listed[child]["SequenceNumberRange"]["StartingSequenceNumber"])
        assert start > int(last)
        assert "EndingSequenceNumber" not in listed[child]["SequenceNumberRange"]
    low, high = s.shards[children[0]], s.shards[children[1]]
    assert (low.low, low.high, high.low, high.high) == (
        0,
        HASH_SPACE // 2,
        HASH_SPACE // 2,
        HASH_SPACE,
    )
    # Nothing goes to the parent any more.
    for n in range(3, 10):
        assert s.ingest(record(f"i{n}", n), T0 + 2) in children


def test_a_shard_splits_after_split_every_records() -> None:
    s = stream(shards=1, split_every=4)
    (first,) = s.shards
    for n in range(3):
        s.ingest(record("a", n), T0)
    assert s.shards[first].open
    s.ingest(record("a", 3), T0)
    assert not s.shards[first].open
    assert s.shards[first].end == s.shards[first].records[-1].sequence
    assert s.stats["splits"] == 1
    assert sum(x.open for x in s.shards.values()) == 2


def test_shards_split_at_their_times_counted_from_when_the_stream_was_seen() -> None:
    s = stream(now=T0, shards=2, split_at=(5.0, 2.0))
    s.tick(T0 + 1.99)
    assert len(s.shards) == 2
    s.tick(T0 + 2.0)
    assert sum(x.open for x in s.shards.values()) == 4
    s.tick(T0 + 4.0)
    assert sum(x.open for x in s.shards.values()) == 4
    s.tick(T0 + 6.0)
    assert sum(x.open for x in s.shards.values()) == 8
    assert s.stats["splits"] == 6


def test_a_rollover_continues_a_shard_in_one_child_with_the_same_keys() -> None:
    s = stream(shards=1, rollover_every=60.0)
    (first,) = s.shards
    s.ingest(record("a", 0), T0)
    s.tick(T0 + 59)
    assert s.shards[first].open
    s.tick(T0 + 60)
    (child,) = [x for x in s.shards.values() if x.open]
    assert child.parent == first
    assert (child.low, child.high) == (0, HASH_SPACE)
    assert s.stats["rollovers"] == 1


def test_a_shard_that_never_received_a_record_ends_at_its_start() -> None:
    s = stream(shards=1)
    (first,) = s.shards
    s.split(first, T0)
    described = next(x for x in shards(s) if x["ShardId"] == first)
    numbers = described["SequenceNumberRange"]
    assert numbers["EndingSequenceNumber"] == numbers["StartingSequenceNumber"]
    # Read from its trim horizon, it is read to its end at once: no next iterator.
    iterator = s.iterator({"ShardId": first, "ShardIteratorType": "TRIM_HORIZON"}, T0)
    assert s.records({"ShardIterator": iterator}, T0) == {"Records": []}


Step = tuple[str, int]
steps = st.lists(
    st.one_of(
        st.tuples(st.just("write"), st.integers(0, 11)),
        st.tuples(st.just("split"), st.integers(0, 50)),
        st.tuples(st.just("split_all"), st.just(0)),
        st.tuples(st.just("rollover"), st.integers(0, 50)),
    ),
    max_size=120,
)


@settings(max_examples=150)
@given(steps, st.integers(1, 5), st.one_of(st.none(), st.integers(1, 9)))
def test_reading_parents_before_children_gives_each_items_records_in_write_order(
    plan: list[Step], count: int, every: int | None
) -> None:
    s = stream(shards=count, split_every=every)
    written: dict[str, list[int]] = {}
    placed: dict[str, list[str]] = {}
    for n, (kind, choice) in enumerate(plan):
        open_ids = [x.id for x in s.shards.values() if x.open]
        if kind == "write":
            item = f"item{choice}"
            placed.setdefault(item, []).append(s.ingest(record(item, n), T0))
            written.setdefault(item, []).append(n)
        elif kind == "split_all":
            if len(open_ids) <= 16:  # splitting every shard doubles them: keep the test small
                s.split_open(T0)
        else:
            s.split(open_ids[choice % len(open_ids)], T0, children=2 if kind == "split" else 1)

    listed = shards(s)
    by_id = {x["ShardId"]: x for x in listed}
    read: dict[str, list[int]] = {}
    for shard in parents_first(listed):
        numbers = shard["SequenceNumberRange"]
        records = list(read_all(s, shard["ShardId"]))
        sequences = [int(r["dynamodb"]["SequenceNumber"]) for r in records]
        assert sequences == sorted(set(sequences))
        if "EndingSequenceNumber" in numbers:
            assert int(numbers["EndingSequenceNumber"]) == (
                sequences[-1] if sequences else int(numbers["StartingSequenceNumber"])
            )
        parent = by_id.get(shard.get("ParentShardId", ""))
        if parent is not None:
            start = int(numbers["StartingSequenceNumber"])
            assert start > int(parent["SequenceNumberRange"]["EndingSequenceNumber"])
        for raw in records:
            read.setdefault(raw["dynamodb"]["Keys"]["pk"]["S"], []).append(n_of(raw))
    assert read == written

    def ancestors(shard: str) -> set[str]:
        found: set[str] = set()
        parent = by_id[shard].get("ParentShardId")
        while parent in by_id:
            found.add(parent)
            parent = by_id[parent].get("ParentShardId")
        return found

    # One shard at a time: an item's records move only from a shard to one of its descendants.
    for item_shards in placed.values():
        for earlier, later in itertools.pairwise(item_shards):
            assert earlier == later or earlier in ancestors(later)


# -- iterators ----------------------------------------------------------------------------------


def test_an_iterator_expires_15_minutes_scaled_after_it_was_handed_out() -> None:
    s = stream(shards=1, time_scale=0.01)  # 15 minutes are 9 seconds
    (shard,) = s.shards
    s.ingest(record("a", 0), T0)
    iterator = s.iterator({"ShardId": shard, "ShardIteratorType": "TRIM_HORIZON"}, T0)
    assert iterator_stream(iterator) == ARN
    page = s.records({"ShardIterator": iterator}, T0 + 9.0)  # still valid at the edge
    assert len(page["Records"]) == 1
    with pytest.raises(ServiceError) as late:
        s.records({"ShardIterator": iterator}, T0 + 9.01)
    assert code(late) == "ExpiredIteratorException"
    # A NextShardIterator is a new iterator: it counts from its own answer.
    following = s.records({"ShardIterator": page["NextShardIterator"]}, T0 + 18.0)
    assert following["Records"] == []
    assert s.stats["expired_iterators"] == 1


def test_iterator_types_point_where_aws_says() -> None:
    s = stream(shards=1)
    (shard,) = s.shards
    for n in range(4):
        s.ingest(record("a", n), T0)
    sequences = [r["dynamodb"]["SequenceNumber"] for r in read_all(s, shard)]

    def first_read(kind: str, sequence: str | None = None) -> list[int]:
        params = {"ShardId": shard, "ShardIteratorType": kind}
        if sequence is not None:
            params["SequenceNumber"] = sequence
        iterator = s.iterator(params, T0)
        return [n_of(r) for r in s.records({"ShardIterator": iterator}, T0)["Records"]]

    assert first_read("TRIM_HORIZON") == [0, 1, 2, 3]
    assert first_read("AT_SEQUENCE_NUMBER", sequences[1]) == [1, 2, 3]
    assert first_read("AFTER_SEQUENCE_NUMBER", sequences[1]) == [2, 3]
    latest = s.iterator({"ShardId": shard, "ShardIteratorType": "LATEST"}, T0)
    s.ingest(record("a", 4), T0)
    assert [n_of(r) for r in s.records({"ShardIterator": latest}, T0)["Records"]] == [4]
    with pytest.raises(ServiceError) as wrong:
        s.iterator({"ShardId": shard, "ShardIteratorType": "AT_TIMESTAMP"}, T0)
    assert code(wrong) == "ValidationException"
    with pytest.raises(ServiceError) as missing:
        s.iterator({"ShardId": "shardId-nope", "ShardIteratorType": "LATEST"}, T0)
    assert code(missing) == "ResourceNotFoundException"


def test_a_closed_shard_read_to_its_end_gives_no_next_iterator() -> None:
    s = stream(shards=1)
    (shard,) = s.shards
    for n in range(3):
        s.ingest(record("a", n), T0)
    open_page = s.records(
        {"ShardIterator": s.iterator({"ShardId": shard, "ShardIteratorType": "LATEST"}, T0)},
        T0,
    )
    assert open_page["Records"] == []
    assert "NextShardIterator" in open_page
    s.split(shard, T0)
    iterator = s.iterator({"ShardId": shard, "ShardIteratorType": "TRIM_HORIZON"}, T0)
    first = s.records({"ShardIterator": iterator, "Limit": 2}, T0)
    assert len(first["Records"]) == 2
    assert "NextShardIterator" in first
    last = s.records({"ShardIterator": first["NextShardIterator"]}, T0)
    assert len(last["Records"]) == 1
    assert "NextShardIterator" not in last


# -- retention ----------------------------------------------------------------------------------


def test_records_are_trimmed_after_24_hours_scaled() -> None:
    s = stream(shards=1, time_scale=0.001)  # 24 hours are 86.4 seconds
    (shard,) = s.shards
    s.ingest(record("a", 0), T0)
    s.ingest(record("a", 1), T0 + 10)
    first = next(r["dynamodb"]["SequenceNumber"] for r in read_all(s, shard))
    # Handed out 0.41 s before the first record is trimmed (iterators live 0.9 s here).
    early = s.iterator({"ShardId": shard, "ShardIteratorType": "TRIM_HORIZON"}, T0 + 86.0)
    s.tick(T0 + 86.39)
    assert [n_of(r) for r in read_all(s, shard, T0 + 86.39)] == [0, 1]
    s.tick(T0 + 86.41)
    assert s.stats["trimmed"] == 1
    # TRIM_HORIZON now starts at the oldest record kept.
    assert [n_of(r) for r in read_all(s, shard, T0 + 86.41)] == [1]
    # An iterator from before the trim points at a record that is gone.
    with pytest.raises(ServiceError) as stale:
        s.records({"ShardIterator": early}, T0 + 86.41)
    assert code(stale) == "TrimmedDataAccessException"
    # So does a sequence number older than the trim horizon.
    with pytest.raises(ServiceError) as gone:
        s.iterator(
            {"ShardId": shard, "ShardIteratorType": "AT_SEQUENCE_NUMBER", "SequenceNumber": first},
            T0 + 86.41,
        )
    assert code(gone) == "TrimmedDataAccessException"
    # After the last trimmed record is still a valid place to start.
    after = s.iterator(
        {"ShardId": shard, "ShardIteratorType": "AFTER_SEQUENCE_NUMBER", "SequenceNumber": first},
        T0 + 86.41,
    )
    assert [n_of(r) for r in s.records({"ShardIterator": after}, T0 + 86.41)["Records"]] == [1]


def test_a_closed_shard_leaves_the_stream_24_hours_after_it_closed() -> None:
    s = stream(shards=1, time_scale=0.001)
    (shard,) = s.shards
    s.ingest(record("a", 0), T0)
    (child, _) = s.split(shard, T0 + 5)
    assert shard in [x["ShardId"] for x in shards(s, T0 + 91.3)]
    listed = [x["ShardId"] for x in shards(s, T0 + 91.5)]
    assert shard not in listed
    assert child in listed  # its children stay, still naming it as their parent
    assert next(x for x in shards(s, T0 + 91.5) if x["ShardId"] == child)["ParentShardId"] == shard
    with pytest.raises(ServiceError) as gone:
        s.iterator({"ShardId": shard, "ShardIteratorType": "TRIM_HORIZON"}, T0 + 91.5)
    assert code(gone) == "ResourceNotFoundException"


# -- GetRecords' limits and throttling ----------------------------------------------------------


def test_get_records_answers_at_most_1000_records_and_refuses_a_larger_limit() -> None:
    s = stream(shards=1)
    (shard,) = s.shards
    for n in range(1500):
        s.ingest(record("a", n, size=1), T0)
    iterator = s.iterator({"ShardId": shard, "ShardIteratorType": "TRIM_HORIZON"}, T0)
    page = s.records({"ShardIterator": iterator}, T0)
    assert len(page["Records"]) == 1000
    assert len(s.records({"ShardIterator": page["NextShardIterator"]}, T0)["Records"]) == 500
    for limit in (1001, 0):
        with pytest.raises(ServiceError) as refused:
            s.records({"ShardIterator": iterator, "Limit": limit}, T0)
        assert code(refused) == "ValidationException"


def test_get_records_answers_at_most_a_megabyte_and_at_least_one_record() -> None:
    s = stream(shards=1)
    (shard,) = s.shards
    for n in range(10):
        s.ingest(record("a", n, size=300 * 1024), T0)  # 300 KB each
    iterator = s.iterator({"ShardId": shard, "ShardIteratorType": "TRIM_HORIZON"}, T0)
    page = s.records({"ShardIterator": iterator}, T0)
    assert [n_of(r) for r in page["Records"]] == [0, 1, 2]  # 900 KB; a fourth is past 1 MB
    small = stream(shards=1, page_bytes=100)
    (only,) = small.shards
    small.ingest(record("a", 0, size=500), T0)
    small.ingest(record("a", 1, size=500), T0)
    it = small.iterator({"ShardId": only, "ShardIteratorType": "TRIM_HORIZON"}, T0)
    assert [n_of(r) for r in small.records({"ShardIterator": it}, T0)["Records"]] == [0]


def test_get_records_is_throttled_past_its_calls_a_second_and_consumes_nothing() -> None:
    s = stream(shards=2, get_records_per_second=5)
    first, second = s.shards
    for n in range(3):
        s.ingest(record("a", n), T0)
    iterators = {
        x: s.iterator({"ShardId": x, "ShardIteratorType": "TRIM_HORIZON"}, T0) for x in s.shards
    }
    for i in range(5):
        s.records({"ShardIterator": iterators[first]}, T0 + i * 0.1)
    with pytest.raises(ServiceError) as throttled:
        s.records({"ShardIterator": iterators[first]}, T0 + 0.5)
    assert code(throttled) == "LimitExceededException"
    # Another shard has calls of its own.
    s.records({"ShardIterator": iterators[second]}, T0 + 0.5)
    # A second after the first call, the same iterator reads what it would have read.
    again = s.records({"ShardIterator": iterators[first]}, T0 + 1.0)
    direct = s.records({"ShardIterator": iterators[first]}, T0 + 1.1)
    assert again["Records"] == direct["Records"]
    assert s.stats["get_records_throttled"] == 1


# -- DescribeStream -----------------------------------------------------------------------------


def test_describe_stream_pages_its_shards() -> None:
    s = stream(shards=7)
    page = s.describe({}, T0)
    assert len(page["Shards"]) == 7
    assert "LastEvaluatedShardId" not in page
    assert page["StreamArn"] == ARN
    assert page["StreamViewType"] == "NEW_AND_OLD_IMAGES"
    first = s.describe({"Limit": 3}, T0)
    assert len(first["Shards"]) == 3
    assert first["LastEvaluatedShardId"] == first["Shards"][-1]["ShardId"]
    assert [x["ShardId"] for x in shards(s)] == list(s.shards)
    for limit in (0, 101):
        with pytest.raises(ServiceError) as refused:
            s.describe({"Limit": limit}, T0)
        assert code(refused) == "ValidationException"
    many = stream(shards=150)
    assert len(many.describe({}, T0)["Shards"]) == 100  # AWS's default and most
