"""A condition no key condition answers, on a field kept only in keys: one answer, everywhere.

Such a field (``Field(exclude=True)``) has no attribute, so no filter can check it: not
``filter()``, not ``allow_filter_fallback()``, not a write condition. Every refusal in the chain
says so and gives the same answer (read without the condition and compare in code, or re-key),
never sending the user from one refused form to another.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from pydantic import Field

from lsiorm import (
    Entity,
    GlobalIndex,
    KeyAttribute,
    Table,
    ValidationError,
    decode_item,
    gt,
    query,
    scan,
    where,
)
from lsiorm._requests.items import put_request

TABLE = Table(
    "key_only_answer",
    "pk",
    "sk",
    global_indexes=[GlobalIndex("by_topic", KeyAttribute("gpk"), KeyAttribute("gsk"))],
)


class Visit(
    Entity,
    table=TABLE,
    keys={
        "pk": "SITE#{site}",
        "sk": "VISIT#{visit_id}#{topic}",
        "gpk": "T#{topic}#{visit_id}",
        "gsk": "V",
    },
    type_attribute=None,
    key_style="plain",
):
    site: str
    visit_id: int = Field(exclude=True)
    topic: str = Field(exclude=True)
    page: str


REFUSED: dict[str, tuple[str, str, Callable[[], Any]]] = {
    "a range in where()": (
        "visit_id",
        "query.plain-range",
        lambda: query(Visit).where(site="a", visit_id=gt(5)).plan(),
    ),
    "the range with allow_filter_fallback()": (
        "visit_id",
        "query.plain-range",
        lambda: query(Visit).where(site="a", visit_id=gt(5)).allow_filter_fallback().plan(),
    ),
    "the range in filter()": (
        "visit_id",
        "condition.key-only-field",
        lambda: query(Visit).where(site="a").filter(visit_id=gt(5)).plan(),
    ),
    "a scan's filter": (
        "visit_id",
        "condition.key-only-field",
        lambda: scan(Visit).filter(visit_id=gt(5)).plan(),
    ),
    "a write condition": (
        "visit_id",
        "condition.key-only-field",
        lambda: put_request(
            Visit(site="a", visit_id=1, topic="t", page="/"), condition=where(visit_id=gt(0))
        ),
    ),
    "equality on key text that may hold the separator": (
        "topic",
        "query.plain-ambiguous",
        lambda: query(Visit).where(topic="a#b", visit_id=1).using("by_topic").plan(),
    ),
}


@pytest.mark.parametrize("case", REFUSED)
def test_every_refusal_gives_the_one_answer(case: str) -> None:
    name, rule, call = REFUSED[case]
    with pytest.raises(ValidationError) as caught:
        call()
    words = str(caught.value)
    assert caught.value.rule == rule
    # The one answer: what can check it, and what to do otherwise.
    assert "no filter or condition can check it, allow_filter_fallback() included" in words
    assert f"read without that condition and compare {name} in your code" in words
    # No advice that is refused in turn: filter() and the fallback cannot check the field.
    assert "use filter()" not in words
    assert "Or call allow_filter_fallback()" not in words
    assert "Put the condition in where()" not in words


def test_the_answer_is_followed_by_reading_without_the_condition() -> None:
    plan = query(Visit).where(site="a").plan()
    assert plan.filter is None  # reads the key range; visit_id comes back from each key
    item = Visit(site="a", visit_id=7, topic="t", page="/").to_wire()
    assert "visit_id" not in item
    assert decode_item(TABLE, item) == Visit(site="a", visit_id=7, topic="t", page="/")
