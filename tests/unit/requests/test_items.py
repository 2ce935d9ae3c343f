"""Single-item requests built without I/O: exact put params with their conditions."""

from __future__ import annotations

from enum import Enum
from typing import Literal

import pytest

from lsiorm import Entity, Table, begins_with, gt, where
from lsiorm._conditions import Placeholders
from lsiorm._model.entity_meta import meta_of
from lsiorm._requests.items import compile_entity_condition, moving_put, put_request
from lsiorm.errors import ValidationError
from support.models import declare_ranked_thread, ranked_forum_table


def test_put_request_create_only_dict() -> None:
    table = ranked_forum_table("PureTable")
    Thread, _ = declare_ranked_thread(table)
    t = Thread(forum="S3", subject="a", replies=2)
    params, stored = put_request(t, create_only=True, condition=where(replies=gt(1)))
    assert stored is t
    assert params == {
        "TableName": "PureTable",
        "Item": {
            "ForumName": {"S": "S3"},
            "Subject": {"S": "T#a"},
            "_type": {"S": "Thread"},
            "forum": {"S": "S3"},
            "subject": {"S": "a"},
            "Replies": {"N": "2"},
            "tags": {"L": []},
        },
        "ConditionExpression": "(attribute_not_exists(#n0)) AND (#n1 > :v0)",
        "ExpressionAttributeNames": {"#n0": "ForumName", "#n1": "Replies"},
        "ExpressionAttributeValues": {":v0": {"N": "1"}},
    }


class _Grade(str, Enum):
    A = "a"
    AB = "ab"


_officers = Table("Officers", "pk")


class _Officer(Entity, table=_officers, keys={"pk": "{nick}"}):
    nick: str
    title: Literal["", "cpt", "cptn", "gen", "gen 2"]
    rank: Literal["cpt", "gen"] | None = None
    grade: _Grade | None = None
    level: Literal[1, 2] = 1


@pytest.mark.parametrize("field", ["title", "rank", "grade"])
def test_a_prefix_of_a_text_field_goes_out_as_text(field: str) -> None:
    """A begins_with prefix of a Literal or Enum value is text, not a value of the field."""
    ph = Placeholders()
    text = compile_entity_condition(meta_of(_Officer), where(**{field: begins_with("gen ")}), ph)
    assert text == "begins_with(#n0, :v0)"
    assert ph.into({})["ExpressionAttributeValues"] == {":v0": {"S": "gen "}}


def test_a_value_of_a_non_text_literal_is_still_checked() -> None:
    with pytest.raises(ValidationError) as refused:
        compile_entity_condition(meta_of(_Officer), where(level=3), Placeholders())
    assert refused.value.rule == "field.invalid"


def test_a_put_during_a_rekeying_deletes_the_old_key_in_the_same_transaction() -> None:
    table = ranked_forum_table("PureTable")
    Thread, _ = declare_ranked_thread(table)
    params, _ = put_request(Thread(forum="S3", subject="a", replies=2))
    old_key = {"ForumName": {"S": "S3"}, "Subject": {"S": "a"}}
    moving = moving_put(params, old_key, token="t-1")
    assert moving == {
        "TransactItems": [
            {"Put": params},
            {"Delete": {"TableName": "PureTable", "Key": old_key}},
        ],
        "ClientRequestToken": "t-1",
    }
    # The parts are copies: the transaction can be changed without changing the put.
    moving["TransactItems"][0]["Put"]["TableName"] = "Other"
    assert params["TableName"] == "PureTable"
