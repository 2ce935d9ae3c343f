"""Planner and compiler, without I/O: exact request dicts, index choice, every refusal rule."""

from __future__ import annotations

import re
from datetime import datetime, timezone
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import Field

from lsiorm import Entity, Table
from lsiorm._conditions import begins_with, between, cond, eq, ge, gt, le, lt, ne
from lsiorm._model.codec import MAX_CHAR
from lsiorm._model.entity import shard_value
from lsiorm._model.shards import Shard
from lsiorm._query.cursor import decode_cursor, encode_cursor
from lsiorm._query.decode import decode, missing_fields
from lsiorm._query.values import query, scan
from lsiorm.errors import QueryPlanError, ValidationError
from support.fakes import ScriptedClient
from support.models import AUTHOR_INDEX, declare_goals, declare_orders, forum_table
from support.oracles import sort_key_selects

MAX = MAX_CHAR


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=timezone.utc)


# -- models ------------------------------------------------------------------------------------

forum = forum_table(global_indexes=[AUTHOR_INDEX])


class Thread(
    Entity,
    table=forum,
    keys={
        "ForumName": "{forum}",
        "Subject": "{subject}",
        "LastPostDateTime": "{last_post}",
        "Author": "AUTHOR#{author}",
    },
):
    forum: str
    subject: str
    last_post: datetime | None = None
    author: str | None = None
    replies: int = Field(default=0, alias="Replies")
    tags: list[str] = Field(default_factory=list, alias="Tags")


zoo = Table.with_reserved_lsi_slots("Zoo", "PK", "SK")


class Parrot(
    Entity,
    table=zoo,
    keys={"PK": "G#{group}", "SK": "PARROT#{name}", "LSI1SK": "PARROT#{words:06d}#{name}"},
):
    group: str
    name: str
    words: int
    note: str = ""


class Dog(
    Entity,
    table=zoo,
    keys={
        "PK": "G#{group}",
        "SK": "DOG#{command}#{age:03d}",
        "LSI1SK": "DOG#{age:03d}#{command}",
    },
):
    group: str
    command: str
    age: int


class Cat(Entity, table=zoo, keys={"PK": "G#{group}", "SK": "CAT#{name}"}):
    group: str
    name: str


class Address(Entity, table=zoo, keys={"PK": "ADDR#{country}", "SK": "{city}#{district}#{street}"}):
    country: str
    city: str
    district: str
    street: str


class Badge(
    Entity,
    table=zoo,
    keys={
        "PK": "B#{owner}",
        "SK": "BADGE#{code}",
        "LSI2SK": "L#{level:03d}",
        "LSI3SK": "L#{level:03d}",
    },
):
    """Its level is in two LSIs: LSI2 projects KEYS_ONLY and is declared first, LSI3 ALL."""

    owner: str
    code: str
    level: int
    label: str = ""


goals_table, Record = declare_goals()
words_table = Table("Inventory", partition_key="Name", sort_key="Size")


class Box(Entity, table=words_table, keys={"Name": "{name}", "Size": "{size:04d}"}):
    """Key attributes and field attributes named like DynamoDB reserved words."""

    name: str
    size: int
    status: str = Field(default="open", alias="Status")
    count: int = Field(default=0, alias="Count")


orders, Order = declare_orders()


def s(text: str) -> dict[str, str]:
    return {"S": text}


# -- compiled requests -------------------------------------------------------------------------


def test_lsi_time_range_compiles_to_exact_params() -> None:
    q = (
        query(Thread)
        .where(forum="S3", last_post=between(utc(2015, 9, 1), utc(2015, 10, 1)))
        .filter(replies=gt(3))
    )
    assert q.compile() == {
        "TableName": "Thread",
        "IndexName": "LastPostIndex",
        "KeyConditionExpression": "#n0 = :v0 AND #n1 BETWEEN :v1 AND :v2",
        "FilterExpression": "#n2 > :v3",
        "Select": "ALL_ATTRIBUTES",
        "ExpressionAttributeNames": {
            "#n0": "ForumName",
            "#n1": "LastPostDateTime",
            "#n2": "Replies",
        },
        "ExpressionAttributeValues": {
            ":v0": s("S3"),
            ":v1": s("2015-09-01T00:00:00.000000Z"),
            ":v2": s("2015-10-01T00:00:00.000000Z" + MAX),
            ":v3": {"N": "3"},
        },
    }
    plan = q.plan()
    assert plan.fetched == ("author", "Tags")
    assert plan.index_name == "LastPostIndex"


def test_select_descending_limit_consistent() -> None:
    q = query(Thread).where(forum="S3").select("subject", "replies").descending().limit(10)
    assert q.consistent().compile() == {
        "TableName": "Thread",
        "KeyConditionExpression": "#n0 = :v0",
        "ProjectionExpression": "#n1, #n2, #n0, #n3, #n4",
        "ScanIndexForward": False,
        "ConsistentRead": True,
        "Limit": 10,
        "ExpressionAttributeNames": {
            "#n0": "ForumName",
            "#n1": "subject",
            "#n2": "Replies",
            "#n3": "Subject",
            "#n4": "_type",
        },
        "ExpressionAttributeValues": {":v0": s("S3")},
    }


