"""Table names per deployment: declared names go out prefixed and come back declared."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from lsiorm._ops.naming import from_wire, prefixed, to_wire

names = st.text(alphabet="abcXYZ09_.-", min_size=3, max_size=12)


@given(tables=st.lists(names, min_size=1, max_size=4, unique=True), prefix=names)
def test_wire_names_round_trip(tables: list[str], prefix: str) -> None:
    resolve = prefixed(prefix)
    params = {
        "RequestItems": {t: {"Keys": [{"PK": {"S": t}}]} for t in tables},
        "TransactItems": [{"Put": {"TableName": t, "Item": {}}} for t in tables],
        "TableName": tables[0],
    }
    wire, back = to_wire(params, resolve)
    assert set(wire["RequestItems"]) == {prefix + t for t in tables}
    assert [a["Put"]["TableName"] for a in wire["TransactItems"]] == [prefix + t for t in tables]
    assert wire["TableName"] == prefix + tables[0]
    assert params["TableName"] == tables[0]  # the caller's params are not changed
    response = {
        "Responses": {prefix + t: [] for t in tables},
        "UnprocessedKeys": {prefix + t: {} for t in tables},
        "ConsumedCapacity": [{"TableName": prefix + t} for t in tables],
        "ItemCollectionMetrics": {prefix + t: [] for t in tables},
        "Table": {"TableName": prefix + tables[0]},
    }
    declared = from_wire("BatchWriteItem", response, back)
    assert set(declared["Responses"]) == set(tables)
    assert set(declared["UnprocessedKeys"]) == set(tables)
    assert [c["TableName"] for c in declared["ConsumedCapacity"]] == tables
    assert set(declared["ItemCollectionMetrics"]) == set(tables)
    assert declared["Table"]["TableName"] == tables[0]
