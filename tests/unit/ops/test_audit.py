"""The collection size model alone: a collection's items, sized by hand, table and each LSI."""

from __future__ import annotations

from lsiorm._ops.audit import collection_size
from support.audits import ITEMS_OF_A, audit_table, expected_a


def test_collection_size_applies_the_size_model() -> None:
    table = audit_table("Audit")
    size = collection_size(table, "A", ITEMS_OF_A)
    assert size == expected_a(table)
    assert size.total_bytes == 345 + 232 + 219
    assert size.gb == size.total_bytes / 2**30
    assert size.exceeds(size.gb)
    assert not size.exceeds(size.gb * 1.01)
