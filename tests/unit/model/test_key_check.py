"""The key check alone: which stored key attributes are missing, stale or extra, and moves."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from lsiorm import Entity, Table
from lsiorm._model.key_check import check_item_keys
from lsiorm._model.wire import item_to_wire, to_wire
from support.models import declare_doc

NEW_TABLE, NEW_DOC = declare_doc("Audit-Pure", lsi3=True)


@given(
    user=st.text("abcxyz", min_size=1, max_size=5),
    n=st.integers(0, 9999),
    title=st.text("ABCdef#", min_size=1, max_size=8),
    size=st.integers(0, 999),
    changes=st.dictionaries(
        st.sampled_from(["LSI1SK", "LSI3SK"]),
        st.sampled_from(["drop", "change"]),
    ),
    extra=st.sets(st.sampled_from(["LSI2SK", "LSI4SK", "LSI5SK"])),
)
def test_check_reports_exactly_the_perturbed_attributes(
    user: str, n: int, title: str, size: int, changes: dict[str, str], extra: set[str]
) -> None:
    doc = NEW_DOC(user=user, n=n, title=title, size=size)
    item = item_to_wire(doc.to_item())
    expected: dict[str, str] = {}
    for attribute, how in changes.items():
        if how == "drop":
            item.pop(attribute)
            expected[attribute] = "missing"
        else:
            item[attribute] = to_wire(f"OLD#{item[attribute]['S']}")
            expected[attribute] = "stale"
    for attribute in extra:
        item[attribute] = to_wire("LEFTOVER")
        expected[attribute] = "extra"
    check = check_item_keys(NEW_TABLE, item)
    assert check is not None
    assert {p.attribute: p.kind for p in check.problems} == expected
    assert check.current == (not expected)
    assert not check.moves
    assert check.stored_key == {"PK": item["PK"], "SK": item["SK"]}


def test_a_new_sort_key_format_is_a_move() -> None:
    old_table, old_doc = declare_doc("Audit-Move", lsi3=False, width=4)
    item = item_to_wire(old_doc(user="u", n=7, title="t").to_item())
    new_table, _ = declare_doc("Audit-Move", lsi3=False, width=6)
    check = check_item_keys(new_table, item)
    assert check is not None
    assert [(p.attribute, p.kind, p.stored, p.expected) for p in check.problems] == [
        ("SK", "stale", "DOC#0007", "DOC#000007")
    ]
    assert check.moves
    assert check_item_keys(old_table, item) is not None
    assert check_item_keys(old_table, {"PK": to_wire("x"), "SK": to_wire("y")}) is None


def test_global_index_slots_and_the_type_attribute_are_checked() -> None:
    from lsiorm import GlobalIndex, KeyAttribute

    def table() -> Table:
        return Table(
            "Audit-Gsi",
            "PK",
            "SK",
            global_indexes=[GlobalIndex("ByEmail", KeyAttribute("GPK"), KeyAttribute("GSK"))],
        )

    class Before(Entity, table=table(), keys={"PK": "U#{u}", "SK": "PROFILE"}, type_name="User"):
        u: str
        email: str

    class After(
        Entity,
        table=table(),
        keys={"PK": "U#{u}", "SK": "PROFILE", "GPK": "EMAIL#{email}", "GSK": "U#{u}"},
        type_name="User",
    ):
        u: str
        email: str

    item = item_to_wire(Before(u="ann", email="a@x").to_item())
    check = check_item_keys(meta_table(After), item)
    assert check is not None
    assert sorted((p.attribute, p.kind) for p in check.problems) == [
        ("GPK", "missing"),
        ("GSK", "missing"),
    ]
    renamed = {**item_to_wire(After(u="ann", email="a@x").to_item()), "_type": to_wire("Usr")}
    assert check_item_keys(meta_table(After), renamed) is None  # no declared type "Usr"


def meta_table(cls: type[Entity]) -> Table:
    from lsiorm._model.entity_meta import meta_of

    return meta_of(cls).table
