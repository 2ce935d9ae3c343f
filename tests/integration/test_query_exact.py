"""Exact reads on the engines: counts on a shared index, a sparse index named on purpose, open
ends of Number ranges at the edges of DynamoDB's range."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest

from lsiorm import Entity, GlobalIndex, KeyAttribute, Projection, Session, Table
from lsiorm._conditions import between, ge, gt, le, lt
from lsiorm._query.values import query
from support.models import PETS, Kitten, Puppy
from support.oracles import COMPARISONS
from support.tables import session_with


@pytest.fixture(scope="module")
def session(endpoint_url: str) -> Iterator[Session]:
    with session_with(endpoint_url, PETS) as s:
        for n in range(12):
            s.put(
                Kitten(
                    zoo="z",
                    name=f"k{n:02d}",
                    age=n - 6,
                    color=None if n % 3 == 0 else "red",
                    zone="north" if n % 2 else "south",
                    mass=n,
                    indoor=n % 4 == 0,
                )
            )
            s.put(Puppy(zoo="z", name=f"p{n:02d}", age=n, zone="north"))
        yield s


def test_counts_and_reads_are_exact_on_a_shared_index(session: Session) -> None:
    for index in ("ByZone", "ByZoneType"):
        q = query(Kitten).where(zone="north").using(index)
        assert session.count(q) == 6
        assert len(session.all(q.select("name", "zone"))) == 6
        assert session.count(query(Puppy).where(zone="north").using(index)) == 12
        both = query(Kitten, Puppy).where(zone="north").using(index)
        assert session.count(both) == 18
        assert len(session.all(both.select("name", "zone"))) == 18
        limited = session.all(q.select("name", "zone").limit(2))
        assert len(limited) == 2


def test_a_sparse_index_named_on_purpose_misses_what_explain_says(session: Session) -> None:
    fallback = query(Kitten).where(zoo="z", age=between(-6, 5)).allow_filter_fallback()
    assert session.count(fallback) == 12
    forced = query(Kitten).where(zoo="z", age=between(-6, 5)).using("ByAge")
    assert session.count(forced) == 8  # the four Kittens without a color are not in ByAge


def test_two_bounds_and_bool_fallbacks_read_exactly(session: Session) -> None:
    got = session.all(query(Kitten).where(zone="north", mass=gt(3)).where(mass=le(9)))
    assert sorted(k.mass for k in got) == [5, 7, 9]
    assert session.count(query(Kitten).where(zone="north", mass=gt(3)).where(mass=lt(9))) == 2
    indoor = query(Kitten).where(zoo="z", indoor=gt(False)).using("ByName")
    indoor = indoor.allow_filter_fallback()
    assert sorted(k.name for k in session.all(indoor)) == ["k00", "k04", "k08"]


# -- open ends on a KEYS_ONLY GSI's Number sort key, at the edges of DynamoDB's range ---------

SCALES = Table(
    f"scales_{uuid.uuid4().hex[:8]}",
    "PK",
    global_indexes=[
        GlobalIndex(
            "ByMass", KeyAttribute("Room"), KeyAttribute("Mass", "N"), Projection.keys_only()
        )
    ],
)


class Weight(Entity, table=SCALES, keys={"PK": "W#{name}", "Room": "{room}", "Mass": "{mass}"}):
    name: str
    room: str
    mass: Decimal


_TOP = Decimal("9." + "9" * 37 + "E+125")
_BOTTOM = Decimal("-9." + "9" * 37 + "E+125")  # not -_TOP: that rounds to 28 digits
#: Stored masses: the ends of the range, the numbers next to 0, 1 and 3, and the bounds' own
#: neighbours, which only a bound closed at exactly the next storable number keeps apart.
MASSES = [
    _BOTTOM,
    Decimal(0),
    Decimal(1),
    Decimal("1." + "0" * 36 + "1"),
    Decimal("2." + "9" * 37),
    Decimal(3),
    Decimal("3." + "0" * 36 + "1"),
    _TOP,
]
#: Near 1E-130, the smallest magnitude DynamoDB stores, and the ends of the range as bounds.
#: moto parses numbers with boto3's context, whose exponents stop at -128, and fails (500) on
#: bounds past its own arithmetic, so it is given neither.
TINY = [Decimal("-1E-130"), Decimal("1E-130"), Decimal("1." + "0" * 36 + "1E-130")]
EDGES = [_BOTTOM, _TOP, *TINY[:2]]


def test_open_ends_on_a_keys_only_number_key_are_exact_and_send_no_filter(
    endpoint_url: str, backend: str
) -> None:
    sent: list[dict[str, Any]] = []

    class Recorder:
        def before(self, request: Any) -> None:
            if request.operation == "Query":
                sent.append(request.params)

    masses = sorted(MASSES if backend == "moto" else [*MASSES, *TINY])
    bounds = [Decimal(0), Decimal(1), Decimal(3)]
    if backend != "moto":
        bounds += EDGES
    with session_with(endpoint_url, SCALES, hooks=[Recorder()]) as session:
        for n, mass in enumerate(masses):
            session.put(Weight(name=f"w{n:02d}", room="r", mass=mass))
        for a in bounds:
            for b in bounds:
                for low in (gt, ge):
                    for high in (lt, le):
                        ops = [low(a), high(b)]
                        q = query(Weight).where(room="r", mass=ops[0]).where(mass=ops[1])
                        q = q.select("name", "mass")
                        want = [m for m in masses if all(_holds(op, m) for op in ops)]
                        got = sorted(w.mass for w in session.all(q))
                        assert got == want, ops
    assert sent, "no request was sent"
    assert not any("FilterExpression" in params for params in sent)


def _holds(op: Any, value: Decimal) -> bool:
    return bool(COMPARISONS[op.op](value, op.value))
