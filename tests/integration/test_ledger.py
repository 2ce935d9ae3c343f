"""The ledger in DynamoDB under contention: one holder per unit, leases that expire and are
taken over, one run per declaration however many processes open it at once."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from lsiorm import Session, ValidationError, ledger_table
from lsiorm._jobs.ledger import JobLedger, LeaseLost, LedgerLocation, fingerprint
from lsiorm._jobs.units import ScanUnit
from lsiorm.testing import FaultInjector
from support.fakes import Clock

UNITS = [ScanUnit(n, 3) for n in range(3)]


@pytest.fixture
def ledgers(session: Session, table_name: str) -> Iterator[tuple[Any, Clock]]:
    session.create_table(ledger_table(table_name))
    clock = Clock(1_700_000_000.0)
    location = LedgerLocation(table_name, "PK", "SK")

    def worker() -> JobLedger:
        return JobLedger(session.ctx, location, lease_seconds=30.0, clock=clock)

    try:
        yield worker, clock
    finally:
        session.delete_table(ledger_table(table_name))


def test_an_expired_lease_is_taken_over_and_its_old_holder_stops(
    session: Session, ledgers: tuple[Any, Clock]
) -> None:
    worker, clock = ledgers
    a, b = worker(), worker()
    job, resumed = session.run(a.open({"kind": "test"}, UNITS, {}))
    assert not resumed
    held = session.run(a.claim(job.id, UNITS[0]))
    assert held is not None
    assert session.run(b.claim(job.id, UNITS[0])) is None  # leased to a
    clock.now += 20.0
    held.position, held.counts = {"PK": {"S": "x"}, "SK": {"S": "1"}}, {"scanned": 5}
    session.run(a.commit(job.id, held, items=5))  # renews the lease for 30 s from now
    clock.now += 20.0
    assert session.run(b.claim(job.id, UNITS[0])) is None  # renewed: still a's
    clock.now += 11.0
    taken = session.run(b.claim(job.id, UNITS[0]))  # expired: b takes it over
    assert taken is not None
    assert (taken.position, taken.counts, taken.runs) == (held.position, {"scanned": 5}, 2)
    held.counts = {"scanned": 99}
    with pytest.raises(LeaseLost):
        session.run(a.commit(job.id, held))
    with pytest.raises(LeaseLost):
        session.run(a.finish(job.id, held))
    taken.counts["scanned"] += 2
    assert not session.run(b.finish(job.id, taken))
    for unit in UNITS[1:]:
        claim = session.run(b.claim(job.id, unit))
        done = session.run(b.finish(job.id, claim))
    assert done
    record = session.run(b.job(job.id))
    assert record.state == "done"
    assert record.counts() == {"scanned": 7}  # a's lost page counted nowhere
    assert [u.runs for u in record.units] == [2, 1, 1]


def test_many_workers_racing_for_a_unit_give_it_to_one(
    session: Session, ledgers: tuple[Any, Clock]
) -> None:
    worker, _ = ledgers
    job, _ = session.run(worker().open({"kind": "race"}, UNITS, {}))
    start = threading.Barrier(8)
    won: list[Any] = []

    def race() -> None:
        start.wait()
        claim = session.run(worker().claim(job.id, UNITS[1]))
        if claim is not None:
            won.append(claim)

    threads = [threading.Thread(target=race) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(won) == 1


def test_workers_racing_to_take_an_expired_lease_over_give_it_to_one(
    session: Session, ledgers: tuple[Any, Clock]
) -> None:
    worker, clock = ledgers
    first = worker()
    job, _ = session.run(first.open({"kind": "takeover"}, UNITS, {}))
    held = session.run(first.claim(job.id, UNITS[2]))
    assert held is not None
    clock.now += 31.0  # the lease ran out: any worker may take the unit over, one does
    start = threading.Barrier(2)
    won: list[Any] = []

    def race() -> None:
        start.wait()
        claim = session.run(worker().claim(job.id, UNITS[2]))
        if claim is not None:
            won.append(claim)

    threads = [threading.Thread(target=race) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(won) == 1
    unit = session.run(first.unit_record(job.id, UNITS[2]))
    assert unit is not None
    assert (unit.owner, unit.runs) == (won[0].owner, 2)
    with pytest.raises(LeaseLost):
        session.run(first.commit(job.id, held))


def test_a_ledger_the_earlier_format_wrote_is_refused_with_what_to_do(
    session: Session, ledgers: tuple[Any, Clock], table_name: str
) -> None:
    worker, _ = ledgers
    declaration = {"kind": "backfill"}
    earlier = {  # the items of a running run, as lsiorm 0.2 wrote them (JSON in strings)
        f"run#{fingerprint(declaration)}": {"current": {"S": "backfill-0123456789ab"}},
        "job#backfill-0123456789ab": {
            "id": {"S": "backfill-0123456789ab"},
            "kind": {"S": "backfill"},
            "state": {"S": "running"},
            "declaration": {"S": '{"kind":"backfill"}'},
            "fingerprint": {"S": fingerprint(declaration)},
            "units": {"N": "1"},
            "done": {"N": "0"},
            "rate": {"S": "{}"},
        },
    }
    for sort, attributes in earlier.items():
        item = {"PK": {"S": "~lsiorm#jobs"}, "SK": {"S": sort}, **attributes}
        session.client.put_item(TableName=table_name, Item=item)
    for op in (
        worker().open(declaration, UNITS, {}),
        worker().job("backfill-0123456789ab"),
        worker().jobs(),
    ):
        with pytest.raises(ValidationError, match="earlier lsiorm") as caught:
            session.run(op)
        assert caught.value.rule == "ledger.old-format"


def test_processes_opening_a_job_at_once_join_one_run(
    session: Session, ledgers: tuple[Any, Clock]
) -> None:
    worker, _ = ledgers
    start = threading.Barrier(6)
    opened: list[tuple[str, bool]] = []

    def open_job() -> None:
        start.wait()
        record, resumed = session.run(worker().open({"kind": "together"}, UNITS, {}))
        opened.append((record.id, resumed))

    threads = [threading.Thread(target=open_job) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len({job for job, _ in opened}) == 1
    assert sorted(resumed for _, resumed in opened) == [False] + [True] * 5


def test_a_done_run_is_never_resumed_and_a_paused_one_is(
    session: Session, ledgers: tuple[Any, Clock]
) -> None:
    worker, clock = ledgers
    ledger = worker()
    first, _ = session.run(ledger.open({"kind": "again"}, UNITS[:1], {}))
    session.run(ledger.set_state(first.id, "paused"))
    resumed, was = session.run(ledger.open({"kind": "again"}, UNITS[:1], {}))
    assert (resumed.id, was) == (first.id, True)
    assert session.run(ledger.job(first.id)).state == "running"
    claim = session.run(ledger.claim(first.id, UNITS[0]))
    assert session.run(ledger.finish(first.id, claim))
    clock.now += 1.0  # runs are listed newest first, by when they were opened
    second, was = session.run(ledger.open({"kind": "again"}, UNITS[:1], {}))
    assert second.id != first.id
    assert not was
    assert [j.id for j in session.run(ledger.jobs())][:2] == [second.id, first.id]


def test_a_claim_whose_answer_was_lost_is_still_this_workers(
    session: Session, ledgers: tuple[Any, Clock]
) -> None:
    """The claim applied, its answer was lost and its resend met its own lease: it is ours
    (before, the unit looked held by another worker until the lease ran out)."""
    worker, _ = ledgers
    a, b = worker(), worker()
    job, _ = session.run(a.open({"kind": "test"}, UNITS, {}))
    with FaultInjector() as faults:
        faults.lose_answer("UpdateItem", times=1)
        held = session.run(a.claim(job.id, UNITS[0]))
        assert dict(faults.stats)["lost-answer"] == 1
    assert held is not None
    assert held.runs == 1
    assert session.run(b.claim(job.id, UNITS[0])) is None  # leased to a, not to nobody
    session.run(a.finish(job.id, held))
    assert session.run(a.job(job.id)).units[0].state == "done"


def test_progress_reaches_the_job_at_most_once_a_second_per_claim_and_all_of_it_at_the_end(
    session: Session, ledgers: tuple[Any, Clock]
) -> None:
    """Every page's items reach the job's progress counters, but one claim writes the job item
    at most once a second (it takes every worker's progress: a hot item otherwise), and what is
    left goes with the unit's end, finished or released."""
    worker, clock = ledgers
    ledger = worker()
    job, _ = session.run(ledger.open({"kind": "test"}, UNITS, {}))
    held = session.run(ledger.claim(job.id, UNITS[0]))
    assert held is not None
    with FaultInjector(session=session) as faults:
        for _ in range(5):  # five pages within one second: the first one is told at once
            session.run(ledger.commit(job.id, held, items=10, changed=1))
            clock.now += 0.1
        job_writes = [
            r
            for r in faults.requests
            if r.operation == "UpdateItem" and "job#" in str(r.params["Key"])
        ]
        assert len(job_writes) == 1
        assert session.run(ledger.job(job.id)).items == 10
        clock.now += 1.0
        session.run(ledger.commit(job.id, held, items=10, changed=1))
        assert session.run(ledger.job(job.id)).items == 60
        session.run(ledger.commit(job.id, held, items=7))
        assert session.run(ledger.job(job.id)).items == 60  # not yet told
        session.run(ledger.finish(job.id, held))
        record = session.run(ledger.job(job.id))
        assert (record.items, record.changed) == (67, 6)
        other = session.run(ledger.claim(job.id, UNITS[1]))
        assert other is not None
        session.run(ledger.commit(job.id, other, items=3))
        session.run(ledger.commit(job.id, other, items=4))
        session.run(ledger.release(job.id, other))
        assert session.run(ledger.job(job.id)).items == 74


@pytest.mark.parametrize("give_up", ["pause", "release"])
def test_a_unit_given_up_whose_answer_was_lost_is_counted_once(
    session: Session, ledgers: tuple[Any, Clock], give_up: str
) -> None:
    """The pause (or release) applied and its answer was lost; its resend's condition failed
    on the unit it had freed, which is the item that write makes: it is this claim's own, so
    the job's running count goes down and its progress is counted (not `LeaseLost`, and not
    one unit counted running for ever)."""
    worker, _ = ledgers
    ledger = worker()
    job, _ = session.run(ledger.open({"kind": "test"}, UNITS, {}))
    held = session.run(ledger.claim(job.id, UNITS[0]))
    other = session.run(ledger.claim(job.id, UNITS[1]))  # so that 1 running is not the floor
    assert held is not None
    assert other is not None

    def running() -> int:
        return int(session.run(ledger.control(job.id))["running"])

    assert running() == 2
    held.position, held.counts = {"PK": {"S": "x"}, "SK": {"S": "1"}}, {"scanned": 4}
    with FaultInjector() as faults:
        faults.lose_answer("UpdateItem", times=1)
        if give_up == "pause":
            session.run(ledger.pause(job.id, held, items=4))
        else:
            session.run(ledger.commit(job.id, held, items=4))
            session.run(ledger.release(job.id, held))
        assert dict(faults.stats)["lost-answer"] == 1
    record = session.run(ledger.job(job.id))
    assert (running(), record.items) == (1, 4)
    unit = record.units[0]
    assert (unit.state, unit.owner, dict(unit.counts)) == ("pending", None, {"scanned": 4})
    # Taken again, the unit is another claim's: a release of the old claim is not counted.
    again = session.run(ledger.claim(job.id, UNITS[0]))
    assert again is not None
    assert again.runs == held.runs + 1
    session.run(ledger.release(job.id, held))
    assert running() == 2
    with pytest.raises(LeaseLost):
        session.run(ledger.pause(job.id, held))
