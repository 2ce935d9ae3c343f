"""Dual writes of a table migration: a session's route that writes the source table and the
destination in one transaction per write, and reads the table it is told to.

`open_dual_writes` checks, before any write, that the migration's ledger says the copy is done
and that the source's primary key is the destination's, records in the ledger that dual writes
began, and returns a `DualWrites`: the route a session's context takes (`Context.route`). Every
request of that session passes through it (`send_once`):

* a request that does not name the declared table is sent as given;
* a read (and any other request that is not a write) goes to the table ``reads`` names: the
  source (its declared name, resolved as the session resolves names), or the destination;
* a write goes to the source, mirrored as `lsiorm._migration.dual_plan` plans it. A write that
  cannot be mirrored exactly (the plan says why; or the transaction is cancelled for another reason
  than the caller's condition after `TRIES` tries) is sent to the source alone, exactly as a
  session without dual writes sends it, and counted in `DualWrites.fallbacks`; the catch-up
  carries it to the destination.

A caller's condition that fails raises what it raises without dual writes: the transaction's
reason for the source action becomes the ConditionFailedError of the original request (with
the stored item when the request asked for it), so `put`, `update` and `delete` type it as
they always do (a stale version, a missing item). The route sits below the retry loop: a
throttled or dropped attempt is retried as one attempt of the original request, read included.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from lsiorm._jobs.options import JobOptions
from lsiorm._jobs.resumable import key_of
from lsiorm._migration.dual_plan import (
    WRITES,
    DualPlan,
    Mirrored,
    is_ledger,
    needs_read,
    plan_batch,
    plan_transaction,
    plan_write,
)
from lsiorm._migration.phases import open_migration
from lsiorm._migration.run import job_ledger
from lsiorm._model.schema import Table, renamed_table
from lsiorm._model.wire import WireItem, same_item
from lsiorm._ops.naming import from_wire, to_wire
from lsiorm._ops.pipeline import Context, RoutedRequest, send_once
from lsiorm._ops.steps import Operation, Sleep
from lsiorm._ops.unchanged import watched_attributes
from lsiorm._requests.reads import consistent_get
from lsiorm._requests.update_plan import Action
from lsiorm.errors import (
    ConditionFailedError,
    DynamoError,
    ServiceValidationError,
    TransactionCanceledError,
    ValidationError,
)

__all__ = ["TRIES", "DualFallback", "DualWrites", "open_dual_writes"]

#: Tries of one mirrored write (read and transaction) before it falls back.
TRIES = 4
#: The reasons a cancelled transaction is tried again for (it changed nothing).
TRANSIENT = frozenset({"TransactionConflict", "ProvisionedThroughputExceeded", "ThrottlingError"})


@dataclass(frozen=True)
class DualFallback:
    """A write sent to the source alone: its operation and why it was not mirrored (the
    catch-up carries it to the destination)."""

    operation: str
    reason: str


class DualWrites:
    """The route of a session with dual writes (see the module docstring), and what it did:
    ``mirrored`` writes, and ``fallbacks`` by reason. ``reads``: ``"source"`` or
    ``"destination"``, the table that reads go to."""

    def __init__(
        self,
        table: Table,
        source: str,
        reads: str,
        on_fallback: Callable[[DualFallback], object] | None = None,
    ) -> None:
        self.table = table
        self.source = source
        self.reads = reads
        self.on_fallback = on_fallback
        self.plan = DualPlan(table, source, watched_attributes(table, table.entities.values()))
        self.source_table = renamed_table(table, source)
        #: Writes mirrored to the destination in one transaction with the source.
        self.mirrored = 0
        #: Writes sent to the source alone, by reason.
        self.fallbacks: dict[str, int] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return (
            f"DualWrites({self.table.name!r} from {self.source!r}, reads={self.reads!r}: "
            f"{self.mirrored} mirrored, fallbacks {self.fallbacks})"
        )

    # -- the route -------------------------------------------------------------------------------

    def __call__(self, sent: RoutedRequest) -> Operation[dict[str, Any]]:
        if not self._names_table(sent.params) and self._names_table(sent.params, self.source):
            # A raw request (`call`) naming the source table writes the migrated data as well
            # as one naming the declared table: it is routed the same way.
            sent = replace(sent, params=self._declared(sent.params))
        operation, params = sent.operation, sent.params
        if not self._names_table(params):
            return (yield from sent.as_given())
        single = operation in ("PutItem", "DeleteItem", "UpdateItem")
        ledger = single and is_ledger(params, self.table)
        if operation not in WRITES or ledger:
            if self.reads == "destination" or ledger:
                return (yield from sent.as_given())
            return (yield from self._to_source(sent, params))
        if operation == "TransactWriteItems":
            return (yield from self._transaction(sent))
        if operation == "BatchWriteItem":
            return (yield from self._batch(sent))
        return (yield from self._single(sent))

    def _declared(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """``params`` with the source's name replaced by the declared table's."""
        declared, _ = to_wire(params, lambda n: self.table.name if n == self.source else n)
        return declared

    def _names_table(self, params: Mapping[str, Any], name: str | None = None) -> bool:
        """Whether ``params`` name the declared table (or the table ``name``)."""
        name = self.table.name if name is None else name
        if params.get("TableName") == name or name in (params.get("RequestItems") or {}):
            return True
        for action in params.get("TransactItems") or ():
            if any(body.get("TableName") == name for body in action.values()):
                return True
        return False

    def _tables(self, tables: tuple[Table, ...], *, both: bool = False) -> tuple[Table, ...]:
        """The declared tables of a request sent to the source (and the destination)."""
        mine = tuple(self.source_table if t.name == self.table.name else t for t in tables)
        return (*mine, self.table) if both else mine

    def _to_source(self, sent: RoutedRequest, params: dict[str, Any]) -> Operation[dict[str, Any]]:
        """Send ``params`` (the request's, or a variant) to the source table in place of the
        declared one."""

        def rename(name: str) -> str:
            return self.source if name == self.table.name else name

        wire, names = to_wire(params, rename)
        response = yield from send_once(
            sent.ctx,
            sent.operation,
            wire,
            self._tables(sent.tables),
            on_error=sent.on_error,
            built=sent.built,
        )
        return from_wire(sent.operation, response, names)

    def _fall_back(
        self, sent: RoutedRequest, reason: str, params: dict[str, Any] | None = None
    ) -> Operation[dict[str, Any]]:
        """Send the request to the source alone, and say so."""
        with self._lock:
            self.fallbacks[reason] = self.fallbacks.get(reason, 0) + 1
        if self.on_fallback is not None:
            self.on_fallback(DualFallback(sent.operation, reason))
        return (yield from self._to_source(sent, sent.params if params is None else params))

    def _done(self, answer: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self.mirrored += 1
        return answer

    def _send(self, sent: RoutedRequest, mirrored: Mirrored) -> Operation[dict[str, Any]]:
        """Send a dual transaction (once: the retry loop around the original request is the
        one loop). A cancellation is not shown to ``on_error``: what it means for the original
        request is decided here."""
        on_error = sent.on_error

        def seen(exc: DynamoError) -> None:
            if on_error is not None and not isinstance(exc, TransactionCanceledError):
                on_error(exc)

        tables = self._tables(sent.tables, both=True)
        return (
            yield from send_once(
                sent.ctx, "TransactWriteItems", mirrored.request, tables, on_error=seen
            )
        )

    def _mirror(
        self,
        sent: RoutedRequest,
        plan: Callable[[], Operation[Mirrored | str]],
        cancelled: Callable[[TransactionCanceledError, Mirrored], str],
    ) -> Operation[dict[str, Any] | str]:
        """Mirror a write in up to `TRIES` transactions; return its answer, or why it falls back.

        ``plan`` makes the dual transaction afresh for each try (or says why there is none);
        ``cancelled`` says what a cancellation means: a reason (``source-changed`` and
        ``conflict`` are tried again), or it raises the caller's own failure.
        """
        reason = "no-tries"
        for attempt in range(TRIES):
            mirrored = yield from plan()
            if isinstance(mirrored, str):
                return mirrored
            try:
                response = yield from self._send(sent, mirrored)
            except TransactionCanceledError as exc:
                reason = cancelled(exc, mirrored)
                if reason in ("source-changed", "conflict"):
                    yield Sleep(0.01 * 2**attempt)
                    continue
                return reason
            except (ValidationError, ServiceValidationError) as exc:
                return _refused(exc)
            return self._done(response if mirrored.answer is None else mirrored.answer)
        return reason

    # -- one item --------------------------------------------------------------------------------

    def _single(self, sent: RoutedRequest) -> Operation[dict[str, Any]]:
        operation, params = sent.operation, sent.params
        read = needs_read(operation, params)
        effect = sent.effect
        actions = tuple(a for a in effect if isinstance(a, Action)) if effect else None
        old: WireItem | None = None

        def plan() -> Operation[Mirrored | str]:
            nonlocal old
            old = (yield from self._read(sent.ctx, params)) if read else None
            return plan_write(self.plan, operation, params, old, actions)

        def cancelled(exc: TransactionCanceledError, mirrored: Mirrored) -> str:
            outcome = _cancelled(exc, mirrored, old)
            if outcome == "condition":
                error = _condition_failed(exc, operation, params)
                if sent.on_error is not None:
                    sent.on_error(error)
                raise error from exc
            return outcome

        answer = yield from self._mirror(sent, plan, cancelled)
        if isinstance(answer, str):
            return (yield from self._fall_back(sent, answer))
        return answer

    def _read(self, ctx: Context, params: Mapping[str, Any]) -> Operation[WireItem | None]:
        key = dict(params["Key"]) if "Key" in params else key_of(self.table, params["Item"])
        request = consistent_get(self.source, key)
        response = yield from send_once(ctx, "GetItem", request, (self.source_table,))
        found: WireItem | None = response.get("Item")
        return found

    # -- transactions and batches ----------------------------------------------------------------

    def _transaction(self, sent: RoutedRequest) -> Operation[dict[str, Any]]:
        def plan() -> Operation[Mirrored | str]:
            return plan_transaction(self.plan, sent.params)
            yield  # a generator, as the single write's plan (it reads first)

        def cancelled(exc: TransactionCanceledError, mirrored: Mirrored) -> str:
            mine = exc.reasons[: mirrored.actions]
            if any(r.code not in ("None", "") for r in mine):
                # The caller's own actions failed: theirs to see, as without dual writes.
                raise TransactionCanceledError(str(exc), reasons=mine, **_fields(exc)) from exc
            failed = {r.code for r in exc.failed}
            return "conflict" if failed <= TRANSIENT else _reason(failed)

        answer = yield from self._mirror(sent, plan, cancelled)
        if not isinstance(answer, str):
            return answer
        alone = dict(sent.params)
        if "ClientRequestToken" in alone:
            # Another request than the dual one: a token of its own, the same on every attempt.
            mark = f"alone:{alone['ClientRequestToken']}".encode()
            alone["ClientRequestToken"] = hashlib.sha256(mark).hexdigest()[:32]
        return (yield from self._fall_back(sent, answer, alone))

    def _batch(self, sent: RoutedRequest) -> Operation[dict[str, Any]]:
        mirrored = plan_batch(self.plan, sent.params)
        if isinstance(mirrored, str):
            return (yield from self._fall_back(sent, mirrored))
        try:
            yield from self._send(sent, mirrored)
        except TransactionCanceledError as exc:
            failed = {r.code for r in exc.failed}
            if failed <= TRANSIENT:
                # Nothing was written: the batch's own loop sends it all again.
                return {"UnprocessedItems": dict(sent.params["RequestItems"])}
            return (yield from self._fall_back(sent, _reason(failed)))
        except (ValidationError, ServiceValidationError) as exc:
            return (yield from self._fall_back(sent, _refused(exc)))
        assert mirrored.answer is not None
        return self._done(mirrored.answer)


def _cancelled(exc: TransactionCanceledError, mirrored: Mirrored, old: WireItem | None) -> str:
    """What a cancelled single-item transaction means: ``condition`` (the caller's condition
    is false), ``source-changed`` (the guard failed: read again), ``conflict`` (transient:
    try again), or another reason to fall back."""
    reasons = exc.reasons
    source = reasons[0] if reasons else None
    if source is not None and source.code == "ConditionalCheckFailed":
        there = source.item if isinstance(source.item, Mapping) else None
        if mirrored.guarded and not same_item(there or {}, old or {}):
            return "source-changed"
        return "condition"
    failed = {r.code for r in exc.failed}
    return "conflict" if failed and failed <= TRANSIENT else _reason(failed)


def _reason(failed: set[str]) -> str:
    return "cancelled " + ",".join(sorted(failed)) if failed else "cancelled"


def _refused(exc: Exception) -> str:
    """The fallback reason of a transaction refused before or when it was sent (too large,
    say): the request alone may pass, and if not, it fails as it would have."""
    rule = getattr(exc, "rule", None)
    return f"refused {rule}" if rule else "refused"


def _fields(exc: DynamoError) -> dict[str, Any]:
    return {
        "code": exc.code,
        "operation": exc.operation,
        "table": exc.table,
        "key": exc.key,
        "response": exc.response,
    }


def _condition_failed(
    exc: TransactionCanceledError, operation: str, params: Mapping[str, Any]
) -> ConditionFailedError:
    """The failure the original request gives when its condition is false: with the stored
    item when it asked for it (``ReturnValuesOnConditionCheckFailure``)."""
    response: dict[str, Any] = {
        "Error": {
            "Code": "ConditionalCheckFailedException",
            "Message": "The conditional request failed",
        },
    }
    item = exc.reasons[0].item if exc.reasons else None
    if isinstance(item, Mapping) and params.get("ReturnValuesOnConditionCheckFailure") == "ALL_OLD":
        response["Item"] = dict(item)
    key = params.get("Key")
    return ConditionFailedError(
        "The conditional request failed",
        code="ConditionalCheckFailedException",
        operation=operation,
        table=exc.table,
        key=dict(key) if isinstance(key, Mapping) else None,
        response=response,
    )


# -- opening -------------------------------------------------------------------------------------


def open_dual_writes(
    ctx: Context,
    table: Table,
    source: str,
    options: JobOptions,
    *,
    reads: str,
    on_fallback: Callable[[DualFallback], object] | None = None,
    clock: Callable[[], float] = time.time,
) -> Operation[DualWrites]:
    """Check that dual writes can begin (before any write), record in the ledger that they
    did, and return the route (see the module docstring)."""
    if reads not in ("source", "destination"):
        raise ValidationError("dual.reads", f"reads= is 'source' or 'destination', not {reads!r}.")
    try:
        m, _ = yield from open_migration(
            ctx, table, source, options, segments=1, page_size=None, progress=None, create=False
        )
    except ValidationError as exc:
        if exc.rule != "migrate.unknown":
            raise
        raise ValidationError(
            "dual.no-migration",
            f"No migration of {source!r} to {ctx.live_name(table)!r} is recorded: dual writes "
            "begin after its copy is done (run migrate_table first).",
            table=ctx.live_name(table),
        ) from exc
    phase = m.state.phase
    if phase != "catch-up":
        why = {
            "copy": "its copy is not done yet; run migrate_table until it is",
            "switched": "it is switched already: write the new table",
            "abandoned": "it was abandoned",
        }.get(phase, f"it is in phase {phase!r}")
        raise ValidationError(
            f"dual.{'copy-not-done' if phase == 'copy' else phase}",
            f"Dual writes cannot begin for the migration of {source!r}: {why}.",
            table=ctx.live_name(table),
        )
    _check_keys(m.source, table)
    if m.state.copy_job is not None:
        record = yield from job_ledger(m).job(m.state.copy_job)
        moved = record.counts().get("key_moved", 0)
        if moved:
            raise ValidationError(
                "dual.key-format",
                f"The copy derived another primary key for {moved} items of {source!r} (a new "
                "key format): the same write cannot address both tables, so dual writes do not "
                "apply. Switch with a short pause (finish=True).",
                table=ctx.live_name(table),
            )
    yield from m.store.save_dual(m.state.id, since=clock(), reads=reads)
    return DualWrites(table, source, reads, on_fallback)


def _check_keys(source: Table, table: Table) -> None:
    """Refuse a source whose primary key is not the destination's."""

    def shape(t: Table) -> tuple[Any, ...]:
        sort = (t.sort_key.name, t.sort_key.type) if t.sort_key else None
        return (t.partition_key.name, t.partition_key.type, sort)

    if shape(source) != shape(table):
        raise ValidationError(
            "dual.key-schema",
            f"The primary key of {source.name!r} {shape(source)} is not the one of the new "
            f"table {shape(table)}: a write cannot address both, so dual writes do not apply. "
            "Switch with a short pause (finish=True).",
            table=source.name,
        )
