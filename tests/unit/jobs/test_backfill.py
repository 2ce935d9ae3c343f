"""Backfill's treatment of one item, driven step by step: how each outcome is counted.

A rewrite whose answer was lost is resent by the retry policy; the resend then fails (the
item changed: by this very rewrite) or, for a move, is refused as throttled. Either way the
rewrite applied, and the item must be counted as rewritten, not as current, retried or gone.
"""

from __future__ import annotations

from typing import Any

import pytest

from lsiorm._jobs.backfill import BackfillKind
from lsiorm._jobs.engine import digest
from lsiorm._model.wire import item_to_wire
from lsiorm._ops.pipeline import Context
from lsiorm._ops.retry import RetryPolicy
from lsiorm._ops.steps import Call, Done, Sleep, advance
from lsiorm.errors import (
    CancellationReason,
    ConditionFailedError,
    InternalServerError,
    TransactionCanceledError,
)
from support.models import declare_doc

ONCE = Context(RetryPolicy(max_attempts=1))


def drive(op: Any, answer: Any, *, sleeps: bool = False) -> tuple[Any, list[Call]]:
    """Run ``op``, answering each Call with ``answer(call)`` (an exception is thrown in);
    with ``sleeps``, the retry policy's sleeps pass (without, the only steps are Calls)."""
    calls: list[Call] = []
    step = advance(op)
    while not isinstance(step, Done):
        if sleeps and isinstance(step, Sleep):
            step = advance(op, None)
            continue
        assert isinstance(step, Call), step
        calls.append(step)
        result = answer(step)
        step = advance(op, error=result) if isinstance(result, Exception) else advance(op, result)
    return step.value, calls


def stored(doc: Any, **fields: Any) -> dict[str, Any]:
    return item_to_wire(doc(**fields).to_item())


@pytest.mark.parametrize(
    ("exported", "counts"),
    [
        # A lost update answer whose resend found it applied counts as rewritten.
        (False, {"scanned": 1, "rewritten": 1, "retried": 0}),
        # Refused at its first attempt, a rewrite from an export is not this run's own: an
        # exported item rewritten by an earlier run counts as current.
        (True, {"scanned": 1, "retried": 1, "current": 1}),
    ],
    ids=["resend-found-it-applied", "exported-rewritten-by-an-earlier-run"],
)
def test_an_update_refused_as_changed_where_the_item_is_rewritten_already(
    exported: bool, counts: dict[str, int]
) -> None:
    _, old = declare_doc("Docs", lsi3=False)
    _, new = declare_doc("Docs", lsi3=True)
    item = stored(old, user="u", n=1, title="t", size=3)
    rewritten = stored(new, user="u", n=1, title="t", size=3)
    kind = BackfillKind(ONCE, new, None, exported=exported)
    part = kind.new_part()

    def answer(call: Call) -> Any:
        if call.operation == "UpdateItem":  # changed: the resend of an applied update, say
            return ConditionFailedError("changed", code="ConditionalCheckFailedException")
        return {"Item": rewritten}

    _, calls = drive(kind.visit(part, item, {}), answer)
    assert [c.operation for c in calls] == ["UpdateItem", "GetItem"]
    assert part.counts == counts


def test_a_move_whose_resend_was_cancelled_as_throttled_counts_as_moved() -> None:
    _, old = declare_doc("Docs", lsi3=False, width=4)
    _, new = declare_doc("Docs", lsi3=False, width=6)
    item = stored(old, user="u", n=7, title="t")
    moved = stored(new, user="u", n=7, title="t")
    kind = BackfillKind(ONCE, new, None)
    part = kind.new_part()

    def answer(call: Call) -> Any:
        if call.operation == "TransactWriteItems":  # its put applied, its answer lost
            reasons = [CancellationReason(0, "ThrottlingError", "")] * 2
            return TransactionCanceledError("throttled", reasons=reasons)
        if call.operation == "DeleteItem":  # the original, exactly as read
            return {"Attributes": item}
        key = call.params["Key"]
        return {"Item": moved} if key["SK"] == moved["SK"] else {}

    _, calls = drive(kind.visit(part, item, {}), answer)
    # The move's put is found applied at the new key; the original is then deleted.
    assert [c.operation for c in calls] == ["TransactWriteItems", "GetItem", "DeleteItem"]
    assert calls[2].params["Key"] == {"PK": item["PK"], "SK": item["SK"]}
    assert part.counts == {"scanned": 1, "rewritten": 1, "moved": 1}
    assert "gone" not in part.counts


def test_an_item_rewritten_before_a_resume_counts_as_rewritten_once() -> None:
    _, new = declare_doc("Docs", lsi3=True)
    rewritten = stored(new, user="u", n=1, title="t", size=3)
    kind = BackfillKind(ONCE, new, None)
    part = kind.new_part()
    key = {"PK": rewritten["PK"], "SK": rewritten["SK"]}
    recovered = {digest(key): {"i": digest(rewritten), "m": None}}
    _, calls = drive(kind.visit(part, rewritten, recovered), lambda call: {})
    assert calls == []
    assert part.counts == {"scanned": 1, "rewritten": 1}
    assert recovered == {}
    # Without an intent, the same item is current.
    other = kind.new_part()
    drive(kind.visit(other, rewritten, {}), lambda call: {})
    assert other.counts == {"scanned": 1, "current": 1}


def test_the_intent_names_each_stale_item_and_what_it_becomes() -> None:
    _, old = declare_doc("Docs", lsi3=False)
    _, new = declare_doc("Docs", lsi3=True)
    stale = stored(old, user="u", n=1, title="t", size=3)
    current = stored(new, user="u", n=2, title="t", size=3)
    intent = BackfillKind(ONCE, new, None).intent([stale, current])
    key = {"PK": stale["PK"], "SK": stale["SK"]}
    rewritten = stored(new, user="u", n=1, title="t", size=3)
    assert intent == {digest(key): {"i": digest(rewritten), "m": None}}
    assert BackfillKind(ONCE, new, None, dry_run=True).intent([stale]) == {}


def test_an_exported_item_whose_resend_found_it_applied_counts_as_rewritten() -> None:
    _, old = declare_doc("Docs", lsi3=False)
    _, new = declare_doc("Docs", lsi3=True)
    exported = stored(old, user="u", n=1, title="t", size=3)
    rewritten = stored(new, user="u", n=1, title="t", size=3)
    twice = Context(RetryPolicy(max_attempts=2, initial=0.0, maximum=0.0))
    kind = BackfillKind(twice, new, None, exported=True)
    part = kind.new_part()
    updates = iter(
        [
            InternalServerError("answer lost", code="InternalServerError"),
            ConditionFailedError("changed", code="ConditionalCheckFailedException"),
        ]
    )

    def answer(call: Call) -> Any:
        return next(updates) if call.operation == "UpdateItem" else {"Item": rewritten}

    _, calls = drive(kind.visit(part, exported, {}), answer, sleeps=True)
    assert [c.operation for c in calls] == ["UpdateItem", "UpdateItem", "GetItem"]
    assert part.counts == {"scanned": 1, "rewritten": 1, "retried": 0}
