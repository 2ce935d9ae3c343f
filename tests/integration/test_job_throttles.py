"""Key jobs under throttling: a transaction cancelled only by throttles or conflicts is retried
wherever a job sends one (its ledger's own included), so the job ends with exact counts.

The faults are lsiorm's own (`FaultInjector`): cancellations as DynamoDB sends them for a
throttled or conflicting transaction, and throttles with DynamoDB's reasons. Every outcome is
read back from the engine directly.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from datetime import date
from typing import Any

import pytest

from lsiorm import RetryPolicy, Session
from lsiorm._jobs.ledger import NAMESPACE
from lsiorm._model.wire import item_from_wire, item_to_wire
from lsiorm.testing import FaultInjector
from support.jobs import everything, pace_injected_throttles, session_on
from support.models import declare_dated_doc
from support.writers import RandomWriter

ITEMS = 40
PATIENT = RetryPolicy(max_attempts=40, max_delay=120.0, initial=0.001, maximum=0.02)
KEY_RANGE = "TableWriteKeyRangeThroughputExceeded"


def on_ledger(_: str, params: Mapping[str, Any]) -> bool:
    """Whether a request (as sent) reads or writes the jobs' ledger partition."""
    keys = [params.get("Key"), params.get("Item")]
    for action in params.get("TransactItems") or ():
        body = next(iter(action.values()))
        keys += [body.get("Key"), body.get("Item")]
    return any(k is not None and k.get("PK") == {"S": NAMESPACE} for k in keys)


def seeded(session: Session, name: str, *, width: int) -> tuple[Any, Any, dict[int, Any]]:
    """The old release's items; the new release (a new LSI slot, and with ``width`` 6 a new sort
    key: every item moves) and the items it derives."""
    old_table, old_doc = declare_dated_doc(name, lsi3=False)
    session.create_table(old_table)
    old = {
        n: old_doc(user=f"u{n % 3}", n=n, day=date(2024, 1 + n % 5, 1 + n % 27), body=f"b{n}")
        for n in range(ITEMS)
    }
    session.batch_write(list(old.values()))
    _, doc = declare_dated_doc(name, lsi3=True, width=width)
    return old_table, doc, old


def expected(doc: Any, old: Mapping[int, Any]) -> list[dict[str, Any]]:
    items = [item_from_wire(item_to_wire(doc(**e.model_dump()).to_item())) for e in old.values()]
    return sorted(items, key=lambda i: int(i["n"]))


def stored(session: Session, name: str) -> list[dict[str, Any]]:
    return sorted((item_from_wire(i) for i in everything(session, name)), key=lambda i: int(i["n"]))


@pytest.mark.parametrize("width", [4, 6], ids=["in-place", "moves"])
@pytest.mark.parametrize("reason", ["ThrottlingError", "TransactionConflict"])
def test_one_cancellation_of_the_first_transaction_does_not_stop_a_backfill(
    session: Session, endpoint_url: str, table_name: str, width: int, reason: str
) -> None:
    old_table, doc, old = seeded(session, table_name, width=width)
    try:
        with (
            session_on(endpoint_url, retry=PATIENT) as job,
            FaultInjector(session=job) as faults,
        ):
            faults.cancel_transaction(reason)  # the first TransactWriteItems the job sends
            report = job.backfill(doc, segments=2, page_size=9)
        assert faults.count("TransactWriteItems", fault="cancel") == 1
        assert (report.scanned, report.rewritten, report.current) == (ITEMS, ITEMS, 0)
        assert (report.retried, report.gone, report.failed) == (0, 0, [])
        assert report.moved == (ITEMS if width == 6 else 0)
        assert stored(session, table_name) == expected(doc, old)
    finally:
        session.delete_table(old_table)


