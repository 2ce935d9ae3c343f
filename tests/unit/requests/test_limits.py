"""DynamoDB's limits, checked before sending: 300 operators and functions, 32 path levels."""

from __future__ import annotations

from typing import Any

import pytest

from lsiorm import Entity, Table, ValidationError
from lsiorm._model.entity_meta import meta_of
from lsiorm._requests.limits import check_request, count_operators
from lsiorm._requests.update_plan import update_spec
from support.updates import update_params


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
    update_params(meta, {"k": "a"}, update_spec(set={"doc" + ".x" * 31: 1}))
    with pytest.raises(ValidationError) as info:
        update_params(meta, {"k": "a"}, update_spec(set={"doc" + ".x" * 32: 1}))
    assert info.value.rule == "update.path-too-deep"
