"""A date, datetime, int or Enum field that is its own string key attribute, as another tool
keys a GSI (PynamoDB's ``UTCDateTimeAttribute(range_key=True)`` as ``createdAt``).

The attribute holds the field's key text, in the tool's form when the field says so
(``KeyFormat(style="plain", datetime_format=...)``): items, updates and conditions write it,
reads parse it back, and ranges on it, half-open ones included, are key conditions.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone
from enum import Enum
from typing import Annotated

import pytest
from pydantic import Field

from lsiorm import (
    Entity,
    GlobalIndex,
    KeyAttribute,
    KeyFormat,
    QueryPlanError,
    Table,
    decode_item,
    ge,
    gt,
    le,
    lt,
    query,
    where,
)
from lsiorm._model.entity_meta import meta_of
from lsiorm._requests.items import put_request
from lsiorm._requests.update_expression import render_update
from lsiorm._requests.update_plan import plan_update, update_spec

PYNAMO_TIME = "%Y-%m-%dT%H:%M:%S.%f+0000"
PynamoTime = Annotated[datetime, KeyFormat(style="plain", datetime_format=PYNAMO_TIME)]
MAR1 = datetime(2024, 3, 1, tzinfo=timezone.utc)
APR1 = datetime(2024, 4, 1, tzinfo=timezone.utc)

USERS = Table(
    "coded_users",
    KeyAttribute("user_id", "N"),
    global_indexes=[
        GlobalIndex("by_status", KeyAttribute("status"), KeyAttribute("createdAt")),
        GlobalIndex("by_tier", KeyAttribute("tier"), KeyAttribute("joined")),
        GlobalIndex(
            "by_zone", partition_key=["zone"], sort_key=["stamp", KeyAttribute("rank", "N")]
        ),
    ],
)


class Tier(Enum):
    LOW = 1
    HIGH = 2


class User(
    Entity,
    table=USERS,
    keys={
        "user_id": "{user_id}",
        "status": "{status}",
        "createdAt": "{created_at}",
        "tier": "{tier}",
        "joined": "{joined}",
    },
    type_attribute=None,
    key_style="plain",
):
    user_id: int
    status: str
    created_at: PynamoTime = Field(alias="createdAt")
    tier: Tier | None = None
    joined: date | None = None
    zone: str | None = None
    stamp: PynamoTime | None = None
    rank: int | None = None


ANN = User(
    user_id=1,
    status="open",
    createdAt=datetime(2024, 3, 5, 10, tzinfo=timezone.utc),
    tier=Tier.HIGH,
    joined=date(2024, 1, 2),
    zone="n",
    stamp=datetime(2024, 3, 6, tzinfo=timezone.utc),
    rank=7,
)


def test_the_attribute_holds_the_key_text_and_reads_back() -> None:
    wire = ANN.to_wire()
    assert wire["createdAt"] == {"S": "2024-03-05T10:00:00.000000+0000"}
    assert wire["tier"] == {"S": "2"}
    assert wire["joined"] == {"S": "2024-01-02"}
    assert wire["stamp"] == {"S": "2024-03-06T00:00:00.000000+0000"}
    assert decode_item(USERS, wire) == ANN
    assert set(meta_of(User).coded_fields) == {"created_at", "tier", "joined", "stamp"}


def test_updates_and_conditions_write_the_key_text() -> None:
    meta = meta_of(User)
    params = render_update(
        meta, plan_update(meta, {"user_id": 1}, update_spec(set={"created_at": APR1}))
    )
    assert params["ExpressionAttributeValues"] == {":v0": {"S": "2024-04-01T00:00:00.000000+0000"}}
    assert "createdAt" in params["ExpressionAttributeNames"].values()
    condition = put_request(ANN, condition=where(created_at=MAR1))[0]
    assert condition["ExpressionAttributeValues"] == {
        ":v0": {"S": "2024-03-01T00:00:00.000000+0000"}
    }


@pytest.mark.parametrize(
    ("ops", "low", "high"),
    [
        (
            [ge(MAR1), lt(APR1)],
            "2024-03-01T00:00:00.000000+0000",
            "2024-04-01T00:00:00.000000+000/",
        ),
        ([gt(MAR1), le(APR1)], "2024-03-01T00:00:00.000000+0000\U0010ffff", None),
    ],
)
def test_a_half_open_range_is_a_key_condition(
    ops: list[object], low: str, high: str | None
) -> None:
    q = query(User).where(status="open")
    for op in ops:
        q = q.where(created_at=op)
    plan = q.plan()
    assert plan.index_name == "by_status"
    assert plan.filter is None
    assert plan.key_condition.endswith("BETWEEN :v1 AND :v2")
    assert plan.values[":v1"] == {"S": low}
    if high is not None:
        assert plan.values[":v2"]["S"].startswith(high)


def test_a_half_open_range_on_a_multi_attribute_key_is_closed_on_its_neighbours() -> None:
    base = query(User).where(zone="n").using("by_zone")
    plan = base.where(stamp=ge(MAR1)).where(stamp=lt(APR1)).plan()
    assert plan.index_name == "by_zone"
    assert plan.filter is None
    assert plan.values[":v1"] == {"S": "2024-03-01T00:00:00.000000+0000"}
    assert plan.values[":v2"] == {"S": "2024-04-01T00:00:00.000000+000/\U0010ffff"}
    day = datetime(2024, 3, 6, tzinfo=timezone.utc)
    ranked = base.where(stamp=day).where(rank=gt(3)).where(rank=lt(9)).plan()
    assert ranked.filter is None
    assert [ranked.values[k] for k in (":v2", ":v3")] == [{"N": "4"}, {"N": "8"}]
    empty = base.where(stamp=day).where(rank=gt(3)).where(rank=lt(4)).plan()
    assert empty.empty is not None  # nothing between 3 and 4: no request at all
    assert day - timedelta(microseconds=1) < day  # the neighbour exists at this precision


def test_an_exclusive_end_of_free_text_on_a_key_attribute_says_how_to_write_it() -> None:
    tasks = Table(
        "coded_tasks",
        "pk",
        global_indexes=[GlobalIndex("by_team", partition_key=["team"], sort_key=["title"])],
    )

    class Task(Entity, table=tasks, keys={"pk": "T#{tid}"}):
        tid: str
        team: str
        title: str

    with pytest.raises(QueryPlanError) as refused:
        query(Task).where(team="a", title=ge("m")).where(title=lt("q")).plan()
    assert refused.value.rule == "query.inexact-range"
    assert "between(low, high), high the greatest text you want" in str(refused.value)