def test_limit_is_not_sent_with_a_filter_but_the_page_size_is() -> None:
    q = query(Thread).where(forum="S3").filter(replies=gt(1)).limit(5)
    assert "Limit" not in q.compile()
    assert q.page_size(20).compile()["Limit"] == 20
    assert query(Thread).where(forum="S3").limit(5).page_size(20).compile()["Limit"] == 5


def test_consistent_read_is_allowed_on_an_lsi() -> None:
    q = query(Thread).where(forum="S3", last_post=ge(utc(2015, 1, 1))).consistent()
    params = q.compile()
    assert params["IndexName"] == "LastPostIndex"
    assert params["ConsistentRead"] is True


@pytest.mark.parametrize(
    ("conditions", "sort"),
    [
        # Printable keys: the '#' after each text field is its terminator.
        ({"city": "London"}, ("begins_with", "London#")),
        (
            {"city": "London", "district": "Westminster"},
            ("begins_with", "London#Westminster#"),
        ),
        (
            {"city": "London", "district": "Westminster", "street": "Downing St"},
            ("=", "London#Westminster#Downing%20St"),
        ),
        ({"city": "London", "district": begins_with("West")}, ("begins_with", "London#West")),
        ({}, None),
    ],
)
def test_equality_prefix_includes_the_literal_after_the_last_field(
    conditions: dict[str, Any], sort: tuple[str, str] | None
) -> None:
    params = query(Address).where(country="UK", **conditions).compile()
    values = params["ExpressionAttributeValues"]
    if sort is None:
        # The template has no namespace and no other entity uses it: no sort condition at all.
        assert params["KeyConditionExpression"] == "#n0 = :v0"
        return
    op, text = sort
    expected = "begins_with(#n1, :v1)" if op == "begins_with" else "#n1 = :v1"
    assert params["KeyConditionExpression"] == "#n0 = :v0 AND " + expected
    assert values == {":v0": s("ADDR#UK"), ":v1": s(text)}


def test_no_sort_condition_reads_only_the_namespace() -> None:
    params = query(Parrot).where(group="g").compile()
    assert params["KeyConditionExpression"] == "#n0 = :v0 AND begins_with(#n1, :v1)"
    assert params["ExpressionAttributeValues"][":v1"] == s("PARROT#")


P = "PARROT#"


@pytest.mark.parametrize(
    ("op", "lo", "hi"),
    [
        (ge(5), P + "000005", P + MAX),
        (gt(5), P + "000005" + MAX, P + MAX),
        (le(5), P, P + "000005" + MAX),
        (lt(5), P, P + "000004" + MAX),
        (lt(0), P, P + "00000/" + MAX),
        (between(2, 5), P + "000002", P + "000005" + MAX),
        (gt(-3), P + "-999997" + MAX, P + MAX),
    ],
)
def test_ranges_on_a_fixed_width_field_followed_by_more_text(op: Any, lo: str, hi: str) -> None:
    params = query(Parrot).where(group="g", words=op).compile()
    assert params["IndexName"] == "LSI1"
    assert params["KeyConditionExpression"] == "#n0 = :v0 AND #n1 BETWEEN :v1 AND :v2"
    assert params["ExpressionAttributeValues"][":v1"] == s(lo)
    assert params["ExpressionAttributeValues"][":v2"] == s(hi)


C = "CAT#"


@pytest.mark.parametrize(
    ("op", "lo", "hi"),
    [
        (gt("ab"), C + "ab\x00", C + MAX),
        (ge("ab"), C + "ab", C + MAX),
        (le("ab"), C, C + "ab"),
        (lt("ab"), C, C + "aa" + MAX),
        (lt("a\x00"), C, C + "a%0/" + MAX),  # the printable escape of U+0000 is %00
        (lt("a\ue000"), C, C + "a\ud7ff" + MAX),
        (between("a", "b"), C + "a", C + "b"),
    ],
)
def test_ranges_on_a_variable_width_last_field(op: Any, lo: str, hi: str) -> None:
    params = query(Cat).where(group="g", name=op).compile()
    assert params["ExpressionAttributeValues"][":v1"] == s(lo)
    assert params["ExpressionAttributeValues"][":v2"] == s(hi)


def test_below_the_empty_string_is_provably_empty() -> None:
    q = query(Cat).where(group="g", name=lt(""))
    plan = q.plan()
    assert plan.empty is not None
    assert plan.requests == ()
    assert "empty without a request" in str(q.explain())
    with pytest.raises(QueryPlanError) as caught:
        q.compile()
    assert caught.value.rule == "query.no-request"


def test_reversed_bounds_are_provably_empty_not_sent() -> None:
    assert query(Parrot).where(group="g", words=between(9, 2)).plan().empty is not None
    assert query(Parrot).where(group="g", words=gt(5)).where(words=lt(5)).plan().empty is not None
    assert query(Record).where(country="F", goals=between(3, 1)).plan().empty is not None


