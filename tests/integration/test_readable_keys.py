"""Readable keys on the engines: the stored text read back raw with boto3, and queries over it.

A slug (pattern), an Enum, a Literal, a UUID, a padded int and a date, each followed by more
template, are stored without U+0000 in the readable style; the exact style stores 0.2's text.
"""

from __future__ import annotations

import uuid
from datetime import date
from enum import Enum
from typing import Annotated, Any, Literal

import pytest
from pydantic import StringConstraints

from lsiorm import Entity, KeyFormat, Session, Table, begins_with, between, gt, query
from support.tables import session_with


class Color(str, Enum):
    RED = "red"
    REDDISH = "reddish"
    BLUE = "blue"


Slug = Annotated[str, StringConstraints(pattern=r"^[a-z0-9-]+$")]
U = uuid.UUID("3b53690a-1464-6e57-e3b9-9c58cae64fa6")


def declare(table: Table) -> type[Entity]:
    class Card(
        Entity,
        table=table,
        keys={
            "PK": "B#{board}",
            "SK": "S#{slug}#C#{color}#K#{kind}#U#{u}#N#{n:04d}#D#{day}#{title}",
        },
    ):
        board: Annotated[str, KeyFormat(alphabet="a-z")]
        slug: Slug
        color: Color
        kind: Literal["bug", "task"]
        u: uuid.UUID
        n: int
        day: date
        title: str

    return Card


ROWS: list[dict[str, Any]] = [
    {
        "board": "web",
        "slug": slug,
        "color": color,
        "kind": kind,
        "u": U,
        "n": n,
        "day": date(2024, 5, day),
        "title": f"t{n}",
    }
    for slug in ("login", "login-2", "z")
    for color in Color
    for kind in ("bug", "task")
    for n, day in ((7, 1), (12, 2))
]


def _raw_sort_keys(client: Any, name: str) -> list[str]:
    items = client.scan(TableName=name, ConsistentRead=True)["Items"]
    return sorted(item["SK"]["S"] for item in items)


@pytest.mark.parametrize("style", ["readable", "exact"])
def test_keys_as_stored(endpoint_url: str, dynamodb_client: Any, style: str) -> None:
    table = Table(f"readable_{style}_{uuid.uuid4().hex[:8]}", "PK", "SK", key_style=style)
    card = declare(table)
    with session_with(endpoint_url, table) as session:
        session.put(card(**ROWS[0]))
        (stored,) = dynamodb_client.scan(TableName=table.name, ConsistentRead=True)["Items"]
    if style == "readable":
        assert stored["SK"]["S"] == f"S#login#C#red#K#bug#U#{U}#N#0007#D#2024-05-01#t7"
        assert "\x00" not in stored["SK"]["S"]
    else:
        assert stored["SK"]["S"] == (
            f"S#login\x00#C#red\x00#K#bug\x00#U#{U}#N#0007#D#2024-05-01#t7"
        )
    assert stored["PK"] == {"S": "B#web"}


@pytest.fixture(scope="module")
def cards(endpoint_url: str) -> Any:
    table = Table(f"readable_q_{uuid.uuid4().hex[:8]}", "PK", "SK")
    card = declare(table)
    with session_with(endpoint_url, table) as session:
        for row in ROWS:
            session.put(card(**row))
        yield session, card


def _key(row: dict[str, Any]) -> tuple[Any, ...]:
    return (row["slug"], row["color"].value, row["kind"], row["n"])


@pytest.mark.parametrize(
    ("conditions", "check"),
    [
        ({}, lambda r: True),
        ({"slug": "login"}, lambda r: r["slug"] == "login"),
        ({"slug": gt("login")}, lambda r: r["slug"] > "login"),
        ({"slug": begins_with("login")}, lambda r: r["slug"].startswith("login")),
        (
            {"slug": "login", "color": Color.RED},
            lambda r: r["slug"] == "login" and r["color"] is Color.RED,
        ),
        (
            {"slug": "z", "color": between(Color.BLUE, Color.RED)},
            lambda r: r["slug"] == "z" and "blue" <= r["color"].value <= "red",
        ),
        (
            {"slug": "login-2", "color": Color.REDDISH, "kind": gt("bug")},
            lambda r: (r["slug"], r["color"], r["kind"]) == ("login-2", Color.REDDISH, "task"),
        ),
    ],
)
def test_queries_over_readable_keys_are_exact(
    cards: tuple[Session, type[Entity]], conditions: dict[str, Any], check: Any
) -> None:
    session, card = cards
    q = query(card).where(board="web", **conditions)
    assert not q.plan().has_filter
    got = [(c.slug, c.color.value, c.kind, c.n) for c in session.all(q)]  # type: ignore[attr-defined]
    want = sorted(_key(r) for r in ROWS if check(r))
    assert got == want
    assert session.count(q) == len(want)
    descending = [(c.slug, c.color.value, c.kind, c.n) for c in session.all(q.descending())]  # type: ignore[attr-defined]
    assert descending == want[::-1]


def test_plain_keys_that_other_values_share_never_answer_for_them(endpoint_url: str) -> None:
    table = Table(f"plain_shared_{uuid.uuid4().hex[:8]}", "PK", "SK", key_style="plain")

    class Pair(Entity, table=table, keys={"PK": "T#{a}#{b}", "SK": "X"}):
        a: str
        b: str

    with session_with(endpoint_url, table) as session:
        session.put(Pair(a="x#y", b="z"))
        # ("x", "y#z") writes the same key text, T#x#y#z: reads by key check the fields.
        assert Pair(a="x", b="y#z").to_item()["PK"] == "T#x#y#z"
        assert session.get(Pair, a="x", b="y#z") is None
        assert session.get(Pair, a="x#y", b="z") == Pair(a="x#y", b="z")
        assert session.batch_get(Pair, [{"a": "x", "b": "y#z"}]) == []
        assert session.batch_get(Pair, [{"a": "x#y", "b": "z"}]) == [Pair(a="x#y", b="z")]
        assert session.all(query(Pair).where(a="x", b="y#z")) == []
        assert session.all(query(Pair).where(a="x#y", b="z")) == [Pair(a="x#y", b="z")]
