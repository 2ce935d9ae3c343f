"""Fields stored under other attribute names (pydantic aliases), as existing tables name them:
every path reads and writes the stored name, and the raw items hold only stored names.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from lsiorm import (
    Entity,
    Get,
    GlobalIndex,
    KeyAttribute,
    KeyFormat,
    LocalIndex,
    Projection,
    Session,
    Table,
    Update,
    begins_with,
    contains,
    gt,
    query,
    scan,
    where,
)
from support.tables import session_with


def declare(name: str) -> tuple[Table, type[Entity]]:
    table = Table(
        name,
        "pk",
        "sk",
        local_indexes=[
            LocalIndex("by_name", KeyAttribute("lsk"), Projection.include("displayName"))
        ],
        global_indexes=[
            GlobalIndex(
                "by_city",
                KeyAttribute("gpk"),
                KeyAttribute("gsk"),
                Projection.include("displayName", "pointsTotal"),
            )
        ],
    )

    class Item(
        Entity,
        table=table,
        keys={
            "pk": "U#{user_id}",
            "sk": "I#{item_id}",
            "lsk": "N#{display_name}",
            "gpk": "C#{city_name}",
            "gsk": "{points}",
        },
        version="ver",
    ):
        user_id: str = Field(alias="userId")
        item_id: str = Field(alias="itemId")
        display_name: str = Field(alias="displayName")
        city_name: str | None = Field(None, alias="cityName")
        points: Annotated[int, KeyFormat("06d")] = Field(0, alias="pointsTotal")
        tags: list[str] = Field(default_factory=list, alias="tagList")
        ver: int = Field(0, alias="verNo")

    return table, Item


STORED = {"userId", "itemId", "displayName", "cityName", "pointsTotal", "tagList", "verNo"}


def _raw(session: Session, table: Table, item: str) -> dict[str, Any]:
    key = {"pk": {"S": "U#u"}, "sk": {"S": f"I#{item}"}}
    found: dict[str, Any] = session.call("GetItem", {"TableName": table.name, "Key": key})["Item"]
    return found


def test_every_path_uses_the_stored_names(endpoint_url: str, table_name: str) -> None:
    table, Item = declare(table_name)
    with session_with(endpoint_url, table) as session:
        ann = session.put(Item(user_id="u", item_id="1", display_name="Ann", city_name="Oslo"))
        session.put(Item(user_id="u", item_id="2", display_name="Bob", city_name="Oslo", points=9))
        assert set(_raw(session, table, "1")) - {"pk", "sk", "lsk", "gpk", "gsk", "_type"} == STORED
        assert session.get(Item, {"user_id": "u", "item_id": "1"}) == ann
        by_key = query(Item).where(user_id="u", display_name=begins_with("A"))
        assert [i.item_id for i in session.all(by_key)] == ["1"]
        names = query(Item).where(user_id="u").using("by_name").select("display_name")
        assert [i.display_name for i in session.all(names)] == ["Ann", "Bob"]
        city = query(Item).where(city_name="Oslo", points=gt(5)).select("display_name", "points")
        assert [(i.display_name, i.points) for i in session.all(city)] == [("Bob", 9)]
        filtered = query(Item).where(user_id="u").filter(points=gt(5), display_name="Bob")
        assert [i.item_id for i in session.all(filtered)] == ["2"]
        changed = session.update(
            Item,
            {"user_id": "u", "item_id": "1"},
            set={"points": 7, "display_name": "Anna"},
            condition=where(points=0),
        )
        assert (changed.points, changed.display_name, changed.ver) == (7, "Anna", 2)
        again = session.update(changed, append={"tags": ["q"]})
        assert again.tags == ["q"]
        assert [i.item_id for i in session.all(scan(Item).filter(tags=contains("q")))] == ["1"]
        made = session.update(
            Item, {"user_id": "u", "item_id": "3"}, set={"display_name": "Cy"}, upsert=True
        )
        assert made.display_name == "Cy"
        session.transact_write(
            [Update(Item, {"user_id": "u", "item_id": "2"}, set={"city_name": "Rome"})]
        )
        (bob,) = session.transact_get([Get(Item, {"user_id": "u", "item_id": "2"})])
        assert bob is not None
        assert bob.city_name == "Rome"
        got = session.batch_get(Item, [{"user_id": "u", "item_id": "2"}])
        assert [i.city_name for i in got] == ["Rome"]
        assert session.count(query(Item).where(city_name="Rome").select("points")) == 1
        raw = _raw(session, table, "1")
        assert raw["displayName"] == {"S": "Anna"}
        assert raw["pointsTotal"] == {"N": "7"}
        assert raw["lsk"] == {"S": "N#Anna"}
        assert not set(raw) & {"display_name", "points", "tags", "ver", "city_name"}