def test_two_bounds_on_one_field_intersect() -> None:
    params = query(Parrot).where(group="g", words=gt(2)).where(words=le(7)).compile()
    assert params["ExpressionAttributeValues"][":v1"] == s(P + "000002" + MAX)
    assert params["ExpressionAttributeValues"][":v2"] == s(P + "000007" + MAX)


def test_seed_002_greater_than_5_is_exact_and_stays_in_its_namespace() -> None:
    params = query(Parrot).where(group="g", words=gt(5)).compile()
    lo = params["ExpressionAttributeValues"][":v1"]["S"]
    hi = params["ExpressionAttributeValues"][":v2"]["S"]

    def inside(key: str) -> bool:
        return lo <= key <= hi

    # The seed's BETWEEN parrot:words:000005 AND ...999999 would take the parrot with 5 words.
    assert not inside("PARROT#000005#polly")
    assert inside("PARROT#000006#polly")
    assert inside("PARROT#999999#" + "\U0001f600")
    assert not inside("DOG#sit#001")
    assert not inside("PARROU#")


def test_begins_with_on_a_str_field_and_refusals() -> None:
    params = query(Dog).where(group="g", command=begins_with("si")).compile()
    assert params["KeyConditionExpression"] == "#n0 = :v0 AND begins_with(#n1, :v1)"
    assert params["ExpressionAttributeValues"][":v1"] == s("DOG#si")
    # A separator inside a prefix is just text: the prefix is escaped like a value.
    query(Dog).where(group="g", command=begins_with("si#")).plan()
    with pytest.raises(QueryPlanError) as not_str:
        query(Parrot).where(group="g", words=begins_with("1")).plan()
    assert not_str.value.rule == "query.begins-with-type"
    with pytest.raises(QueryPlanError) as number_key:
        query(Record).where(country="F", goals=begins_with("1")).plan()
    assert number_key.value.rule == "query.begins-with-type"


def test_number_sort_key_uses_plain_comparisons() -> None:
    params = query(Record).where(country="France", goals=gt(3)).compile()
    assert params["IndexName"] == "GoalsIndex"
    assert params["KeyConditionExpression"] == "#n0 = :v0 AND #n1 > :v1"
    assert params["ExpressionAttributeNames"] == {"#n0": "Country", "#n1": "Goals"}
    assert params["ExpressionAttributeValues"] == {":v0": s("France"), ":v1": {"N": "3"}}
    between_params = query(Record).where(country="France", goals=between(1, 4)).compile()
    assert between_params["KeyConditionExpression"] == "#n0 = :v0 AND #n1 BETWEEN :v1 AND :v2"
    # Two bounds make one BETWEEN; an open end is closed at the next int (no filter on a key).
    two = query(Record).where(country="F", goals=gt(1)).where(goals=le(4))
    params = two.compile()
    assert params["KeyConditionExpression"] == "#n0 = :v0 AND #n1 BETWEEN :v1 AND :v2"
    assert params["ExpressionAttributeValues"][":v1"] == {"N": "2"}
    assert params["ExpressionAttributeValues"][":v2"] == {"N": "4"}
    assert "FilterExpression" not in params
    assert "goals > 1 is read as goals >= 2" in str(two.explain())
    assert (
        query(Record)
        .where(country="F", goals=gt(3))
        .where(goals=lt(5))
        .compile()["KeyConditionExpression"]
        .endswith("#n1 = :v1")
    )  # only 4 is left
    assert query(Record).where(country="F", goals=gt(3)).where(goals=lt(4)).plan().empty
    closed = query(Record).where(country="F", goals=ge(1)).where(goals=le(4)).compile()
    assert closed["KeyConditionExpression"].endswith("BETWEEN :v1 AND :v2")
    assert "FilterExpression" not in closed
    assert query(Record).where(country="F", goals=gt(4)).where(goals=lt(4)).plan().empty
    tight = query(Record).where(country="F", goals=gt(1)).where(goals=ge(3)).compile()
    assert tight["KeyConditionExpression"] == "#n0 = :v0 AND #n1 >= :v1"
    assert tight["ExpressionAttributeValues"][":v1"] == {"N": "3"}


def test_a_range_on_a_str_field_followed_by_more_template_is_exact() -> None:
    # The terminator '#' after "sit" sorts below every character of escaped text, so "sit!"
    # (sit%21#) and "sita" (sita#) follow it.
    params = query(Dog).where(group="g", command=gt("sit")).compile()
    assert params["KeyConditionExpression"] == "#n0 = :v0 AND #n1 BETWEEN :v1 AND :v2"
    assert params["ExpressionAttributeValues"][":v1"] == s("DOG#sit#" + MAX)
    assert params["ExpressionAttributeValues"][":v2"] == s("DOG#" + MAX)
    assert "FilterExpression" not in params
    below = query(Dog).where(group="g", command=lt("sit")).compile()
    assert below["ExpressionAttributeValues"][":v2"] == s('DOG#sit"' + MAX)


