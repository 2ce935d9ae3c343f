"""Helpers of the key-job tests: a write log that can kill a job, and reading a table back."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

from lsiorm import HookRequest, Session
from lsiorm._ops.ledger import NAMESPACE


class Killed(BaseException):
    """The job was killed (a BaseException: hooks swallow Exception, not this)."""


class WriteLog:
    """Counts each successful rewrite per stored sort key; kills the job past ``limit`` writes.

    The ledger's own writes are neither counted nor limited.

    Segments run in threads: the count and the limit are kept under a lock, and a write is
    let through only while fewer than ``limit`` have been let through.
    """

    def __init__(self, limit: int | None = None) -> None:
        self.limit = limit
        self.writes: Counter[str] = Counter()
        self.sent = 0
        self.lock = threading.Lock()

    def before(self, request: HookRequest) -> None:
        if request.operation not in ("UpdateItem", "TransactWriteItems") or on_ledger(request):
            return
        with self.lock:
            if self.limit is not None and self.sent >= self.limit:
                raise Killed
            self.sent += 1

    def after(self, request: HookRequest, response: dict[str, Any]) -> None:
        if on_ledger(request):
            return
        with self.lock:
            if request.operation == "UpdateItem":
                self.writes[request.params["Key"]["SK"]["S"]] += 1
            elif request.operation == "TransactWriteItems":
                # A move: its second action guards (or deletes) the original.
                original = next(iter(request.params["TransactItems"][1].values()))
                self.writes[original["Key"]["SK"]["S"]] += 1


def on_ledger(request: HookRequest) -> bool:
    """Whether a request reads or writes the jobs' ledger (its reserved partition)."""
    params = request.params
    keys = [params.get("Key")] + [
        next(iter(action.values())).get("Key") for action in params.get("TransactItems", ())
    ]
    ledger = {"S": NAMESPACE}
    if any(key is not None and key.get("PK") == ledger for key in keys):
        return True
    return ledger in (params.get("ExpressionAttributeValues") or {}).values() and (
        request.operation == "Query"
    )


def session_on(endpoint_url: str, *hooks: object) -> Session:
    """A Session on the engine with these hooks (a job's sessions differ only in their hooks)."""
    return Session(endpoint_url=endpoint_url, region_name="us-east-1", hooks=hooks)


def everything(session: Session, name: str, *, ledger: bool = False) -> list[dict[str, Any]]:
    """Every stored item of a table (wire form), read consistently.

    The key jobs keep their ledger in the table's reserved partition (``~lsiorm#jobs``); its
    items are left out unless ``ledger`` is true.
    """
    items: list[dict[str, Any]] = []
    params: dict[str, Any] = {"TableName": name, "ConsistentRead": True}
    while True:
        page = session.call("Scan", params)
        items += [i for i in page["Items"] if ledger or i.get("PK") != {"S": NAMESPACE}]
        if "LastEvaluatedKey" not in page:
            return items
        params["ExclusiveStartKey"] = page["LastEvaluatedKey"]
