"""A page's rows decoder gives, row by row, exactly what `decode` gives for each row.

`rows_decoder` works out once per page what `decode` looks up per row, and keeps, per type
name, the class's stored fields and decoder from the first row `decode` read whole. The
reference is `decode` itself, called on every row: the same entity (class, values, missing
fields), the same None, or the same error, over random sequences of whole rows, partial
rows, rows of a class the request does not read, of unknown types, without a type
attribute, with a type value of another form, and with values their field refuses.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from lsiorm import Entity, Table, missing_fields, query
from lsiorm._query.decode import decode, rows_decoder

TABLE = Table("rows_decoder", "pk", "sk")


class Note(Entity, table=TABLE, keys={"pk": "U#{user}", "sk": "N#{n:04d}"}):
    user: str
    n: int
    text: str = ""


class Like(Entity, table=TABLE, keys={"pk": "U#{user}", "sk": "L#{target}"}):
    user: str
    target: str


WHOLE = query(Note).where(user="u").plan()
SELECTED = query(Note).where(user="u").select("n").plan()


def _note(n: int) -> dict[str, Any]:
    return Note(user="u", n=n, text=f"t{n}").to_wire()


def _like(target: str) -> dict[str, Any]:
    return Like(user="u", target=target).to_wire()


def _changed(item: dict[str, Any], change: str) -> dict[str, Any]:
    out = dict(item)
    if change == "no text":
        out.pop("text", None)
    elif change == "no number":  # read back from the sort key's text by decode
        out.pop("n", None)
    elif change == "no type":
        out.pop(TABLE.type_attribute, None)
    elif change == "unknown type":
        out[TABLE.type_attribute] = {"S": "Nobody"}
    elif change == "type with two members":
        out[TABLE.type_attribute] = {"S": "Note", "N": "1"}
    elif change == "type as a number":
        out[TABLE.type_attribute] = {"N": "1"}
    elif change == "bad number":
        out["n"] = {"N": "x"}
    elif change == "number as text":
        out["n"] = {"S": "7"}
    elif change == "list":
        out["text"] = {"L": [{"S": "a"}]}
    return out


CHANGES = st.sampled_from(
    [
        "none",
        "none",
        "none",
        "no text",
        "no number",
        "no type",
        "unknown type",
        "type with two members",
        "type as a number",
        "bad number",
        "number as text",
        "list",
    ]
)
ROWS = st.lists(
    st.tuples(st.sampled_from(["note", "like"]), st.integers(0, 50), CHANGES),
    min_size=1,
    max_size=12,
)


def _outcome(read: Any) -> Any:
    try:
        entity = read()
    except Exception as error:  # the same error type and text as decode raises
        return ("error", type(error), str(error))
    if entity is None:
        return None
    return (type(entity), entity.__dict__.copy(), missing_fields(entity))


@given(
    rows=ROWS,
    plan=st.sampled_from([WHOLE, SELECTED]),
    classes=st.sampled_from([(Note,), (Note, Like), (Like,)]),
)
def test_a_page_decodes_each_row_as_decode_does(
    rows: list[tuple[str, int, str]], plan: Any, classes: tuple[type[Entity], ...]
) -> None:
    decode_row = rows_decoder(plan, classes)
    for kind, number, change in rows:
        item = _changed(_note(number) if kind == "note" else _like(f"x{number}"), change)
        expected = _outcome(lambda item=item: decode(plan, item, classes))
        assert _outcome(lambda item=item: decode_row(item)) == expected, (kind, change)
