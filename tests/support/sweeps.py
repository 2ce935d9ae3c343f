"""Every public method of a session, called once, to see that only lsiorm errors come out."""

from __future__ import annotations

import inspect
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from lsiorm import (
    AsyncSession,
    Entity,
    Get,
    LsiormError,
    Put,
    RetryPolicy,
    ScanUnit,
    Session,
    Table,
    query,
    scan,
)

#: Two quick attempts: a sweep meets many failures.
QUICK = RetryPolicy(max_attempts=2, max_delay=2.0, initial=0.001, maximum=0.01)


def declare() -> tuple[Table, type[Any]]:
    """A fresh table that is never created, and a document on it."""
    table = Table(f"missing_{uuid.uuid4().hex[:10]}", "pk", "sk")

    class Doc(Entity, table=table, keys={"pk": "D#{did}", "sk": "X"}):
        did: str
        hits: int = 0

    return table, Doc


def calls(table: Table, doc: type[Any]) -> dict[str, Callable[[Any], Any]]:
    """One call per public method that talks to DynamoDB; the order matters (create last)."""
    return {
        "call": lambda s: s.call(
            "GetItem", {"TableName": table.name, "Key": {"pk": {"S": "x"}, "sk": {"S": "y"}}}
        ),
        "check_table": lambda s: s.check_table(table),
        "apply_table": lambda s: s.apply_table(table, dry_run=True),
        "put": lambda s: s.put(doc(did="a")),
        "get": lambda s: s.get(doc, did="a"),
        "using": lambda s: s.using(region_name="eu-west-1").get(doc, did="a"),
        "update": lambda s: s.update(doc, did="a", set={"hits": 2}),
        "delete": lambda s: s.delete(doc, did="a"),
        "delete_result": lambda s: s.delete_result(doc, did="a"),
        "audit_collection": lambda s: s.audit_collection(table, "D#a"),
        "largest_collections": lambda s: s.largest_collections(table, 0.0),
        "audit_keys": lambda s: s.audit_keys(table),
        "adopt": lambda s: s.adopt(table),
        "backfill": lambda s: s.backfill(doc, dry_run=True),
        "relieve_collection": lambda s: s.relieve_collection(table, "D#a", dry_run=True),
        "migrate_table": lambda s: s.migrate_table(table, f"{table.name}-old"),
        "dual_writes": lambda s: s.dual_writes(table, f"{table.name}-old"),
        "jobs": lambda s: s.jobs(table),
        "job": lambda s: s.job(table, "no-such-run"),
        "cancel_job": lambda s: s.cancel_job(table, "no-such-run"),
        "run_unit": lambda s: s.run_unit(table, "no-such-run", ScanUnit(0, 1)),
        "batch_write": lambda s: s.batch_write([doc(did="b")]),
        "batch_get": lambda s: s.batch_get(doc, [{"did": "b"}]),
        "transact_write": lambda s: s.transact_write([Put(doc(did="c"))]),
        "transact_get": lambda s: s.transact_get([Get(doc, {"did": "c"})]),
        "all": lambda s: s.all(query(doc).where(did="a")),
        "first": lambda s: s.first(scan(doc)),
        "count": lambda s: s.count(query(doc).where(did="a")),
        "page": lambda s: s.page(query(doc).where(did="a")),
        "pages": lambda s: s.pages(scan(doc)),
        "iterate": lambda s: s.iterate(query(doc).where(did="a")),
        "delete_table": lambda s: s.delete_table(table),
        "create_table": lambda s: s.create_table(table),
    }


async def consume(value: Any) -> Any:
    """What a call gives, awaited or iterated to its end, sync or async alike."""
    if inspect.isawaitable(value):
        return await value
    if hasattr(value, "__aiter__"):
        return [v async for v in value]
    if hasattr(value, "__next__"):
        return list(value)
    return value


async def sweep(session: Any, table: Table, doc: type[Any]) -> dict[str, str]:
    """Call everything; return method -> outcome, failing on any non-lsiorm error."""
    seen: dict[str, str] = {}
    for name, do in calls(table, doc).items():
        try:
            await consume(do(session))
        except LsiormError as exc:
            seen[name] = type(exc).__name__
        except Exception as exc:  # the failure this test exists for
            pytest.fail(f"{name} raised the untyped {type(exc).__module__}.{exc!r}")
        else:
            seen[name] = "ok"
    return seen


def open_session(mode: str, url: str) -> Any:
    """A ``Session`` (mode ``"sync"``) or an ``AsyncSession`` on ``url``, retrying briefly."""
    kwargs: dict[str, Any] = {"endpoint_url": url, "region_name": "us-east-1", "retry": QUICK}
    return Session(**kwargs) if mode == "sync" else AsyncSession(**kwargs)


async def close(session: Any) -> None:
    """Close a session of either kind."""
    await consume(session.close())
