"""Update requests built without I/O: typed paths, list and set operations, upserts, refusals."""

from __future__ import annotations

import re
import uuid
from datetime import datetime, timezone
from typing import Any

import pytest

from lsiorm import Entity, GlobalIndex, KeyAttribute, PartialKeyUpdateError, Table, ValidationError
from lsiorm._model.entity_meta import meta_of
from lsiorm._model.wire import item_from_wire
from lsiorm._requests.update_plan import UpdateSpec, update_spec
from support.models import declare_nested_doc, declare_ranked_thread, ranked_forum_table
from support.updates import update_params

TABLE, DOC = declare_nested_doc()
KEY = {"did": "a"}


def request(spec: UpdateSpec, **kw: Any) -> dict[str, Any]:
    return update_params(meta_of(DOC), KEY, spec, **kw)


def test_nested_paths_name_every_step_and_validate_the_leaf() -> None:
    params = request(update_spec(set={"address.city": "Oslo", "lines[1].qty": 3}))
    assert params["UpdateExpression"] == "SET #n1.#n2 = :v0, #n3[1].#n4 = :v1"
    assert params["ExpressionAttributeNames"] == {
        "#n0": "pk",
        "#n1": "address",
        "#n2": "city",
        "#n3": "lines",
        "#n4": "q",  # the nested model's alias is what is stored
    }
    assert params["ExpressionAttributeValues"] == {":v0": {"S": "Oslo"}, ":v1": {"N": "3"}}
    assert params["ConditionExpression"] == "attribute_exists(#n0)"
    with pytest.raises(ValidationError) as info:
        request(update_spec(set={"lines[0].qty": "many"}))
    assert info.value.rule == "field.invalid"


def test_list_and_set_operations_render_as_dynamodb_spells_them() -> None:
    params = request(
        update_spec(
            append={"history": ["b"]},
            prepend={"address.lines": ["x"]},
            add={"labels": {"p"}, "attrs.hits": 2},
            if_not_exists={"views": 0},
        )
    )
    text = params["UpdateExpression"]
    names, values = params["ExpressionAttributeNames"], params["ExpressionAttributeValues"]

    def resolved(s: str) -> str:
        s = re.sub(r":v\d+", lambda m: repr(item_from_wire({"v": values[m.group(0)]})["v"]), s)
        return re.sub(r"#n\d+", lambda m: names[m.group(0)], s)

    assert resolved(text) == (
        "SET views = if_not_exists(views, 0), "
        "history = list_append(if_not_exists(history, []), ['b']), "
        "address.lines = list_append(['x'], if_not_exists(address.lines, [])) "
        "ADD labels {'p'}, attrs.hits 2"
    )
    deleted = request(update_spec(delete={"labels": {"p", "q"}}))
    assert deleted["UpdateExpression"] == "DELETE #n1 :v0"
    assert deleted["ExpressionAttributeValues"][":v0"] == {"SS": ["p", "q"]}


def test_an_upsert_writes_keys_type_and_defaults_only_where_absent() -> None:
    params = request(update_spec(set={"title": "T"}, upsert=True))
    names, values = params["ExpressionAttributeNames"], params["ExpressionAttributeValues"]
    condition = params["ConditionExpression"]
    assert condition == "(attribute_not_exists(#n0) OR #n1 = :v0)"
    assert names["#n0"] == "pk"
    assert names["#n1"] == "_type"
    assert values[":v0"] == {"S": "Doc"}
    text = re.sub(r"#n\d+", lambda m: names[m.group(0)], params["UpdateExpression"])
    assert text.startswith("SET title = ")
    assert "did = " in text  # the key fields are stored as fields too
    assert "views = if_not_exists(views, " in text  # defaults only where absent
    # status allows None, stored as absence: its default would overwrite a stored None.
    assert "status" not in text
    assert "_type = " in text
    assert "lsi1 = " in text  # title is set: its key is written for sure
    assert "gpk" not in text


@pytest.mark.parametrize(
    ("spec", "rule"),
    [
        (update_spec(set={"address..city": "x"}), "update.path-syntax"),
        (update_spec(set={"address.town": "x"}), "field.unknown"),
        (update_spec(set={"views.x": 1}), "update.path-not-a-map"),
        (update_spec(set={"title[0]": "x"}), "update.path-not-a-list"),
        (update_spec(set={"attrs.k": "x"}), "field.invalid"),
        (update_spec(remove=["address.city"]), "update.remove-required"),
        (update_spec(append={"title": ["x"]}), "update.key-field-operation"),
        (update_spec(append={"views": [1]}), "update.list-operation"),
        (update_spec(append={"history": "abc"}), "update.list-operation"),
        (update_spec(add={"history": 1}), "update.add-type"),
        (update_spec(add={"labels": set()}), "update.add-type"),
        (update_spec(delete={"views": 1}), "update.delete-type"),
        (update_spec(add={"views": True}), "update.add-type"),
        (update_spec(if_not_exists={"views": None}), "update.if-not-exists-none"),
        (
            update_spec(set={"address": {"city": "x"}, "address.zip": "1"}),
            "update.overlapping-paths",
        ),
        (update_spec(set={"lines[0].qty": 1}, remove=["lines[0]"]), "update.overlapping-paths"),
        (update_spec(set={"views": 1}, add={"views": 1}), "update.overlapping-paths"),
        (update_spec(set={"did": "b"}), "update.primary-key-field"),
        (update_spec(set={"address.city": "x"}, upsert=True), "update.upsert-nested-path"),
        (update_spec(set={"views": 1}, upsert=True), "update.upsert-missing-field"),
    ],
)
def test_bad_updates_are_refused_before_sending(spec: UpdateSpec, rule: str) -> None:
    with pytest.raises(ValidationError) as info:
        request(spec)
    assert info.value.rule == rule