def test_a_range_on_a_readable_str_field_followed_by_more_template_is_exact() -> None:
    # The U+0000 terminator sorts below every character: nothing lies between "sit" and it.
    table = Table("ZooReadable", "PK", "SK", key_style="readable")

    class OldDog(Entity, table=table, keys={"PK": "G#{group}", "SK": "DOG#{command}#{age:03d}"}):
        group: str
        command: str
        age: int

    params = query(OldDog).where(group="g", command=gt("sit")).compile()
    assert params["ExpressionAttributeValues"][":v1"] == s("DOG#sit\x00" + MAX)
    assert params["ExpressionAttributeValues"][":v2"] == s("DOG#" + MAX)
    below = query(OldDog).where(group="g", command=lt("sit")).compile()
    assert below["ExpressionAttributeValues"][":v2"] == s("DOG#sit")


def test_a_gap_in_the_template_is_refused_then_filtered_on_opt_in() -> None:
    q = query(Address).where(country="UK", city="London", street="Downing St")
    with pytest.raises(QueryPlanError) as caught:
        q.plan()
    assert caught.value.rule == "query.unabsorbed"
    params = q.allow_filter_fallback().compile()
    assert params["ExpressionAttributeValues"][":v1"] == s("London#")
    assert params["FilterExpression"] == "#n2 = :v2"


# -- index choice ------------------------------------------------------------------------------


def test_the_index_absorbing_most_conditions_wins_and_all_candidates_are_explained() -> None:
    q = query(Thread).where(forum="S3", last_post=ge(utc(2015, 1, 1)))
    plan = q.plan()
    assert plan.index_name == "LastPostIndex"
    by_label = {c.label: c for c in plan.candidates}
    assert set(by_label) == {"table", "LastPostIndex", "AuthorIndex"}
    assert by_label["LastPostIndex"].chosen
    assert by_label["LastPostIndex"].score == 2
    assert by_label["table"].score == 1
    assert by_label["AuthorIndex"].score is None
    assert "author" in by_label["AuthorIndex"].reason
    text = str(q.explain())
    for label in by_label:
        assert label in text


def test_ties_prefer_the_base_table() -> None:
    plan = query(Badge).where(owner="o").plan()
    assert plan.index is None
    lsi = next(c for c in plan.candidates if c.label == "LSI3")
    assert lsi.score == 1
    assert "table" in lsi.reason


def test_ties_prefer_the_covering_projection_then_declaration_order() -> None:
    full = query(Badge).where(owner="o", level=gt(3)).plan()
    assert full.index_name == "LSI3"  # LSI2 is KEYS_ONLY: it would fetch label
    keys_only = query(Badge).where(owner="o", level=gt(3)).select("code", "level").plan()
    assert keys_only.index_name == "LSI2"  # both cover: the one declared first
    assert keys_only.fetched == ()


def test_using_forces_an_index_and_validates_it() -> None:
    plan = query(Thread).where(forum="S3").using("LastPostIndex").plan()
    assert plan.index_name == "LastPostIndex"
    with pytest.raises(QueryPlanError) as forced:
        query(Thread).where(subject="x").using("LastPostIndex").plan()
    assert forced.value.rule == "query.forced-index"
    with pytest.raises(ValidationError) as unknown:
        query(Thread).where(forum="S3").using("Nope").plan()
    assert unknown.value.rule == "index.unknown"
    assert query(Thread).where(forum="S3").using(None).plan().index is None


def test_no_index_names_the_missing_partition_fields() -> None:
    with pytest.raises(QueryPlanError) as caught:
        query(Thread).where(subject="How").plan()
    assert caught.value.rule == "query.no-index"
    assert "forum" in str(caught.value)
    assert "author" in str(caught.value)


def test_an_unabsorbed_refusal_names_the_sparse_index_that_holds_the_field() -> None:
    """The note names the sparse index whose key holds the condition, not the first one."""
    shelter = Table.with_reserved_lsi_slots("Shelter", "PK", "SK")

    class Kitten(
        Entity,
        table=shelter,
        keys={
            "PK": "Z#{zoo}",
            "SK": "KITTEN#{name}",
            "LSI1SK": "KITTEN#{color}",
            "LSI3SK": "KITTEN#{age:03d}#{toy}",
        },
    ):
        zoo: str
        name: str
        age: int
        color: str | None = None
        toy: str | None = None

    with pytest.raises(QueryPlanError) as refused:
        query(Kitten).where(zoo="z", age=eq(36)).plan()
    assert refused.value.rule == "query.unabsorbed"
    message = str(refused.value)
    assert "(LSI3 is not used: Kitten items whose toy is None" in message
    assert "LSI1 is not used" not in message
    # The only sparse index (LSI1) does not hold toy: no note at all.
    with pytest.raises(QueryPlanError) as plain:
        query(Kitten).where(zoo="z", toy="ball").plan()
    assert plain.value.rule == "query.unabsorbed"
    assert "is not used" not in str(plain.value)


