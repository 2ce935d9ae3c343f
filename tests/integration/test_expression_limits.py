"""DynamoDB's limit of 300 operators and functions per expression, as DynamoDB Local applies it.

lsiorm's count is compared with DynamoDB Local's own verdict on random expressions near the
limit, and a filter over the limit is refused by lsiorm before the engine sees it.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lsiorm import Entity, Session, Table, ValidationError, where
from lsiorm._requests.limits import MAX_EXPRESSION_OPERATORS, count_operators
from lsiorm.errors import ServiceValidationError
from support.engine_examples import engine_examples

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


@engine_examples(60)
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
