"""An item's size from its entity, without sending it; and the bound its declaration sets.

`stored_size` measures an entity's item as DynamoDB will hold it (protected values sealed, with
AWS KMS's sizes for encryption when no keyring is in force); `entity_size_bound` is the largest
item the declared bounds allow, which `lsiorm check` warns about near 400 KB. The bound must be
an upper bound of every size: a property over values at their declared limits.
"""

from __future__ import annotations

from typing import Annotated

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from lsiorm import Compressed, Encrypted, Entity, Offloaded, Table, stored_size
from lsiorm._model.item_encoding import wire_item
from lsiorm._model.item_size import (
    entity_size_bound,
    field_size_bounds,
    size_warnings,
    stored_item,
)
from lsiorm._model.wire import MAX_ITEM_BYTES, item_size

docs = Table("SizedDocs", "PK", "SK")


class Part(BaseModel):
    label: Annotated[str, Field(max_length=12)]
    flags: Annotated[list[bool], Field(max_length=6)]


class Doc(Entity, table=docs, keys={"PK": "D#{did}", "SK": "D"}):
    did: Annotated[str, Field(max_length=16)]
    title: Annotated[str, Field(max_length=80)]
    count: int = 0
    body: Annotated[str, Compressed(), Field(max_length=3000)] = ""
    secret: Annotated[str, Encrypted(), Field(max_length=40)] = ""
    codes: Annotated[list[int], Encrypted(), Field(max_length=8)] = Field(default_factory=list)
    part: Annotated[Part | None, Encrypted()] = None
    blob: Annotated[bytes, Offloaded(threshold=1500)] = b""  # no max_length: bounded all the same
    sealed_blob: Annotated[bytes, Encrypted(), Offloaded(threshold=900)] = b""


class Plain(Entity, table=docs, keys={"PK": "P#{pid}", "SK": "P"}):
    pid: str
    note: str = ""


big = Table("SizedBig", "PK", "SK")


class Huge(Entity, table=big, keys={"PK": "H#{hid}", "SK": "H"}):
    hid: Annotated[str, Field(max_length=20)]
    text: Annotated[str, Field(max_length=90_000)]  # 4 bytes a character: 360 KB


class Kept(Entity, table=big, keys={"PK": "K#{kid}", "SK": "K"}):
    kid: Annotated[str, Field(max_length=20)]
    document: Annotated[str, Offloaded(threshold=30_000)]  # any length: a large one is in S3


# Every character class the payload's JSON treats apart: plain ASCII, quotes and backslashes
# (escaped in two bytes), control characters (six), and four-byte UTF-8.
CHARS = st.sampled_from(["a", '"', "\\", "\x01", "é", "\U0001f600"])


def _text(size: int) -> st.SearchStrategy[str]:
    return st.lists(CHARS, max_size=size).map("".join) | st.text(max_size=size)


@settings(max_examples=60, deadline=None)
@given(
    did=_text(16).filter(bool),
    title=_text(80),
    body=_text(3000),
    secret=_text(40),
    codes=st.lists(st.integers(-(10**37), 10**37), max_size=8),
    part=st.none() | st.builds(Part, label=_text(12), flags=st.lists(st.booleans(), max_size=6)),
    blob=st.binary(max_size=4000),
    sealed_blob=st.binary(max_size=3000),
)
def test_no_value_is_larger_than_its_declared_bound(**fields: object) -> None:
    doc = Doc(**fields)  # type: ignore[arg-type]
    bounds = field_size_bounds(Doc)
    stored = stored_item(docs, wire_item(doc))
    for attribute, bound in bounds.items():
        if attribute in stored:
            assert bound is not None
            assert item_size({attribute: stored[attribute]}) <= bound, attribute
    bound, unbounded = entity_size_bound(Doc)
    assert unbounded == ()
    assert stored_size(doc) == item_size(stored) <= bound


def test_an_unprotected_item_is_measured_as_sent() -> None:
    plain = Plain(pid="1", note="x" * 300)
    assert stored_size(plain) == item_size(wire_item(plain))


def test_protected_values_count_as_stored() -> None:
    doc = Doc(did="1", title="t", body="a" * 3000, blob=bytes(4000), sealed_blob=bytes(3000))
    plain = item_size(wire_item(doc))
    size = stored_size(doc)
    assert size < plain - 3000 - 4000  # the body compressed, the blobs references
    assert size < 1000


def test_check_warns_of_entities_whose_bounds_near_400_kb() -> None:
    assert list(size_warnings(docs)) == []
    bound, unbounded = entity_size_bound(Huge)
    assert bound > 0.75 * MAX_ITEM_BYTES
    assert unbounded == ()
    (warning,) = size_warnings(big)  # Kept's document is at most its threshold in the item
    assert warning.startswith(f"Huge items can take up to {bound} bytes")
    assert "Compressed() or Offloaded()" in warning