def test_gsi_consistent_read_is_refused() -> None:
    with pytest.raises(QueryPlanError) as caught:
        query(Thread).where(author="ann").using("AuthorIndex").consistent().plan()
    assert caught.value.rule == "query.gsi-consistent-read"
    with pytest.raises(QueryPlanError) as forced:
        query(Thread).where(author="ann").using("AuthorIndex").select("subject").consistent().plan()
    assert forced.value.rule == "query.gsi-consistent-read"


def test_gsi_missing_fields_need_hydrate_partial_or_select() -> None:
    q = query(Thread).where(author="ann").using("AuthorIndex")
    with pytest.raises(QueryPlanError) as caught:
        q.plan()
    assert caught.value.rule == "query.gsi-projection"
    hydrated = q.hydrate().plan()
    assert hydrated.index_name == "AuthorIndex"
    assert set(hydrated.unavailable) == {"replies", "tags"}
    assert "BatchGetItem" in str(q.hydrate().explain())
    assert q.partial().plan().unavailable == hydrated.unavailable
    # Every selected field can be parsed back from the projected key attributes.
    covered = q.select("forum", "subject", "author", "last_post").plan()
    assert covered.unavailable == ()
    assert q.plan(count=True).unavailable == ()


def test_filter_on_an_attribute_the_index_does_not_project_is_refused() -> None:
    with pytest.raises(QueryPlanError) as caught:
        query(Thread).where(author="ann").using("AuthorIndex").filter(
            replies=gt(1)
        ).hydrate().plan()
    assert caught.value.rule == "query.filter-not-projected"


@pytest.mark.parametrize(
    ("build", "rule"),
    [
        (lambda: query(Thread).where(forum="S3", replies=3), "query.where-non-key"),
        (lambda: query(Thread).where(forum="S3", subject=ne("x")), "query.where-operator"),
        (
            lambda: query(Thread).where((cond("forum") == "a") | (cond("forum") == "b")),
            "query.where-operator",
        ),
        (lambda: query(Thread, Parrot), "query.mixed-tables"),
    ],
)
def test_refusal_rules(build: Any, rule: str) -> None:
    with pytest.raises(QueryPlanError) as caught:
        build().plan()
    assert caught.value.rule == rule


# -- placeholders ------------------------------------------------------------------------------

_IDENTIFIER = re.compile(r"[#:]?[A-Za-z_][A-Za-z0-9_]*")


def test_every_name_and_value_is_a_placeholder_even_reserved_words() -> None:
    params = (
        query(Box)
        .where(name="crate", size=ge(10))
        .filter(status="open", count=gt(2))
        .select("status", "count")
        .compile()
    )
    keywords = {"AND", "BETWEEN", "begins_with"}
    for key in ("KeyConditionExpression", "FilterExpression", "ProjectionExpression"):
        for token in _IDENTIFIER.findall(params[key]):
            assert token in keywords or token[0] in "#:", (key, token)
    assert set(params["ExpressionAttributeNames"].values()) == {
        "Name",
        "Size",
        "Status",
        "Count",
        "_type",
    }


# -- several entities, shards, scans -----------------------------------------------------------


def test_entities_whose_joined_range_holds_no_other_type_share_one_request() -> None:
    plan = query(Parrot, Dog).where(group="g").plan()
    assert [r.label for r in plan.requests] == ["Parrot+Dog"]
    params = plan.requests[0].params
    assert params["KeyConditionExpression"] == "#n0 = :v0 AND #n1 BETWEEN :v1 AND :v2"
    assert params["ExpressionAttributeValues"][":v1"] == s("DOG#")
    assert params["ExpressionAttributeValues"][":v2"] == s("PARROT#" + MAX)
    assert "FilterExpression" not in params
    assert "one Query for Parrot+Dog" in str(query(Parrot, Dog).where(group="g").explain())


def test_entities_whose_joined_range_holds_another_type_get_one_request_each() -> None:
    # Dog items lie between CAT# and PARROT#: one Query would read them for nothing.
    plan = query(Parrot, Cat).where(group="g").plan()
    assert [r.label for r in plan.requests] == ["Parrot", "Cat"]
    prefixes = [r.params["ExpressionAttributeValues"][":v1"] for r in plan.requests]
    assert prefixes == [s("PARROT#"), s("CAT#")]
    assert plan.merge_attribute == "SK"
    explained = str(query(Parrot, Cat).where(group="g").explain())
    assert "merged by SK" in explained
    assert "2 (Parrot, Cat)" in explained
    assert "would also read Dog items" in explained
    with pytest.raises(QueryPlanError) as caught:
        query(Parrot, Cat).where(group="g").compile()
    assert caught.value.rule == "query.fan-out"


