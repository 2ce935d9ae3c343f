"""Which entity types one Query reads together, and when an index cannot tell them apart."""

from __future__ import annotations

import uuid

import pytest

from lsiorm import Entity, Table, query
from lsiorm.errors import QueryPlanError
from support.models import shop_table


def test_types_whose_filters_compile_differently_get_one_query_each() -> None:
    from pydantic import Field

    table = shop_table()

    class Invoice(Entity, table=table, keys={"PK": "C#{c}", "SK": "INV#{n:03d}"}):
        c: str
        n: int
        note: str = Field(default="", alias="Note")

    class Receipt(Entity, table=table, keys={"PK": "C#{c}", "SK": "REC#{n:03d}"}):
        c: str
        n: int
        note: str = ""

    plain = query(Invoice, Receipt).where(c="x").plan()
    assert [r.label for r in plain.requests] == ["Invoice+Receipt"]
    filtered = query(Invoice, Receipt).where(c="x").filter(note="hi").plan()
    assert [r.label for r in filtered.requests] == ["Invoice", "Receipt"]
    assert "their filters differ" in str(
        query(Invoice, Receipt).where(c="x").filter(note="hi").explain()
    )


def test_a_shared_range_on_an_index_without_the_type_attribute_is_refused_for_one_type() -> None:
    from lsiorm import GlobalIndex, KeyAttribute, Projection

    table = Table(
        f"shop_{uuid.uuid4().hex[:10]}",
        partition_key="PK",
        sort_key="SK",
        global_indexes=[
            GlobalIndex("ByTag", KeyAttribute("Tag"), projection=Projection.keys_only())
        ],
    )

    class Post(Entity, table=table, keys={"PK": "P#{p}", "SK": "POST", "Tag": "{tag}"}):
        p: str
        tag: str

    class Photo(Entity, table=table, keys={"PK": "F#{p}", "SK": "PHOTO", "Tag": "{tag}"}):
        p: str
        tag: str

    # Photo items share the range and no filter can drop them (count() would count them), so
    # the index is refused rather than read inexactly.
    with pytest.raises(QueryPlanError) as caught:
        query(Post).where(tag="x").plan()
    assert caught.value.rule == "query.type-not-projected"
    both = query(Post, Photo).where(tag="x").plan()
    assert [r.label for r in both.requests] == ["Post+Photo"]
