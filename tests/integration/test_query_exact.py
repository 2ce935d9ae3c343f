"""Exact reads on the engines: counts on a shared index, a sparse index named on purpose."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lsiorm import Session
from lsiorm._conditions import between, gt, le, lt
from lsiorm._query.values import query
from support.models import PETS, Kitten, Puppy
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