def test_a_backfill_whose_ledger_partition_is_throttled_ends(
    session: Session, endpoint_url: str, table_name: str
) -> None:
    """The ledger's partition is the hot one: half its transactions are cancelled as throttled,
    and half its other requests throttled as a hot key range; the job goes on."""
    old_table, doc, old = seeded(session, table_name, width=4)
    try:
        with (
            session_on(endpoint_url, retry=PATIENT) as job,
            FaultInjector(session=job, seed=3) as faults,
        ):
            faults.cancel_transaction("ThrottlingError", when=on_ledger, rate=0.5)
            faults.throttle(reason=KEY_RANGE, when=on_ledger, rate=0.5)
            report = job.backfill(doc, segments=3, page_size=7)
        assert faults.count("TransactWriteItems", fault="cancel") > 0
        assert faults.count(fault="throttle") > 0
        assert (report.scanned, report.rewritten, report.failed) == (ITEMS, ITEMS, [])
        assert stored(session, table_name) == expected(doc, old)
        run = session.job(old_table, report.job)
        assert run.state == "done"
        assert run.units_done == run.units_total
    finally:
        session.delete_table(old_table)


@pytest.mark.parametrize("width", [4, 6], ids=["in-place", "moves"])
def test_a_backfill_under_30_percent_faults_and_a_writer_loses_nothing(
    session: Session,
    endpoint_url: str,
    table_name: str,
    width: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """30% of the job's requests fail: throttled transactions (cancelled), conflicts, hot-key
    throttles, lost answers; a random writer writes between the job's requests.

    Nothing is lost, resurrected, duplicated or stale, with one exception no request can
    close (DynamoDB cannot condition a delete on "no other attribute exists"): a move whose
    delete of the original applied and lost its answer cannot know what the writer added to
    the original just before. The report counts those moves (``unverified``), and only their
    items' copies may lack such attributes."""
    # The hot-key throttles are drawn at random, not a limit: the job's pacing after them stops
    # halving at the helper's floor instead of writing a partition a unit a second.
    pace_injected_throttles(monkeypatch)
    old_table, doc, old = seeded(session, table_name, width=width)
    rng = random.Random(width)
    new = {n: item_to_wire(doc(**e.model_dump()).to_item()) for n, e in old.items()}

    def keys(n: int) -> list[dict[str, Any]]:
        original = item_to_wire(old[n].to_item())
        return [{"PK": original["PK"], "SK": original["SK"]}]

    writer = RandomWriter(
        session,
        table_name,
        rng,
        {n: item_to_wire(e.to_item()) for n, e in old.items()},
        keys=keys,
        fresh=lambda n: {**new[n], "body": {"S": "again"}},
        derived={*old_table.key_attributes, old_table.type_attribute},
        field="body",
        number="hits",
    )
    try:
        with (
            session_on(endpoint_url, writer, retry=PATIENT) as job,
            FaultInjector(session=job, seed=width) as faults,
        ):
            # The ledger's transactions (a unit done) first: half of them are cancelled.
            faults.cancel_transaction("ThrottlingError", when=on_ledger, rate=0.5)
            faults.cancel_transaction(["ThrottlingError", "None"], rate=0.1)
            faults.cancel_transaction(["None", "TransactionConflict"], rate=0.1)
            faults.throttle(reason=KEY_RANGE, rate=0.1)
            faults.lose_answer(rate=0.05)
            report = job.backfill(doc, segments=3, page_size=7)
        writer.active = False
        cancelled = [r for r in faults.requests if r.fault == "cancel"]
        assert any(on_ledger(r.operation, r.params) for r in cancelled)
        assert faults.count(fault="throttle") > 0
        assert faults.count(fault="lost-answer") > 0
        assert report.failed == []
        # A move's delete that applied and lost its answer leaves a copy as the job read the
        # item: what a writer added to the original in the instant before is unknowable. The
        # report counts such moves; only their items may lack such attributes.
        deleted = (
            writer.item_at(r.params["Key"])
            for r in faults.requests
            if r.operation == "DeleteItem"
            and r.fault == "lost-answer"
            and r.params.get("ReturnValues") == "ALL_OLD"
        )
        unsure = {i for i in deleted if i is not None}
        assert report.unverified <= len(unsure)
        lacking = writer.check(
            everything(session, table_name), lambda i: int(i["n"]), unverified=unsure
        )
        assert len(lacking) <= report.unverified
        if width == 4:  # nothing moves: nothing is unverified
            assert report.unverified == 0
        assert session.audit_keys(doc).clean
    finally:
        session.delete_table(old_table)
