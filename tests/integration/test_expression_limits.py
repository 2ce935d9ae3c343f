"""DynamoDB's limit of 300 operators and functions per expression, and 32 path levels.

lsiorm counts operators as DynamoDB does and refuses a request over the limit before sending it.
The count is compared with DynamoDB Local's own verdict on random expressions near the limit.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lsiorm import Entity, Session, Table, ValidationError, where
from lsiorm._model.entity_meta import meta_of
from lsiorm._requests.limits import MAX_EXPRESSION_OPERATORS, check_request, count_operators
from lsiorm._requests.update_expression import update_request
from lsiorm._requests.update_plan import update_spec
from lsiorm.errors import ServiceValidationError


@pytest.mark.parametrize(
    ("text", "count"),
    [
        ("#a = :v", 1),
        ("#a BETWEEN :v AND :w", 1),
        ("#a BETWEEN :v AND :w AND #b = :x", 3),
        ("#a IN (:v, :w, :x)", 1),
        ("NOT #a = :v", 2),
        ("size(#a) > :v", 2),
        ("(#a = :v) OR (begins_with(#b, :w))", 3),
        ("attribute_exists(#a) AND attribute_not_exists(#b)", 3),
    ],
)
def test_counts_follow_dynamodb(text: str, count: int) -> None:
    assert count_operators(text) == count


def test_update_expressions_count_functions_and_arithmetic_not_assignments() -> None:
    text = "SET #a = :v, #b = #b + :w, #c = list_append(if_not_exists(#c, :e), :l) REMOVE #d"
    assert count_operators(text, update=True) == 3


def test_a_condition_over_the_limit_is_refused_before_sending() -> None:
    text = " OR ".join(["#a = :v"] * 151)  # 151 comparisons and 150 ORs
    params = {"TableName": "t", "Key": {}, "ConditionExpression": text}
    with pytest.raises(ValidationError) as info:
        check_request("DeleteItem", params)
    assert info.value.rule == "expression.max-300-operators"
    check_request("DeleteItem", {**params, "ConditionExpression": " OR ".join(["#a = :v"] * 150)})


class Deep(Entity, table=Table("deep_paths", "pk"), keys={"pk": "{k}"}):
    k: str
    doc: dict[str, Any] = {}  # noqa: RUF012 - pydantic copies defaults


def test_a_path_deeper_than_32_levels_is_refused() -> None:
    meta = meta_of(Deep)
    update_request(meta, {"k": "a"}, update_spec(set={"doc" + ".x" * 31: 1}))
    with pytest.raises(ValidationError) as info:
        update_request(meta, {"k": "a"}, update_spec(set={"doc" + ".x" * 32: 1}))
    assert info.value.rule == "update.path-too-deep"


TERMS = st.sampled_from(
    [
        "#a = :v",
        "#a <> :v",
        "#a BETWEEN :v AND :v",
        "#a IN (:v, :v)",
        "NOT #a = :v",
        "size(#a) > :v",
        "begins_with(#a, :v)",
        "attribute_exists(#a)",
        "(#a = :v)",
    ]
)


@pytest.fixture(scope="module")
def local_table(backend: str, endpoint_url: str) -> Iterator[tuple[Any, str]]:
    if backend != "dynamodb-local":
        pytest.skip("the operator limit is DynamoDB's; moto does not enforce it")
    table = Table(f"ops_{uuid.uuid4().hex[:8]}", "pk")
    with Session(endpoint_url=endpoint_url) as session:
        session.create_table(table)
        try:
            yield session.client, table.name
        finally:
            session.delete_table(table)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    terms=st.lists(TERMS, min_size=95, max_size=160),
    joins=st.lists(st.sampled_from([" AND ", " OR "]), min_size=160, max_size=160),
)
def test_the_count_agrees_with_dynamodb_local(
    local_table: tuple[Any, str], terms: list[str], joins: list[str]
) -> None:
    client, name = local_table
    text = terms[0] + "".join(j + t for j, t in zip(joins, terms[1:], strict=False))
    ours = count_operators(text) <= MAX_EXPRESSION_OPERATORS
    try:
        client.delete_item(
            TableName=name,
            Key={"pk": {"S": "missing"}},
            ConditionExpression=text,
            ExpressionAttributeNames={"#a": "pk"},
            ExpressionAttributeValues={":v": {"S": "x"}},
        )
        theirs = True
    except client.exceptions.ConditionalCheckFailedException:
        theirs = True
    except client.exceptions.ClientError as exc:
        message = str(exc)
        if "size has exceeded" in message:
            return  # the 4 KB limit came first
        assert "too many operators" in message, message
        theirs = False
    assert ours == theirs, (count_operators(text), text)


def test_a_long_filter_is_refused_by_lsiorm_not_the_engine(endpoint_url: str) -> None:
    table = Table(f"opsq_{uuid.uuid4().hex[:8]}", "pk")

    class Row(Entity, table=table, keys={"pk": "{k}"}):
        k: str
        n: int = 0

    cond = where(n=0)
    for i in range(1, 160):
        cond = cond | where(n=i)
    with Session(endpoint_url=endpoint_url) as session, pytest.raises(ValidationError) as info:
        session.delete(Row, k="a", condition=cond)
    assert info.value.rule == "expression.max-300-operators"
    assert not isinstance(info.value, ServiceValidationError)