def test_a_sharded_gsi_fans_out_to_every_shard() -> None:
    q = query(Order).where(status="PENDING", order_date=lt(utc(2024, 1, 1)))
    requests = q.compile_all()
    assert [r["IndexName"] for r in requests] == ["StatusIndex"] * 4
    assert [r["ExpressionAttributeValues"][":v0"] for r in requests] == [
        s(f"PENDING#{n:02d}") for n in range(1, 5)
    ]
    # The template has no namespace, so the range has no lower bound: "<=" the predecessor.
    assert {r["KeyConditionExpression"] for r in requests} == {"#n0 = :v0 AND #n1 <= :v1"}
    assert {r["ExpressionAttributeValues"][":v1"]["S"] for r in requests} == {
        "2024-01-01T00:00:00.000000Y" + MAX
    }
    plan = q.plan()
    assert plan.merge_attribute == "OrderDate"
    one = q.where(shard=2).compile()
    assert one["ExpressionAttributeValues"][":v0"] == s("PENDING#02")


def test_composite_status_date_key_of_seed_001() -> None:
    params = (
        query(Order)
        .where(customer="c1", status="PENDING", order_date=lt(utc(2024, 1, 1)))
        .compile()
    )
    assert params["IndexName"] == "CustomerIndex"
    assert params["KeyConditionExpression"] == "#n0 = :v0 AND #n1 BETWEEN :v1 AND :v2"
    assert params["ExpressionAttributeValues"][":v1"] == s("PENDING#")
    assert params["ExpressionAttributeValues"][":v2"] == s(
        "PENDING#2024-01-01T00:00:00.000000Y" + MAX
    )


_key_text = st.characters(blacklist_categories=("Cs",), blacklist_characters=MAX_CHAR)


@given(st.text(_key_text, min_size=1, max_size=12), st.text(_key_text, max_size=5))
def test_shard_values_are_stable_and_in_range(order_id: str, customer: str) -> None:
    values = {"order_id": order_id}
    first = shard_value(Order, "shard", values)
    assert 1 <= first <= 4
    assert shard_value(Order, "shard", {**values, "customer": customer}) == first


def test_shard_declaration_errors() -> None:
    with pytest.raises(Exception, match=r"shard\.count"):
        Shard(0)
    with pytest.raises(Exception, match=r"shard\.not-a-shard"):
        shard_value(Order, "status", {"order_id": "x"})


def test_scan_filters_by_entity_type_and_splits_into_segments() -> None:
    requests = scan(Parrot).filter(note="x").segments(3).compile_all()
    assert requests[1] == {
        "TableName": "Zoo",
        "FilterExpression": "#n0 = :v0 AND (#n1 = :v1)",
        "Segment": 1,
        "TotalSegments": 3,
        "ExpressionAttributeNames": {"#n0": "_type", "#n1": "note"},
        "ExpressionAttributeValues": {":v0": s("Parrot"), ":v1": s("x")},
    }
    both = scan(Parrot, Cat).compile_all()[0]
    assert both["FilterExpression"] == "#n0 IN (:v0, :v1)"
    with pytest.raises(QueryPlanError) as caught:
        scan(Thread).using("AuthorIndex").select("subject").consistent().plan()
    assert caught.value.rule == "query.gsi-consistent-read"


def test_count_selects_count_and_needs_no_projection() -> None:
    params = query(Thread).where(author="ann").using("AuthorIndex").compile(count=True)
    assert params["Select"] == "COUNT"
    assert "ProjectionExpression" not in params


# -- cursors and decoding ----------------------------------------------------------------------


def test_cursor_round_trip_and_refusals() -> None:
    states: list[Any] = [
        {"PK": s("a\x00" + MAX), "SK": {"B": b"\x00\xff"}, "N": {"N": "1.5"}},
        "done",
        None,
    ]
    cursor = encode_cursor("abc", states, b"key")
    assert decode_cursor(cursor, "abc", 3, b"key") == states
    with pytest.raises(ValidationError) as other:
        decode_cursor(cursor, "xyz", 3, b"key")
    assert other.value.rule == "cursor.mismatch"
    with pytest.raises(ValidationError) as garbage:
        decode_cursor("not a cursor!", "abc", 3, b"key")
    assert garbage.value.rule == "cursor.malformed"


def test_query_shape_changes_the_fingerprint() -> None:
    base = query(Thread).where(forum="S3")
    prints = {
        base.plan().fingerprint,
        base.descending().plan().fingerprint,
        query(Thread).where(forum="EC2").plan().fingerprint,
        base.using("LastPostIndex").plan().fingerprint,
        base.filter(replies=1).plan().fingerprint,
    }
    assert len(prints) == 5
    assert base.limit(3).plan().fingerprint == base.plan().fingerprint


def _author_index_item(subject: str) -> dict[str, Any]:
    """A thread of ann's in S3 as AuthorIndex returns it: its keys only, no type attribute."""
    return {
        "ForumName": s("S3"),
        "Subject": s(subject),
        "Author": s("AUTHOR#ann"),
        "LastPostDateTime": s("2015-09-01T00:00:00.000000Z"),
    }


