"""What a migration's verification makes of its units in the ledger, without an engine."""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from lsiorm import Table
from lsiorm._jobs.engine import digest
from lsiorm._jobs.ledger import UnitRecord
from lsiorm._jobs.units import ScanUnit
from lsiorm._migration.table_copy import FINDINGS, moved_from
from lsiorm._migration.verify import findings_of
from lsiorm._model.schema import KeyAttribute


def key(pk: str, sk: str) -> dict[str, Any]:
    return {"PK": {"S": pk}, "SK": {"S": sk}}


def unit(segment: int, counts: dict[str, int], **notes: list[Any]) -> UnitRecord:
    return UnitRecord(ScanUnit(segment, 2), "done", counts, notes=notes)


def test_the_units_counts_add_up_and_their_keys_are_kept_by_kind() -> None:
    sources = [
        unit(
            0,
            {"source": 10, "matched": 7, "missing": 1, "different": 2, "source_checksum": 5},
            missing=[key("G#1", "A")],
            different=[key("G#1", "B"), key("G#2", "C")],
        ),
        unit(
            1,
            {"source": 6, "matched": 4, "unmatched": 1, "different": 1, "moved": 2},
            different=[key("G#3", "D")],
        ),
    ]
    extras = [unit(0, {"destination": 15, "extra": 1}, extra=[key("G#9", "Z")])]
    found = findings_of(sources, extras)
    assert dataclasses.asdict(found) == {
        "report": {
            "source": 16,
            "matched": 11,
            "missing": 1,
            "different": 3,
            "extra": 1,
            "unmatched": 1,
            "source_checksum": 5,
            "destination_checksum": 0,
            "examples": {},
        },
        "keys": {
            "missing": {digest(key("G#1", "A")): key("G#1", "A")},
            "different": {
                digest(key("G#1", "B")): key("G#1", "B"),
                digest(key("G#2", "C")): key("G#2", "C"),
                digest(key("G#3", "D")): key("G#3", "D"),
            },
            "extra": {digest(key("G#9", "Z")): key("G#9", "Z")},
        },
        "beyond": {"missing": 0, "different": 0, "extra": 0},
    }
    # The units' order is the report's order (the ledger's: by unit).
    assert list(found.keys["different"].values()) == [
        key("G#1", "B"),
        key("G#2", "C"),
        key("G#3", "D"),
    ]


def test_findings_past_the_keys_a_unit_kept_are_counted() -> None:
    kept = [key("G#1", str(n)) for n in range(FINDINGS)]
    sources = [unit(0, {"source": 900, "missing": FINDINGS + 200}, missing=kept)]
    extras = [unit(1, {"extra": 3}, extra=[key("G#2", "X")])]
    found = findings_of(sources, extras)
    assert found.beyond == {"missing": 200, "different": 0, "extra": 2}
    assert list(found.keys["missing"].values()) == kept


@given(st.lists(st.tuples(st.integers(0, 50), st.integers(0, 50)), min_size=1, max_size=6))
def test_a_report_from_any_cut_into_units_is_the_same(parts: list[tuple[int, int]]) -> None:
    """However the items fall into units, the counts (and so the report) are their sums."""
    whole = findings_of(
        [unit(0, {"source": sum(s for s, _ in parts), "missing": sum(m for _, m in parts)})], []
    )
    cut = findings_of([unit(0, {"source": s, "missing": m}) for s, m in parts], [])
    assert dataclasses.asdict(cut.report) == dataclasses.asdict(whole.report)
    assert cut.beyond == whole.beyond


def test_an_item_whose_derivation_changes_its_source_key_has_moved() -> None:
    source = Table("Old", "PK", "SK")
    item = {**key("G#1", "ORDER#1"), "n": {"N": "1"}}
    assert not moved_from(source, item, {**item, "LSI1SK": {"S": "S#new"}})
    assert moved_from(source, item, {**item, "SK": {"S": "ORDER#000001"}})
    assert moved_from(source, item, {"PK": item["PK"], "n": item["n"]})  # SK dropped
    # The same number written another way is the same key.
    numbered = Table("Old", KeyAttribute("PK", "S"), KeyAttribute("N", "N"))
    assert not moved_from(
        numbered, {"PK": {"S": "a"}, "N": {"N": "1"}}, {"PK": {"S": "a"}, "N": {"N": "1.0"}}
    )
