"""A table migration in progress: what its phases share, the runs it keeps in the ledger, and
its catch-up from the stream.

`Migration` holds the context, both tables, the state and the options of one call;
`run_declaration` names each job run of the migration in the ledger (the copy, and each
verification's two runs); `worker_info` is what a worker elsewhere needs to run a unit of them
(kept in the state, so that it does not change the runs' fingerprints); `catch_up` and `drain`
apply the stream's records to the destination (the replay rule is in
`lsiorm._migration.stream_replay`), committing each shard's position after each page and the lag
after each pass.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lsiorm._jobs.engine import digest
from lsiorm._jobs.ledger import JobLedger, fingerprint
from lsiorm._jobs.options import JobOptions
from lsiorm._jobs.resumable import JobProgress, key_of
from lsiorm._migration.plan import MigrationState, MigrationStore
from lsiorm._migration.stream_replay import (
    ShardPage,
    StreamRecord,
    describe_shards,
    read_shard,
    replay_of,
    replay_request,
    shard_order,
)
from lsiorm._migration.table_copy import derive_item
from lsiorm._model.schema import KeyAttribute, Table
from lsiorm._model.wire import WireItem
from lsiorm._ops.pipeline import Context, call
from lsiorm._ops.steps import Gather, Operation
from lsiorm._ops.unchanged import watched_attributes
from lsiorm.errors import ConditionFailedError, TransactionCanceledError, ValidationError

__all__ = [
    "Migration",
    "Pass",
    "catch_up",
    "delete_prefixed",
    "delete_runs",
    "drain",
    "job_ledger",
    "run_declaration",
    "worker_info",
    "worker_source",
]


@dataclass
class Migration:
    """One migration in progress: its context, tables, state and where the state is kept."""

    ctx: Context
    table: Table
    source: Table
    store: MigrationStore
    state: MigrationState
    options: JobOptions
    segments: int
    page_size: int | None
    progress: Callable[[JobProgress], object] | None
    clock: Callable[[], float] = time.time
    #: The most catch-up passes of one drain: a few while writers run, more to finish.
    passes: int = 3

    @property
    def key_names(self) -> tuple[str, ...]:
        table = self.table
        return (table.partition_key.name, *([table.sort_key.name] if table.sort_key else []))


def job_ledger(m: Migration) -> JobLedger:
    """The ledger of the migration's job runs, at the state's location."""
    store = m.store
    return JobLedger(
        store.ctx,
        store.location,
        lease_seconds=m.options.lease_seconds,
        clock=m.options.ledger_clock,
    )


def run_declaration(m: Migration, kind: str, epoch: int | None = None) -> dict[str, Any]:
    """The declaration of one of the migration's job runs: ``migrate-copy``, or a
    verification's ``migrate-verify`` (the source's items) and ``migrate-extra`` (the
    destination's), whose ``epoch`` tells one verification from the next."""
    return {
        **m.state.declaration,
        "kind": kind,
        "migration": m.state.id,
        **({} if epoch is None else {"epoch": epoch}),
    }


def worker_info(m: Migration) -> dict[str, Any]:
    """What a worker elsewhere needs to run a unit of the migration: the source table (declared
    name and key schema), the destination's entity classes by import path, the page size."""
    source = m.source
    keys = [[source.partition_key.name, source.partition_key.type]]
    if source.sort_key is not None:
        keys.append([source.sort_key.name, source.sort_key.type])
    return {
        "source": source.name,
        "keys": keys,
        "entities": sorted(f"{c.__module__}:{c.__qualname__}" for c in m.table.entities.values()),
        "page_size": m.page_size,
    }


def worker_source(info: Mapping[str, Any]) -> Table:
    """The source table as `worker_info` describes it."""
    keys = [KeyAttribute(name, kind) for name, kind in info["keys"]]
    return Table(info["source"], keys[0], keys[1] if len(keys) > 1 else None)


def delete_runs(
    m: Migration, jobs: Sequence[str], declarations: Sequence[Mapping[str, Any]]
) -> Operation[None]:
    """Delete job runs of the migration from its ledger: each run's item and units, and the
    pointer of each declaration to its current run."""
    prefixes = [p for job in jobs for p in (f"job#{job}", f"unit#{job}#")]
    prefixes += [f"run#{fingerprint(d)}" for d in declarations]
    yield from delete_prefixed(m, prefixes)


def delete_prefixed(m: Migration, prefixes: Sequence[str]) -> Operation[None]:
    """Delete the ledger items of the migration's location whose sort keys begin with one of
    ``prefixes``."""
    location = m.store.location
    for prefix in prefixes:
        params: dict[str, Any] = {
            "TableName": location.table,
            "KeyConditionExpression": "#p = :p AND begins_with(#s, :s)",
            "ExpressionAttributeNames": {"#p": location.partition_key, "#s": location.sort_key},
            "ExpressionAttributeValues": {":p": {"S": location.namespace}, ":s": {"S": prefix}},
        }
        while True:
            response = yield from call(m.store.ctx, "Query", dict(params))
            for item in response.get("Items") or ():
                key = {n: item[n] for n in (location.partition_key, location.sort_key)}
                request = {"TableName": location.table, "Key": key}
                yield from call(m.store.ctx, "DeleteItem", request)
            last = response.get("LastEvaluatedKey")
            if not last:
                break
            params["ExclusiveStartKey"] = last


# -- catch-up -----------------------------------------------------------------------------------


@dataclass
class Pass:
    """One catch-up pass: records applied and skipped, the oldest record's time, and the
    source keys the pass touched (by the digest of their derived destination keys)."""

    applied: int = 0
    skipped: int = 0
    oldest: float | None = None
    touched: dict[str, WireItem] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def records(self) -> int:
        return self.applied + self.skipped


def catch_up(m: Migration) -> Operation[Pass]:
    """One pass over the stream: each shard, parents first, from its last applied record to
    its newest (a closed shard to its end); the lag is what this pass found."""
    done = Pass()
    started = m.clock()
    _, shards = yield from describe_shards(m.ctx, m.state.stream_arn)
    for shard in shards:
        m.state.shards.setdefault(shard.id, {"parent": shard.parent, "seq": None, "done": False})
    watched = watched_attributes(m.table, m.table.entities.values())
    listed = {shard.id for shard in shards}
    for shard in shard_order(shards):
        entry = m.state.shards[shard.id]
        # A parent the stream no longer lists is gone (trimmed): nothing more to read there.
        parent = m.state.shards.get(shard.parent or "") if shard.parent in listed else None
        if entry["done"] or (parent is not None and not parent["done"]):
            continue

        def on_page(page: ShardPage, entry: dict[str, Any] = entry) -> Operation[bool]:
            # Each item's records in order; different items' at once.
            groups: dict[str, list[StreamRecord]] = {}
            for record in page.records:
                groups.setdefault(digest(record.keys), []).append(record)
            ops = tuple(_apply_in_order(m, group, watched, done) for group in groups.values())
            if ops:
                yield Gather(ops, limit=m.options.concurrency, threads=True)
            if page.records:
                entry["seq"] = page.records[-1].sequence
                first = page.records[0].created
                if done.oldest is None and first is not None:
                    done.oldest = first
            if page.records:  # the page's sequence number, committed after its changes
                yield from m.store.save(m.state)
                _report_lag(m, done)
            # A pass ends at the records written since it began: with writers faster than
            # the catch-up, it would never end otherwise. The next pass reads on.
            last = page.records[-1].created if page.records else None
            return last is None or last < started

        finished = yield from read_shard(
            m.ctx, m.state.stream_arn, shard.id, entry["seq"], on_page, closed=shard.closed
        )
        if finished:
            entry["done"] = True
    m.state.lag = [done.records, 0.0 if done.oldest is None else max(0.0, m.clock() - done.oldest)]
    m.state.caught_up_at = m.clock()
    yield from m.store.save(m.state)
    _report_lag(m, done)
    return done


def _report_lag(m: Migration, done: Pass) -> None:
    if m.progress is None:
        return
    lag = 0.0 if done.oldest is None else max(0.0, m.clock() - done.oldest)
    m.progress(
        JobProgress(
            done.records,
            done.applied,
            0.0,
            None,
            0,
            0,
            m.state.id,
            events_behind=done.records,
            seconds_behind=lag,
        )
    )


def _apply_in_order(
    m: Migration, records: list[StreamRecord], watched: frozenset[str], done: Pass
) -> Operation[None]:
    """Apply one item's records of a page, in order."""
    for record in records:
        applied = yield from _apply(m, record.old, record.new, record.keys, watched, done)
        with done.lock:
            done.applied += applied
            done.skipped += not applied
            if applied:
                m.state.applied += 1
            else:
                m.state.skipped += 1


def _apply(
    m: Migration,
    old: WireItem | None,
    new: WireItem | None,
    keys: WireItem,
    watched: frozenset[str],
    done: Pass,
) -> Operation[bool]:
    """Apply one record's change to the destination; return whether its condition held."""
    derived_old = derive_item(m.table, old).item if old is not None else None
    derived_new = derive_item(m.table, new).item if new is not None else None
    with done.lock:
        for derived in (derived_old, derived_new):
            if derived is not None:
                done.touched[digest(key_of(m.table, derived))] = dict(keys)
    replay = replay_of(derived_old, derived_new, m.key_names)
    if replay is None:
        return False
    try:
        operation, params = replay_request(replay, m.table.name, watched | set(derived_new or ()))
    except ValidationError:  # an item too large for the condition: verify reports it
        with done.lock:
            m.state.unapplied += 1
        return False
    try:
        yield from call(m.ctx, operation, params, (m.table,))
    except (ConditionFailedError, TransactionCanceledError):
        return False
    return True


def drain(m: Migration) -> Operation[Pass]:
    """Catch up until a pass finds nothing new (zero lag), or for ``m.passes`` passes (with
    writers running, a pass always finds something); return what every pass touched."""
    total = Pass()
    for _ in range(m.passes):
        one = yield from catch_up(m)
        total.applied += one.applied
        total.skipped += one.skipped
        total.touched.update(one.touched)
        if one.records == 0:
            break
    return total
