"""Every number DynamoDB can store reads back exactly through its field's type, or is refused.

A float holds about 16 significant digits and a DynamoDB number 38: a number a float field
cannot hold is a `NumberPrecisionError` naming the field and the number (unless the field is
``Annotated[float, LossyFloat]``), and so is a fraction read into an int field. Each decoding
path is checked: the generated decoder, the general one (a model with a validator), query
results (whole and partial), and condition values.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, Field, model_validator

from lsiorm import Entity, LossyFloat, Table, decode_item, gt
from lsiorm._conditions import Placeholders, where
from lsiorm._model.entity_meta import meta_of
from lsiorm._model.number_text import decimal_text
from lsiorm._model.wire import number_to_wire, to_wire
from lsiorm._query.decode import decode, missing_fields
from lsiorm._query.values import query
from lsiorm._requests.items import compile_entity_condition
from lsiorm.errors import NumberPrecisionError
from support.strategies import numbers

SCORES = Table("Scores", "PK", "SK")


class Stats(BaseModel):
    best: float = 0.0
    rough: Annotated[float, LossyFloat] = 0.0


class Score(Entity, table=SCORES, keys={"PK": "S#{name}", "SK": "S"}):
    name: str
    exact: Decimal = Decimal(0)
    count: int = 0
    score: float = 0.0
    maybe: float | None = None
    rough: Annotated[float, LossyFloat] = 0.0
    aliased: float = Field(default=0.0, alias="Aliased")
    history: list[float] = Field(default_factory=list)
    by_day: dict[str, float] = Field(default_factory=dict)
    stats: Stats = Field(default_factory=Stats)


class Checked(Entity, table=SCORES, keys={"PK": "C#{name}", "SK": "C"}):
    """A model with a before validator: it is decoded by the general path, not a generated one."""

    name: str
    score: float = 0.0

    @model_validator(mode="before")
    @classmethod
    def keep(cls, data: Any) -> Any:
        return data


def _item(cls: type[Entity], name: str, **attributes: Any) -> dict[str, Any]:
    prefix = "S" if cls is Score else "C"
    return {
        "PK": {"S": f"{prefix}#{name}"},
        "SK": {"S": prefix},
        "_type": {"S": cls.__name__},
        "name": {"S": name},
        **attributes,
    }


def _same_number(value: Any, text: str) -> bool:
    """The value written back is the number read: its wire text is the same number."""
    return Decimal(number_to_wire(value)) == Decimal(text)


def _fits_float(text: str) -> bool:
    """Python's own shortest text of the nearest float is the same number (a float can round
    past DynamoDB's largest number, so no lsiorm number text is used here)."""
    return Decimal(repr(float(Decimal(text)))) == Decimal(text)


def _outcome(cls: type[Entity], attribute: str, wire: Any) -> Entity | NumberPrecisionError:
    try:
        got = decode_item(SCORES, _item(cls, "a", **{attribute: wire}))
    except NumberPrecisionError as refused:
        return refused
    assert got is not None
    return got


def _nest(attribute: str, wire: dict[str, Any]) -> dict[str, Any]:
    if attribute == "history":
        return {"L": [wire]}
    if attribute == "by_day":
        return {"M": {"mon": wire}}
    if attribute == "stats":
        return {"M": {"best": wire}}
    return wire


@given(number=numbers)
def test_every_storable_number_reads_back_exactly_or_is_refused(number: Any) -> None:
    text = number_to_wire(number)
    for cls, attribute, get in [
        (Score, "exact", lambda s: s.exact),
        (Score, "count", lambda s: s.count),
        (Score, "score", lambda s: s.score),
        (Score, "maybe", lambda s: s.maybe),
        (Score, "Aliased", lambda s: s.aliased),
        (Score, "history", lambda s: s.history[0]),
        (Score, "by_day", lambda s: s.by_day["mon"]),
        (Score, "stats", lambda s: s.stats.best),
        (Checked, "score", lambda s: s.score),  # the general decoder
    ]:
        got = _outcome(cls, attribute, _nest(attribute, {"N": text}))
        if not isinstance(got, NumberPrecisionError):
            assert _same_number(get(got), text), (attribute, text, get(got))
            continue
        assert Decimal(got.value) == Decimal(text)
        assert got.field.startswith(f"{cls.__name__}.")
        if attribute == "count":
            assert got.rule == "number.not-an-int"
            assert Decimal(text) != Decimal(text).to_integral_value()
        else:
            assert got.rule == "number.inexact-float"
            assert "Decimal" in str(got)
            assert not _fits_float(text)


