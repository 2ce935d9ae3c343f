"""Declarations and values of the stored-key corpus: lsiorm 0.2's keys, byte for byte.

``tests/support/data/exact_keys.json`` holds the key attributes that lsiorm 0.2's encoder
rendered for these declarations and values (run this module as a script to print them again:
``python -m support.key_corpus`` from ``tests``; the file was written by 0.2's code, before key
styles existed). The exact key style must render the very same text and parse it back.
"""

from __future__ import annotations

import json
import random
import sys
import uuid
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal
from enum import Enum
from typing import Annotated, Any, Literal

from pydantic import StringConstraints

from lsiorm import Entity, GlobalIndex, KeyAttribute, KeyFormat, LocalIndex, Projection, Table
from support.paths import TESTS

CORPUS = TESTS / "support" / "data" / "exact_keys.json"


class Color(str, Enum):
    RED = "red"
    GREEN = "green"
    BLUE = "blue"
    REDDISH = "reddish"


class Level(int, Enum):
    LOW = 1
    HIGH = 20


Slug = Annotated[str, StringConstraints(pattern=r"^[a-z0-9-]+$")]


def corpus_table(**options: Any) -> Table:
    """The corpus's table: a primary key, one LSI and one GSI, all string keys."""
    return Table(
        "KeyCorpus",
        "PK",
        "SK",
        local_indexes=[LocalIndex("ByLocal", KeyAttribute("LSK"), Projection.all())],
        global_indexes=[
            GlobalIndex("ByGlobal", KeyAttribute("GPK"), KeyAttribute("GSK"), Projection.all())
        ],
        **options,
    )


def declare_corpus(table: Table) -> dict[str, type[Entity]]:
    """The corpus's entity classes on ``table``, by name."""

    class Task(
        Entity,
        table=table,
        keys={
            "PK": "P#{project}",
            "SK": "P#{project}#TASK#{n:05d}",
            "LSK": "{title}#{n:05d}",
            "GPK": "T#{title}",
            "GSK": "{project}{n:05d}",
        },
    ):
        project: str
        n: int
        title: str

    class Sluggy(
        Entity,
        table=table,
        keys={"PK": "S#{group}", "SK": "Q#{slug}#TASK#{n:05d}", "GPK": "G#{slug}!{group}"},
    ):
        group: Slug
        slug: Slug
        n: int

    class Painted(
        Entity,
        table=table,
        keys={
            "PK": "U#{u}",
            "SK": "U#{u}#C#{color}#L#{lit}#X",
            "LSK": "{level}{lit}-{color}",
            "GPK": "C#{color}",
            "GSK": "{lit}{u}",
        },
    ):
        u: uuid.UUID
        color: Color
        lit: Literal["aa", "bb", "a"]
        level: Annotated[Level, KeyFormat("03d")]

    class Mixed(
        Entity,
        table=table,
        keys={
            "PK": "M#{a}#{b}",
            "SK": "{d}#{at:ms}#{price:08.2f}#{flag}#{num:02d}#{s}",
            "LSK": "{f}{t}|{when}",
            "GPK": "{b}",
            "GSK": "{price:08.2f}{a}",
        },
    ):
        a: str
        b: Literal["x", "xy", "z"]
        d: date
        at: datetime
        price: Decimal
        flag: bool
        num: Literal[1, 2, 30]
        s: str
        f: float
        t: str
        when: datetime

    return {c.__name__: c for c in (Task, Sluggy, Painted, Mixed)}


_TEXT = ["", "a", "ab", "a#", "#", "\x00", "\x01", "a\x00b", "\x01\x02", "é", "\U0001f600", "-"]
_SLUG = ["a", "web", "web-1", "z9", "0", "a-b-c"]


def _text(rng: random.Random) -> str:
    return "".join(rng.choice(_TEXT) for _ in range(rng.randint(0, 3)))


def _instant(rng: random.Random, step: int) -> datetime:
    base = datetime(2024, 5, 1, tzinfo=timezone.utc)
    return base + timedelta(milliseconds=rng.randint(-(10**9), 10**9) * step)


def corpus_values(seed: int = 22) -> list[tuple[str, dict[str, Any]]]:
    """The entity name and field values of every row of the corpus."""
    rng = random.Random(seed)
    rows: list[tuple[str, dict[str, Any]]] = []
    for _ in range(40):
        rows.append(
            ("Task", {"project": _text(rng), "n": rng.randint(-99999, 99999), "title": _text(rng)})
        )
        rows.append(
            (
                "Sluggy",
                {
                    "group": rng.choice(_SLUG),
                    "slug": rng.choice(_SLUG),
                    "n": rng.randint(0, 99999),
                },
            )
        )
        rows.append(
            (
                "Painted",
                {
                    "u": uuid.UUID(int=rng.getrandbits(128)),
                    "color": rng.choice(list(Color)),
                    "lit": rng.choice(["aa", "bb", "a"]),
                    "level": rng.choice(list(Level)),
                },
            )
        )
        rows.append(
            (
                "Mixed",
                {
                    "a": _text(rng),
                    "b": rng.choice(["x", "xy", "z"]),
                    "d": date(2000, 1, 1) + timedelta(days=rng.randint(0, 20000)),
                    "at": _instant(rng, 1),
                    "price": Decimal(rng.randint(-999999, 999999)).scaleb(-2),
                    "flag": rng.random() < 0.5,
                    "num": rng.choice([1, 2, 30]),
                    "s": _text(rng),
                    "f": rng.uniform(-1e6, 1e6),
                    "t": _text(rng),
                    "when": _instant(rng, 1000).replace(microsecond=rng.randint(0, 999999)),
                },
            )
        )
    return rows


def _json_value(value: Any) -> Any:
    if isinstance(value, Enum):
        return {"enum": type(value).__name__, "name": value.name}
    if isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return {"float": value.hex()}
    if isinstance(value, Decimal):
        return {"decimal": str(value)}
    if isinstance(value, datetime):
        return {"datetime": value.isoformat()}
    if isinstance(value, date):
        return {"date": value.isoformat()}
    if isinstance(value, uuid.UUID):
        return {"uuid": str(value)}
    raise TypeError(value)


def from_json(value: Any) -> Any:
    """Return the field value a corpus JSON value stands for."""
    if not isinstance(value, dict):
        return value
    ((tag, raw),) = ((k, v) for k, v in value.items() if k != "name")
    if tag == "enum":
        return {"Color": Color, "Level": Level}[raw][value["name"]]
    return {
        "float": float.fromhex,
        "decimal": Decimal,
        "datetime": datetime.fromisoformat,
        "date": date.fromisoformat,
        "uuid": uuid.UUID,
    }[tag](raw)


def rendered_corpus(classes: dict[str, type[Entity]]) -> list[dict[str, Any]]:
    """Every corpus row with the key attributes ``classes`` render for it."""
    out = []
    for name, values in corpus_values():
        cls = classes[name]
        entity = cls(**values)
        keys = entity.to_item()
        out.append(
            {
                "entity": name,
                "values": {k: _json_value(v) for k, v in values.items()},
                "keys": {k: keys[k] for k in ("PK", "SK", "LSK", "GPK", "GSK") if k in keys},
            }
        )
    return out


if __name__ == "__main__":
    json.dump(rendered_corpus(declare_corpus(corpus_table())), sys.stdout, indent=1)
    sys.stdout.write("\n")