def test_keys_only_items_decode_by_template_and_foreign_items_drop() -> None:
    plan = (
        query(Thread)
        .where(author="ann")
        .using("AuthorIndex")
        .select("forum", "subject", "last_post")
        .plan()
    )
    item = _author_index_item("Hello")
    got = decode(plan, item, (Thread,))
    assert isinstance(got, Thread)
    assert (got.forum, got.subject, got.last_post) == ("S3", "Hello", utc(2015, 9, 1))
    assert missing_fields(got) == {"author", "replies", "tags"}
    with pytest.raises(AttributeError):
        _ = got.replies
    foreign = {**item, "_type": s("Other")}
    assert decode(plan, foreign, (Thread,)) is None
    mismatched = {**item, "Author": s("nobody")}
    assert decode(plan, mismatched, (Thread,)) is None


def test_a_selected_field_read_back_absent_is_none_not_missing() -> None:
    """None is stored as absence: a selected optional field the item lacks is None."""
    plan = query(Thread).where(forum="S3").select("forum", "subject", "last_post", "author").plan()
    item = {"ForumName": s("S3"), "Subject": s("Hi"), "_type": s("Thread"), "forum": s("S3")}
    got = decode(plan, item, (Thread,))
    assert got is not None
    assert (got.last_post, got.author) == (None, None)
    assert missing_fields(got) == {"replies", "tags"}


def test_an_absent_field_the_read_could_not_return_stays_missing() -> None:
    # A GSI in partial mode does not project it.
    plan = query(Thread).where(author="ann").using("AuthorIndex").partial().plan()
    item = _author_index_item("Hi")
    got = decode(plan, item, (Thread,))
    assert got is not None
    assert missing_fields(got) == {"replies", "tags"}
    # An engine that did not fetch what an LSI does not project (no type attribute came back).
    plan = query(Thread).where(forum="S3").using("LastPostIndex").select("subject", "author").plan()
    assert plan.fetched == ("author",)
    got = decode(plan, {"ForumName": s("S3"), "Subject": s("Hi")}, (Thread,))
    assert got is not None
    assert missing_fields(got) == {"forum", "last_post", "author", "replies", "tags"}


def test_complete_items_are_not_partial() -> None:
    plan = query(Record).where(country="F").plan()
    item = {
        "Country": s("F"),
        "Game": s("WC-2022"),
        "Goals": {"N": "16"},
        "_type": s("Record"),
        "country": s("F"),
        "game": s("WC-2022"),
        "goals": {"N": "16"},
        "Matches": {"N": "7"},
        "venue": s("Qatar"),
    }
    got = decode(plan, item, (Record,))
    assert got == Record(country="F", game="WC-2022", goals=16, matches=7, venue="Qatar")
    assert got is not None
    assert missing_fields(got) == frozenset()


# -- the key condition compiler against a pure oracle (support.oracles) -----------------------


_names = st.text(
    alphabet=st.sampled_from(["a", "b", "\x00", "é", "\ue000", "\ud7ff", "\U0001f600", "#"]),
    max_size=4,
)
_ops = st.sampled_from(["eq", "lt", "le", "gt", "ge", "between", "begins_with"])


def _predicate(op: str, a: Any, b: Any) -> tuple[Any, Any]:
    makers = {"eq": eq, "lt": lt, "le": le, "gt": gt, "ge": ge}
    if op == "between":
        return between(a, b), lambda v: a <= v <= b
    if op == "begins_with":
        return begins_with(a), lambda v: v.startswith(a)
    checks = {
        "eq": lambda v: v == a,
        "lt": lambda v: v < a,
        "le": lambda v: v <= a,
        "gt": lambda v: v > a,
        "ge": lambda v: v >= a,
    }
    return makers[op](a), checks[op]


@given(st.lists(_names, min_size=1, max_size=8), _names, _names, _ops)
def test_compiled_bounds_select_exactly_the_matching_str_keys(
    stored: list[str], a: str, b: str, op: str
) -> None:
    operator, check = _predicate(op, a, b)
    plan = query(Cat).where(group="g", name=operator).plan()
    keys = {name: Cat(group="g", name=name).to_item()["SK"] for name in stored}
    keys |= {"dog": "DOG#x#001", "zzz": "CAU#"}
    if plan.empty is not None:
        assert not any(check(name) for name in stored)
        return
    params = plan.requests[0].params
    for name, key in keys.items():
        want = check(name) if key.startswith("CAT#") else False
        assert sort_key_selects(params, key) == want, (name, key)


@given(
    st.lists(st.tuples(st.integers(-999999, 999999), _names), min_size=1, max_size=8),
    st.integers(-999999, 999999),
    st.integers(-999999, 999999),
    st.sampled_from(["eq", "lt", "le", "gt", "ge", "between"]),
)
def test_compiled_bounds_select_exactly_the_matching_int_keys(
    stored: list[tuple[int, str]], a: int, b: int, op: str
) -> None:
    operator, check = _predicate(op, a, b)
    plan = query(Parrot).where(group="g", words=operator).plan()
    if plan.empty is not None:
        assert not any(check(words) for words, _ in stored)
        return
    params = plan.requests[0].params
    for words, name in stored:
        key = Parrot(group="g", name=name, words=words).to_item()["LSI1SK"]
        assert sort_key_selects(params, key) == check(words), key
    assert not sort_key_selects(params, "DOG#001#x")


