"""A full query on an LSI returns non-projected fields (fetched), or says loudly it could not."""

from __future__ import annotations

import logging
import uuid

import pytest
from pydantic import Field

from lsiorm import Entity, KeyAttribute, LocalIndex, Projection, Session, Table, missing_fields
from lsiorm import query as make_query


def test_fetch_or_warn(endpoint_url: str, backend: str, caplog: pytest.LogCaptureFixture) -> None:
    table = Table(
        f"fetch_{uuid.uuid4().hex[:10]}",
        "PK",
        "SK",
        local_indexes=[LocalIndex("ByRank", KeyAttribute("RankKey"), Projection.keys_only())],
    )

    class Card(
        Entity, table=table, keys={"PK": "D#{deck}", "SK": "C#{name}", "RankKey": "{rank:03d}"}
    ):
        deck: str
        name: str
        rank: int
        note: str = Field(default="", alias="Note")

    with Session(endpoint_url=endpoint_url, region_name="us-east-1") as session:
        session.create_table(table)
        session.put(Card(deck="d", name="ace", rank=1, note="high"))
        with caplog.at_level(logging.WARNING, logger="lsiorm.query"):
            (card,) = session.all(make_query(Card).where(deck="d", rank=1).using("ByRank"))
        session.delete_table(table, wait=False)
    if backend == "moto":  # moto does not fetch: the result says so, never a default
        assert missing_fields(card) == {"note"}
        assert any("does not fetch" in r.getMessage() for r in caplog.records)
    else:
        assert missing_fields(card) == frozenset()
        assert card.note == "high"
        assert not caplog.records