def test_an_upsert_takes_a_class_not_an_instance() -> None:
    doc = DOC(did="a", title="t")
    with pytest.raises(ValidationError) as info:
        update_params(meta_of(DOC), KEY, update_spec(set={"views": 1}, upsert=True), instance=doc)
    assert info.value.rule == "update.upsert-instance"


def test_a_key_written_where_absent_needs_every_field_of_its_template() -> None:
    table = Table(
        f"k_{uuid.uuid4().hex[:6]}",
        "pk",
        "sk",
        global_indexes=[GlobalIndex("GSI", KeyAttribute("gpk"), KeyAttribute("gsk"))],
    )

    class Two(Entity, table=table, keys={"pk": "{a}", "sk": "X", "gpk": "{b}#{c}"}):
        a: str
        b: str | None = None
        c: str | None = None

    meta = meta_of(Two)
    with pytest.raises(PartialKeyUpdateError):
        update_params(meta, {"a": "1"}, update_spec(if_not_exists={"b": "x"}, set={"c": "y"}))
    with pytest.raises(PartialKeyUpdateError):
        update_params(meta, {"a": "1"}, update_spec(set={"b": "x"}, upsert=True))
    # Both fields set: the key is written for sure; both left alone: written where absent.
    update_params(meta, {"a": "1"}, update_spec(set={"b": "x", "c": "y"}, upsert=True))
    update_params(meta, {"a": "1"}, update_spec(upsert=True))


UTC = timezone.utc


def test_update_rewrites_every_affected_key_in_one_request() -> None:
    table = ranked_forum_table("PureTable")
    Thread, _ = declare_ranked_thread(table)
    meta = meta_of(Thread)
    at = datetime(2015, 9, 1, tzinfo=UTC)
    params = update_params(
        meta,
        {"forum": "S3", "subject": "a"},
        UpdateSpec({"last_post": at, "tier": "gold", "score": 7}, add={"replies": 1}),
    )
    assert params == {
        "TableName": "PureTable",
        "Key": {"ForumName": {"S": "S3"}, "Subject": {"S": "T#a"}},
        "UpdateExpression": (
            "SET #n1 = :v0, #n2 = :v1, #n3 = :v2, #n5 = :v4, #n6 = :v5 ADD #n4 :v3"
        ),
        "ConditionExpression": "attribute_exists(#n0)",
        "ExpressionAttributeNames": {
            "#n0": "ForumName",
            "#n1": "last_post",
            "#n2": "tier",
            "#n3": "score",
            "#n4": "Replies",
            "#n5": "LastPostDateTime",
            "#n6": "RankKey",
        },
        "ExpressionAttributeValues": {
            ":v0": {"S": "2015-09-01T00:00:00.000000Z"},
            ":v1": {"S": "gold"},
            ":v2": {"N": "7"},
            ":v3": {"N": "1"},
            ":v4": {"S": "2015-09-01T00:00:00.000000Z"},
            ":v5": {"S": "RANK#gold#0007"},
        },
        "ReturnValues": "ALL_NEW",
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
    }


def test_partial_template_update_refused() -> None:
    Thread, _ = declare_ranked_thread(ranked_forum_table("PureTable"))
    with pytest.raises(PartialKeyUpdateError) as info:
        update_params(meta_of(Thread), {"forum": "S3", "subject": "a"}, UpdateSpec({"score": 3}))
    assert info.value.rule == "update.partial-key"
    assert "tier" in str(info.value)


def test_removing_a_template_field_removes_the_key() -> None:
    Thread, _ = declare_ranked_thread(ranked_forum_table("PureTable"))
    params = update_params(
        meta_of(Thread), {"forum": "S3", "subject": "a"}, UpdateSpec({}, remove=("score",))
    )
    assert params["UpdateExpression"] == "REMOVE #n1, #n2"
    assert params["ExpressionAttributeNames"] == {
        "#n0": "ForumName",
        "#n1": "score",
        "#n2": "RankKey",
    }


@pytest.mark.parametrize(
    ("spec", "rule"),
    [
        (UpdateSpec({"subject": "b"}), "update.primary-key-field"),
        (UpdateSpec({}), "update.empty"),
        (UpdateSpec({"nope": 1}), "field.unknown"),
        (UpdateSpec({"replies": "many"}), "field.invalid"),
        (UpdateSpec({}, remove=("forum",)), "update.primary-key-field"),
        (UpdateSpec({}, add={"score": 1}), "update.add-key-field"),
    ],
)
def test_update_input_errors(spec: UpdateSpec, rule: str) -> None:
    Thread, _ = declare_ranked_thread(ranked_forum_table("PureTable"))
    with pytest.raises(ValidationError) as info:
        update_params(meta_of(Thread), {"forum": "S3", "subject": "a"}, spec)
    assert info.value.rule == rule


@pytest.mark.parametrize(
    ("spec", "rule"),
    [
        (UpdateSpec({}, add={"score": 1}), "update.add-key-field"),
        (update_spec(append={"score": [1]}), "update.key-field-operation"),
    ],
)
def test_a_refused_change_of_a_key_field_says_how_to_keep_concurrent_changes(
    spec: UpdateSpec, rule: str
) -> None:
    Thread, _ = declare_ranked_thread(ranked_forum_table("PureTable"))
    with pytest.raises(ValidationError) as info:
        update_params(meta_of(Thread), {"forum": "S3", "subject": "a"}, spec)
    assert info.value.rule == rule
    assert "set= with the new value" in str(info.value)
    assert "condition=cond(" in str(info.value)
    assert info.value.table == "PureTable"
