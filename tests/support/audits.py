"""Item collections whose sizes are worked out by hand, for the collection audit's tests."""

from __future__ import annotations

from lsiorm import GlobalIndex, KeyAttribute, LocalIndex, Projection, Table
from lsiorm._ops.audit import CollectionSize


def audit_table(name: str) -> Table:
    """A table with an ALL and a KEYS_ONLY LSI and a GSI (whose entries collections do not hold)."""
    return Table(
        name,
        "PK",
        "SK",
        local_indexes=[
            LocalIndex("ByA", KeyAttribute("LA"), Projection.all()),
            LocalIndex("ByB", KeyAttribute("LB"), Projection.keys_only()),
        ],
        global_indexes=[GlobalIndex("ByG", KeyAttribute("G"))],
    )


def S(text: str) -> dict[str, str]:
    return {"S": text}


# Sizes by hand: an attribute is its name's bytes plus its value's.
ITEMS_OF_A = [
    # PK 3 + SK 3 + LA 3 + body 9 = 18; in ByA the same 18.
    {"PK": S("A"), "SK": S("1"), "LA": S("x"), "body": S("hello")},
    # PK 3 + SK 3 + LB 4 + n (1 + 2) = 13; in ByB PK + SK + LB = 10.
    {"PK": S("A"), "SK": S("2"), "LB": S("yy"), "n": {"N": "12"}},
    # PK 3 + SK 3 + LA 3 + LB 3 + G 2 = 14; ByA 14; ByB 9; ByG is global, not counted.
    {"PK": S("A"), "SK": S("3"), "LA": S("z"), "LB": S("w"), "G": S("g")},
]
# Each table item and each LSI entry carries 100 bytes of overhead.
SIZE_OF_A = {"items": 3, "table": 118 + 113 + 114, "ByA": 118 + 114, "ByB": 110 + 109}
OTHERS = [
    {"PK": S("B"), "SK": S("1"), "body": S("x" * 1000), "LA": S("b")},
    {"PK": S("C"), "SK": S("1"), "body": S("y" * 500)},
]


def expected_a(table: Table) -> CollectionSize:
    """The size of collection ``A`` of ``table`` (an :func:`audit_table`)."""
    return CollectionSize(
        table.name,
        "PK",
        "A",
        SIZE_OF_A["items"],
        SIZE_OF_A["table"],
        {"ByA": SIZE_OF_A["ByA"], "ByB": SIZE_OF_A["ByB"]},
    )
