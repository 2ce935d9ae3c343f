"""explain() states the read-cost rule and, with a sample, the capacity model's estimate."""

from __future__ import annotations

from datetime import datetime, timezone

from lsiorm import Entity, GlobalIndex, KeyAttribute, Projection, Table, between, query, scan
from lsiorm._model.capacity import ReadEstimate, estimate_batch_get, estimate_query
from lsiorm._model.item_encoding import wire_item
from support.models import declare_thread, forum_table

table = forum_table("ExplainCost")
Post = declare_thread(table, type_name="Post")
START = datetime(2015, 9, 1, tzinfo=timezone.utc)
SAMPLE = [Post(forum="S3", subject=f"s{i}", last_post=START, body="x" * 3000) for i in range(10)]
Q = query(Post).where(
    forum="S3", last_post=between(START, datetime(2016, 1, 1, tzinfo=timezone.utc))
)


def test_full_items_are_fetched_and_charged_per_item() -> None:
    explanation = Q.explain(sample=SAMPLE)
    assert explanation.estimate is not None
    assert explanation.estimate.table_units == 10 * 0.5  # each ~3 KB item: one 4 KB read, halved
    expected = estimate_query(
        table, "LastPostIndex", [wire_item(p) for p in SAMPLE], select="ALL_ATTRIBUTES"
    )
    assert explanation.estimate == expected
    text = str(explanation)
    assert "cost" in text
    assert "read whole from the table" in text
    assert f"sample estimate: {expected}" in text


def test_projected_fields_still_fetch_on_the_engine_and_explain_says_so() -> None:
    """DynamoDB Local fetches for any ProjectionExpression on an INCLUDE LSI."""
    explanation = Q.select("subject", "replies").explain(sample=SAMPLE)
    assert explanation.estimate is not None
    assert explanation.estimate.table_units == 10 * 0.5
    assert explanation.estimate.per_index == {"LastPostIndex": 0.5}
    text = str(explanation)
    assert "read whole from the table" in text
    assert "AWS documents no fetch" in text
    documented = estimate_query(
        table,
        "LastPostIndex",
        [wire_item(p) for p in SAMPLE],
        attributes=["Subject", "Replies"],
        rule="documented",
    )
    assert documented.table_units == 0


def test_count_is_priced_like_the_read_without_a_fetch() -> None:
    explanation = Q.explain(count=True, sample=SAMPLE)
    assert explanation.estimate == ReadEstimate("ExplainCost", 0.0, {"LastPostIndex": 0.5})
    assert "sample estimate" in str(explanation)


def test_a_scan_of_an_lsi_charges_whole_items_to_the_index() -> None:
    explanation = scan(Post).using("LastPostIndex").explain(sample=SAMPLE)
    # Ten ~3 KB items summed (about 30 KB): 8 units, halved; the table pays nothing.
    assert explanation.estimate == ReadEstimate("ExplainCost", 0.0, {"LastPostIndex": 4.0})
    assert "whole items in LastPostIndex" in str(explanation)


def test_a_measured_figure_prints_beside_the_estimate() -> None:
    explanation = Q.explain(sample=SAMPLE)
    measured = explanation.with_measured(ReadEstimate("ExplainCost", 5.0, {"LastPostIndex": 0.5}))
    assert "measured: 5.5 units: table 5 + LastPostIndex 0.5" in str(measured)


def test_consistent_reads_cost_double_and_no_sample_gives_no_estimate() -> None:
    consistent = Q.consistent().explain(sample=SAMPLE)
    assert consistent.estimate is not None
    eventual = Q.explain(sample=SAMPLE).estimate
    assert eventual is not None
    assert consistent.estimate.total == 2 * eventual.total
    assert Q.explain().estimate is None
    assert "halved" not in str(Q.consistent().explain())


gsi_table = Table(
    "ExplainHydrate",
    "PK",
    "SK",
    global_indexes=[GlobalIndex("ByTag", KeyAttribute("Tag"), None, Projection.keys_only())],
)


class Card(Entity, table=gsi_table, keys={"PK": "C#{cid}", "SK": "CARD", "Tag": "{tag}"}):
    cid: str
    tag: str | None = None
    body: str = ""


def test_hydration_adds_the_batch_get_of_whole_items() -> None:
    cards = [Card(cid=str(i), tag="t", body="x" * 5000) for i in range(3)]
    explanation = query(Card).where(tag="t").hydrate().explain(sample=cards)
    wire = [wire_item(c) for c in cards]
    index_read = estimate_query(gsi_table, "ByTag", wire)
    assert explanation.estimate == index_read + estimate_batch_get(gsi_table, wire)
    assert explanation.estimate.table_units == 3 * 1.0  # each ~5 KB item: 2 units, halved
    assert "BatchGetItem (hydrate)" in str(explanation)
