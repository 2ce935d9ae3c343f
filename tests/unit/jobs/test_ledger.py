"""The ledger in this process: a unit is held by one claim at a time, and done once."""

from __future__ import annotations

from typing import Any

import pytest

from lsiorm._jobs.ledger import JobRecord, LeaseLost, fingerprint
from lsiorm._jobs.memory_ledger import MemoryLedger
from lsiorm._jobs.units import ScanUnit
from lsiorm._ops.steps import Done, advance


def run(op: Any) -> Any:
    step = advance(op)
    assert isinstance(step, Done), step  # the memory ledger sends nothing
    return step.value


def test_a_unit_is_claimed_once_committed_and_finished() -> None:
    ledger = MemoryLedger()
    units = [ScanUnit(0, 2), ScanUnit(1, 2)]
    job, resumed = run(ledger.open({"kind": "t"}, units, {}))
    assert not resumed
    claim = run(ledger.claim(job.id, units[0]))
    assert claim is not None
    assert run(ledger.claim(job.id, units[0])) is None  # held
    claim.position, claim.counts = {"PK": {"S": "a"}}, {"scanned": 3}
    run(ledger.commit(job.id, claim, items=3, changed=1))
    assert not run(ledger.finish(job.id, claim))
    other = run(ledger.claim(job.id, units[1]))
    assert run(ledger.finish(job.id, other))  # the last unit: the run is done
    record = run(ledger.job(job.id))
    assert record.state == "done"
    assert (record.units_done, record.units_total, record.items) == (2, 2, 3)
    assert record.counts() == {"scanned": 3}
    assert run(ledger.claim(job.id, units[0])) is None  # done


def test_a_released_unit_resumes_where_its_last_commit_left_it() -> None:
    ledger = MemoryLedger()
    unit = ScanUnit()
    job, _ = run(ledger.open({"kind": "t"}, [unit], {}))
    claim = run(ledger.claim(job.id, unit))
    claim.position, claim.counts = 7, {"scanned": 7}
    run(ledger.commit(job.id, claim))
    claim.position = 9  # never committed
    run(ledger.release(job.id, claim))
    with pytest.raises(LeaseLost):
        run(ledger.commit(job.id, claim))
    again = run(ledger.claim(job.id, unit))
    assert (again.position, again.counts, again.runs) == (7, {"scanned": 7}, 2)


def test_a_fingerprint_is_the_declaration_in_any_key_order() -> None:
    assert fingerprint({"a": 1, "b": [1, 2]}) == fingerprint({"b": [1, 2], "a": 1})
    assert fingerprint({"a": 1}) != fingerprint({"a": 2})


def test_a_running_job_shows_its_rate_and_the_time_left_by_units_done() -> None:
    running = JobRecord(
        "backfill-1", "backfill", "running", {}, "f", 100.0, 160.0, 8, 2, items=600, changed=3
    )
    assert running.items_per_second == 10.0
    assert running.eta == 180.0  # 2 of 8 units in 60 s: 6 more take 180 s
    assert "10 items/s, ETA 180 s" in str(running)
    done = JobRecord("backfill-1", "backfill", "done", {}, "f", 100.0, 160.0, 8, 8, items=2400)
    assert done.eta is None
    assert "ETA" not in str(done)
    assert "600 items, 3 rewritten" in str(running)  # what a backfill counts, by name


@pytest.mark.parametrize(
    ("kind", "words"),
    [
        ("audit", "5 stale"),
        ("relief", "5 moved"),
        ("migrate-copy", "5 copied"),
        ("migrate-verify", "5 missing or different when read"),
        ("migrate-extra", "5 extra when read"),
    ],
)
def test_a_run_says_what_its_count_counts(kind: str, words: str) -> None:
    record = JobRecord("r-1", kind, "done", {}, "f", 100.0, 160.0, 4, 4, items=50, changed=5)
    assert f"50 items, {words}" in str(record)
    assert "changed" not in str(record)


def test_a_run_before_its_first_unit_has_no_eta() -> None:
    starting = JobRecord("backfill-2", "backfill", "running", {}, "f", 100.0, 101.0, 8, 0)
    assert starting.eta is None