@given(number=numbers)
def test_a_lossy_float_reads_the_nearest_float(number: Any) -> None:
    text = number_to_wire(number)
    nearest = float(Decimal(text))
    got = decode_item(SCORES, _item(Score, "a", rough={"N": text}))
    assert isinstance(got, Score)
    assert got.rough == nearest
    nested = decode_item(SCORES, _item(Score, "a", stats={"M": {"rough": {"N": text}}}))
    assert isinstance(nested, Score)
    assert nested.stats.rough == nearest


def test_a_float_that_cannot_hold_the_number_names_the_field_and_the_value() -> None:
    stored = "1000000000000000000002.5"  # 1e21 after add={"score": 2.5}
    for cls in (Score, Checked):
        with pytest.raises(NumberPrecisionError) as refused:
            decode_item(SCORES, _item(cls, "a", score={"N": stored}))
        assert refused.value.rule == "number.inexact-float"
        assert refused.value.field == f"{cls.__name__}.score"
        assert refused.value.value == stored
        assert "1e+21" in str(refused.value)
        assert "declare it Decimal" in str(refused.value)
    with pytest.raises(NumberPrecisionError) as nested:
        decode_item(SCORES, _item(Score, "a", history={"L": [{"N": "1"}, {"N": stored}]}))
    assert nested.value.field == "Score.history[1]"
    # What a float holds exactly reads back, however it is written.
    ok = decode_item(SCORES, _item(Checked, "a", score={"N": "1E+21"}))
    assert isinstance(ok, Checked)
    assert ok.score == 1e21


def test_query_results_check_numbers_whole_and_partial() -> None:
    stored = {"N": "0.10000000000000000001"}
    item = _item(Score, "a", score=stored)
    whole = query(Score).where(name="a").plan()
    with pytest.raises(NumberPrecisionError):
        decode(whole, item, (Score,))
    without_type = {k: v for k, v in item.items() if k != "_type"}
    with pytest.raises(NumberPrecisionError):
        decode(whole, without_type, (Score,))  # decoded from its key and attributes
    partial = query(Score).where(name="a").select("name", "score").plan()
    with pytest.raises(NumberPrecisionError):
        decode(partial, item, (Score,))
    fine = decode(partial, _item(Score, "a", score={"N": "0.1"}), (Score,))
    assert fine is not None
    assert fine.score == 0.1
    assert missing_fields(fine) >= {"exact", "count"}


def test_a_condition_value_a_float_field_cannot_hold_is_refused() -> None:
    meta = meta_of(Score)
    for value in (Decimal("0.10000000000000000001"), 2**60 + 1, "0.10000000000000000001"):
        with pytest.raises(NumberPrecisionError) as refused:
            compile_entity_condition(meta, where(score=gt(value)), Placeholders())
        assert refused.value.field == "Score.score"
    ph = Placeholders()
    compile_entity_condition(meta, where(score=gt(Decimal("0.1")), rough=gt(2**60 + 1)), ph)
    assert ph.into({})["ExpressionAttributeValues"] == {
        ":v0": {"N": "0.1"},
        ":v1": to_wire(float(2**60 + 1)),
    }


@given(st.decimals(allow_nan=False, allow_infinity=False, places=None))
def test_a_decimal_field_keeps_every_digit(value: Decimal) -> None:
    try:
        text = decimal_text(value)
    except Exception:
        return  # outside DynamoDB's range: never stored
    got = decode_item(SCORES, _item(Score, "a", exact={"N": text}))
    assert isinstance(got, Score)
    assert got.exact == value
