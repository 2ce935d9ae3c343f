"""How a job's units are handed to an executor."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

from lsiorm._jobs.ledger import JobLedger, LedgerLocation
from lsiorm._jobs.options import JobOptions
from lsiorm._jobs.units import ScanUnit
from lsiorm._ops.pipeline import Context


class Recording:
    """An executor that only records what it is asked to run."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def submit(self, fn: Any, *args: Any) -> Future[Any]:
        self.calls.append((fn, *args))
        return Future()


def worker(*args: Any) -> str:
    return "done"


def test_each_submission_of_a_unit_is_a_call_of_its_own_with_its_claim_token() -> None:
    """An executor that runs equal calls once (Dask's pure tasks return the first result for
    the same function and arguments) still runs a unit sent again."""
    executor = Recording()
    location = LedgerLocation("t", "PK", "SK")
    options = JobOptions(executor=executor, worker=worker, lease_seconds=10.0)
    submit = options.submitter(JobLedger(Context(), location, lease_seconds=10.0))
    assert submit is not None
    unit = ScanUnit(2, 4)
    submit("job-1", unit)
    submit("job-1", unit)
    first, again = executor.calls
    assert first[:5] == again[:5] == (worker, location, 10.0, "job-1", unit)
    tokens = {first[5], again[5]}
    assert len(tokens) == 2  # the calls differ: each is run
    assert all(isinstance(t, str) and len(t) == 32 for t in tokens)  # claim tokens
