"""Exact reads: sparse indexes, other types in a shared key range, valid filter operands."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lsiorm._conditions import begins_with, between, cond, eq, ge, gt, le, lt, ne
from lsiorm._query.values import query
from lsiorm.errors import QueryPlanError, ValidationError
from support.models import Kitten, Puppy


def test_automatic_choice_skips_an_index_where_matching_items_are_absent() -> None:
    q = query(Kitten).where(zoo="z", age=between(-98, 1))
    with pytest.raises(QueryPlanError) as caught:
        q.plan()
    assert caught.value.rule == "query.unabsorbed"
    assert "ByAge is not used" in str(caught.value)
    assert "color" in str(caught.value)
    plan = q.allow_filter_fallback().plan()
    assert plan.index is None
    by_age = next(c for c in plan.candidates if c.label == "ByAge")
    assert by_age.score is None
    assert "sparse" in by_age.reason


def test_a_condition_on_the_optional_field_makes_the_index_exact() -> None:
    plan = query(Kitten).where(zoo="z", age=3, color=ge("a")).plan()
    assert plan.index_name == "ByAge"
    assert plan.sparse == ()
    # A filter conjunct that no None satisfies requires the value too.
    filtered = query(Kitten).where(zoo="z", age=between(1, 4)).filter(color=eq("red"))
    assert filtered.plan().index_name == "ByAge"
    # A filter that None satisfies does not.
    with pytest.raises(QueryPlanError):
        query(Kitten).where(zoo="z", age=between(1, 4)).filter(color=ne("red")).plan()


def test_using_a_sparse_index_says_which_items_it_cannot_see() -> None:
    q = query(Kitten).where(zoo="z", age=between(-98, 1)).using("ByAge")
    plan = q.plan()
    assert plan.index_name == "ByAge"
    assert plan.sparse
    assert "color" in plan.sparse[0]
    assert "not seen" in str(q.explain())


def test_a_shared_partition_only_gsi_filters_on_the_type() -> None:
    q = query(Kitten).where(zone="north").using("ByZone")
    params = q.compile()
    assert "FilterExpression" in params
    assert params["ExpressionAttributeNames"]["#n1"] == "_type"
    assert {"S": "Kitten"} in params["ExpressionAttributeValues"].values()
    text = str(q.explain())
    assert "filtered on the type attribute (_type)" in text
    assert "Puppy" in text
    both = query(Kitten, Puppy).where(zone="north").using("ByZone").compile_all()
    assert len(both) == 1
    assert "FilterExpression" not in both[0]  # no third type can be there


def test_disjoint_namespaces_need_no_type_filter() -> None:
    q = query(Kitten).where(zoo="z")
    assert "FilterExpression" not in q.compile()
    assert "exact by the key condition" in str(q.explain())


def test_an_index_without_the_type_attribute_cannot_tell_types_apart() -> None:
    with pytest.raises(QueryPlanError) as caught:
        query(Kitten).where(zone="north").using("ByZoneKeys").select("name").plan()
    assert caught.value.rule == "query.type-not-projected"
    assert "_type" in str(caught.value)
    # INCLUDE of the type attribute is enough.
    params = query(Kitten).where(zone="north").using("ByZoneType").select("name").compile()
    assert "FilterExpression" in params


def test_automatic_choice_avoids_an_index_without_the_type_attribute() -> None:
    plan = query(Puppy).where(zone="north").plan(count=True)
    assert plan.index_name in ("ByZone", "ByZoneType")
    keys_only = next(c for c in plan.candidates if c.label == "ByZoneKeys")
    assert keys_only.score is None
    assert "type attribute" in keys_only.reason


def test_two_bounds_on_a_number_sort_key_compile_to_a_closed_between() -> None:
    q = query(Kitten).where(zone="north", mass=gt(2)).where(mass=le(5))
    params = q.compile()
    assert params["IndexName"] == "ByMass"
    assert params["KeyConditionExpression"].endswith("BETWEEN :v1 AND :v2")
    assert params["ExpressionAttributeValues"][":v1"] == {"N": "3"}  # mass is an int
    assert "FilterExpression" not in params  # DynamoDB refuses a filter on a key attribute
    assert "mass > 2 is read as mass >= 3" in str(q.explain())
    assert query(Kitten).where(zone="n", mass=gt(3)).where(mass=lt(3)).plan().empty
    assert query(Kitten).where(zone="n", mass=gt(3)).where(mass=le(3)).plan().empty
    assert (
        query(Kitten)
        .where(zone="n", mass=ge(2))
        .where(mass=le(2))
        .compile()["KeyConditionExpression"]
        .endswith("= :v1")
    )


# -- valid operands ---------------------------------------------------------------------------


@pytest.mark.parametrize("op", [lt(True), le(False), gt(False), ge(True), between(False, True)])
def test_a_bool_filter_takes_only_equality(op: Any) -> None:
    with pytest.raises(ValidationError) as caught:
        query(Kitten).where(zoo="z").filter(indoor=op).compile()
    assert caught.value.rule == "condition.bool-operator"
    for fine in (eq(True), ne(False)):
        assert "FilterExpression" in query(Kitten).where(zoo="z").filter(indoor=fine).compile()


def test_operand_types_dynamodb_refuses_are_refused_locally() -> None:
    with pytest.raises(ValidationError) as prefix:
        query(Kitten).where(zoo="z").filter(age=begins_with(1)).compile()
    assert prefix.value.rule == "condition.operand-type"
    # Text for a number key field is refused earlier, by the strict key-value check.
    with pytest.raises(ValidationError) as text:
        query(Kitten).where(zoo="z").filter(age=begins_with("1")).compile()
    assert text.value.rule == "key.value-type"
    with pytest.raises(ValidationError) as none:
        query(Kitten).where(zoo="z").filter(cond("color") < None).compile()
    assert none.value.rule == "condition.operand-type"
    with pytest.raises(ValidationError) as reversed_:
        query(Kitten).where(zoo="z").filter(age=between(5, 1)).compile()
    assert reversed_.value.rule == "condition.between-order"


@given(low=st.booleans(), high=st.booleans(), op=st.sampled_from(["lt", "le", "gt", "ge", "bt"]))
def test_a_bool_range_in_the_fallback_becomes_equalities(low: bool, high: bool, op: str) -> None:
    made = {"lt": lt(low), "le": le(low), "gt": gt(low), "ge": ge(low), "bt": between(low, high)}
    q = query(Kitten).where(zoo="z", indoor=made[op]).using("ByName").allow_filter_fallback()
    plan = q.plan()
    allowed = [
        v
        for v in (False, True)
        if {
            "lt": v < low,
            "le": v <= low,
            "gt": v > low,
            "ge": v >= low,
            "bt": low <= v <= high,
        }[op]
    ]
    if not allowed:
        assert plan.empty is not None
        return
    assert plan.filter is not None
    assert "<" not in plan.filter
    assert ">" not in plan.filter
    assert "BETWEEN" not in plan.filter
    assert len([v for v in plan.values.values() if "BOOL" in v]) == len(allowed)
