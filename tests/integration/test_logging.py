"""lsiorm's logs: one line per request (DEBUG), per retry and per job step (INFO), and never a
credential, a signature or an item's contents, at any level, on either request lane."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from lsiorm import ConditionCheck, Entity, Put, RetryPolicy, Session, Table, cond, query
from lsiorm.errors import ConditionFailedError, TransactionCanceledError
from lsiorm.testing import FaultInjector

QUICK = RetryPolicy(max_attempts=10, max_delay=30.0, initial=0.001, maximum=0.01)
LANES = [pytest.param(True, id="lean"), pytest.param(False, id="botocore")]

ACCESS_KEY = "AKIALOGCHECK00000001"
SECRET_KEY = "secret-log-check-0123456789abcdefghijkl"
TOKEN = "token-log-check-0123456789"
#: Marks every value stored: none of them may show up in a log line.
MARK = "zq7content"


class Capture(logging.Handler):
    """Every record of every logger, at every level, as the text a handler would write."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []
        self.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def text(self, record: logging.LogRecord) -> str:
        extras = {k: v for k, v in vars(record).items() if k not in _PLAIN}
        return f"{self.format(record)} {extras!r}"

    def of(self, prefix: str) -> list[logging.LogRecord]:
        return [r for r in self.records if r.name == prefix or r.name.startswith(prefix + ".")]


_PLAIN = set(vars(logging.LogRecord("n", 0, "p", 0, "m", None, None))) | {"message", "asctime"}


@pytest.fixture
def capture() -> Iterator[Capture]:
    handler = Capture()
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


def declare() -> tuple[Table, type[Any]]:
    table = Table(f"logs_{uuid.uuid4().hex[:10]}", "pk", "sk")

    class Secret(Entity, table=table, keys={"pk": "P#" + MARK + "{group}", "sk": "S#{n:04d}"}):
        group: str
        n: int
        body: str = ""
        blob: bytes = b""

    return table, Secret


def _scenario(session: Session, secret: type[Any], capture: Capture) -> list[logging.LogRecord]:
    """Every lean-lane operation, each failing once first; then a transaction, cancelled.

    Returns what was logged until the transaction (which botocore's path always sends).
    """
    items = [secret(group=f"{MARK}g", n=n, body=f"{MARK}-body-{n}") for n in range(30)]
    with FaultInjector(session=session) as faults:
        faults.throttle("PutItem", times=1)
        faults.lose_answer("PutItem", times=1)
        faults.server_error("BatchWriteItem", times=1)
        faults.partial("BatchWriteItem", times=1)
        faults.throttle("Query", times=1)
        faults.drop("UpdateItem", times=1)
        session.put(items[0], create_only=True)
        with pytest.raises(ConditionFailedError):
            session.put(secret(group=f"{MARK}g", n=0, body="other"), create_only=True)
        session.batch_write(puts=items[1:])
        assert len(session.all(query(secret).where(group=f"{MARK}g"))) == 30
        session.update(secret, group=f"{MARK}g", n=1, set={"body": f"{MARK}-changed"})
        assert faults.count(fault="throttle") == 2
        lean_operations = list(capture.records)
        check = ConditionCheck(items[2], condition=cond("body") == "nope")
        with pytest.raises(TransactionCanceledError):
            session.transact_write([check, Put(secret(group=f"{MARK}g", n=99))])
    return lean_operations


@pytest.mark.parametrize("lean", LANES)
def test_logs_name_requests_retries_and_job_steps_but_no_secret_or_content(
    endpoint_url: str, capture: Capture, lean: bool
) -> None:
    table, secret = declare()
    with Session(
        endpoint_url=endpoint_url,
        region_name="us-east-1",
        retry=QUICK,
        lean=lean,
        aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY,
        aws_session_token=TOKEN,
    ) as session:
        session.create_table(table)
        try:
            capture.records.clear()
            data_plane = _scenario(session, secret, capture)
            lane = session.driver.inner.lane
            assert (lane is not None and lane.sent > 0) is lean
            # A key job: it reads the table's description (through botocore) and scans it.
            audit = session.audit_keys(secret, segments=2, page_size=10)
            assert audit.scanned == 30
        finally:
            session.delete_table(table, wait=False)

    ours = capture.of("lsiorm")
    for record in ours:
        text = capture.text(record)
        for secret_text in (ACCESS_KEY, SECRET_KEY, TOKEN, "Signature=", "Authorization"):
            assert secret_text not in text, text
        assert MARK not in text, text
    if lean:  # no logger sees the credentials or signature of a request on the lean lane:
        # botocore's path, which logs them at DEBUG, is skipped (the operations the lane does
        # not send, transactions and tables, still take it)
        for record in data_plane:
            text = capture.text(record)
            for secret_text in (SECRET_KEY, TOKEN, "Signature="):
                assert secret_text not in text, text

    requests = capture.of("lsiorm.requests")
    assert requests
    assert all(r.levelno == logging.DEBUG for r in requests)
    assert any(
        "PutItem" in r.getMessage() and "ThrottledError" not in r.getMessage() for r in requests
    )
    retries = capture.of("lsiorm.retry")
    assert retries
    assert all(r.levelno == logging.INFO for r in retries)
    reasons = " ".join(r.getMessage() for r in retries)
    for reason in ("ProvisionedThroughputExceededException", "InternalServerError", "unprocessed"):
        assert reason in reasons, reasons
    steps = capture.of("lsiorm.jobs")
    assert len(steps) >= 3  # 30 items in pages of 10, in two segments
    assert all(r.levelno == logging.INFO for r in steps)
    assert all(f"job {audit.job}" in r.getMessage() for r in steps)
