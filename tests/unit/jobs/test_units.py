"""Work units: plain values that survive pickling and JSON, with stable names in the ledger."""

from __future__ import annotations

import json
import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lsiorm import ExportUnit, ScanUnit, unit_from_json, unit_to_json
from lsiorm._jobs.engine import digest
from lsiorm._jobs.units import scan_units
from lsiorm.errors import ValidationError

segments = st.integers(1, 1_000_000).flatmap(
    lambda total: st.builds(ScanUnit, st.integers(0, total - 1), st.just(total))
)
partitions = st.builds(
    ScanUnit,
    st.just(0),
    st.just(1),
    st.one_of(st.text().map(lambda s: {"S": s}), st.integers().map(lambda n: {"N": str(n)})),
)
exports = st.builds(ExportUnit, st.text(min_size=1), st.none() | st.integers(0, 10**9))
units = st.one_of(segments, partitions, exports)


@given(units)
def test_a_unit_survives_json_and_pickle(unit: ScanUnit | ExportUnit) -> None:
    data = json.loads(json.dumps(unit_to_json(unit)))
    assert unit_from_json(data) == unit
    assert unit_from_json(data).id == unit.id
    assert pickle.loads(pickle.dumps(unit)) == unit


def test_the_units_of_a_scan_have_distinct_names_in_order() -> None:
    made = scan_units(40)
    assert [u.segment for u in made] == list(range(40))
    assert len({u.id for u in made}) == 40
    assert sorted(u.id for u in made) == [u.id for u in made]
    assert made[3].id == "scan-00003-of-00040"
    assert scan_units(7, {"S": "P#x"}) == (ScanUnit(0, 1, {"S": "P#x"}),)


@pytest.mark.parametrize(
    "data",
    [{"kind": "scan", "segment": 5, "total_segments": 5}, {"kind": "nope"}, {"segment": 1}],
)
def test_a_bad_unit_is_a_typed_error(data: dict[str, object]) -> None:
    with pytest.raises(ValidationError, match=r"jobs\.unit"):
        unit_from_json(data)


numbers = st.decimals(allow_nan=False, allow_infinity=False, places=3)


@given(st.lists(st.text(max_size=5), unique=True, min_size=1), numbers)
def test_items_the_same_as_values_have_the_same_digest(words: list[str], number: object) -> None:
    a = {"k": {"S": "x"}, "tags": {"SS": words}, "n": {"N": str(number)}}
    b = {"n": {"N": f"{number}0" if "." in str(number) else str(number)}, "k": {"S": "x"}}
    b["tags"] = {"SS": list(reversed(words))}
    assert digest(a) == digest(b)
    assert digest(a) != digest({**a, "k": {"S": "y"}})