def test_decimal_fields_encode_bounds_by_value() -> None:
    class Price(Entity, table=zoo, keys={"PK": "PRICE#{sku}", "SK": "P#{amount:08.2f}#{at}"}):
        sku: str
        amount: Decimal
        at: datetime

    params = query(Price).where(sku="x", amount=lt(Decimal("-0.01"))).compile()
    assert params["ExpressionAttributeValues"][":v2"] == s("P#-99999.98" + MAX)


# -- hydration over a scripted client: UnprocessedKeys are retried, nothing is dropped ---------


def _threads() -> list[Thread]:
    return [
        Thread(forum="S3", subject=f"s{n}", last_post=utc(2015, 9, n + 1), author="ann", replies=n)
        for n in range(3)
    ]


def _index_item(thread: Thread) -> dict[str, Any]:
    wire = thread.to_wire()
    return {k: wire[k] for k in ("ForumName", "Subject", "Author", "LastPostDateTime")}


def _key(thread: Thread) -> dict[str, Any]:
    wire = thread.to_wire()
    return {k: wire[k] for k in ("ForumName", "Subject")}


def test_hydration_retries_unprocessed_keys_and_keeps_index_order() -> None:
    from lsiorm._io.drivers import SyncDriver
    from lsiorm._ops.pipeline import Context
    from lsiorm._ops.reads import all as all_items
    from lsiorm._ops.retry import RetryPolicy

    threads = _threads()
    table = forum.name
    client = ScriptedClient(
        {
            "Query": [{"Items": [_index_item(t) for t in threads], "Count": 3, "ScannedCount": 3}],
            "BatchGetItem": [
                {
                    "Responses": {table: [threads[1].to_wire()]},
                    "UnprocessedKeys": {table: {"Keys": [_key(threads[2]), _key(threads[0])]}},
                },
                {"Responses": {table: [threads[2].to_wire(), threads[0].to_wire()]}},
            ],
        }
    )
    ctx = Context(RetryPolicy(max_attempts=3, initial=0.001, maximum=0.002))
    got = SyncDriver(client).run(
        all_items(ctx, query(Thread).where(author="ann").using("AuthorIndex").hydrate())
    )
    assert got == threads
    batch_calls = [p for op, p in client.calls if op == "BatchGetItem"]
    assert [len(p["RequestItems"][table]["Keys"]) for p in batch_calls] == [3, 2]
    assert batch_calls[1]["RequestItems"][table]["Keys"] == [_key(threads[2]), _key(threads[0])]


def test_hydration_that_never_completes_raises_with_the_keys_left() -> None:
    from lsiorm._io.drivers import SyncDriver
    from lsiorm._ops.pipeline import Context
    from lsiorm._ops.reads import all as all_items
    from lsiorm._ops.retry import RetryPolicy
    from lsiorm.errors import BatchGetIncompleteError

    threads = _threads()
    table = forum.name
    stuck = {"Responses": {table: []}, "UnprocessedKeys": {table: {"Keys": [_key(threads[0])]}}}
    client = ScriptedClient(
        {"Query": [{"Items": [_index_item(threads[0])], "Count": 1, "ScannedCount": 1}]},
        then=stuck,
    )
    ctx = Context(RetryPolicy(max_attempts=3, initial=0.001, maximum=0.002))
    with pytest.raises(BatchGetIncompleteError) as caught:
        SyncDriver(client).run(
            all_items(ctx, query(Thread).where(author="ann").using("AuthorIndex").hydrate())
        )
    assert caught.value.unprocessed == [_key(threads[0])]
    assert sum(op == "BatchGetItem" for op, _ in client.calls) == 3


def test_equality_on_none_or_an_empty_partition_matches_nothing() -> None:
    assert query(Thread).where(author=None).using("AuthorIndex").hydrate().plan().empty is not None
    assert query(Thread).where(forum="").plan().empty is not None


def test_two_different_partition_values_match_nothing_without_a_request() -> None:
    from lsiorm import Entity, Table, query
    from lsiorm.errors import QueryPlanError

    games = Table("PlanGames", "Country", "Game")

    class Match(Entity, table=games, keys={"Country": "{country}", "Game": "{game}"}):
        country: str
        game: str

    contradictory = query(Match).where(country="France").where(country="Argentina")
    assert contradictory.plan().empty is not None
    assert contradictory.compile_all() == []
    with pytest.raises(QueryPlanError) as info:
        contradictory.compile()
    assert info.value.rule == "query.no-request"
    same_twice = query(Match).where(country="France").where(country="France")
    assert same_twice.compile()["ExpressionAttributeValues"] == {":v0": {"S": "France"}}
