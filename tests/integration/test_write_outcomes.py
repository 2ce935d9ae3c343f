"""Every single write reports what really happened, also when its answer was lost.

A loop of puts, create-only puts, SET updates, ADD updates, versioned puts and updates, and
deletes runs through the fault proxy (tests/support/faults.py) at 30% faults of every kind,
including "applied, then the connection dropped" and "applied, then answered 500". After each
call the item is read straight from the engine (not through the proxy) and compared with what
the call reported. Zero disagreements are allowed, and no ADD may ever be applied twice.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest

from lsiorm import AsyncSession, Entity, RetryPolicy, Session, Table
from lsiorm.errors import (
    ConditionFailedError,
    InternalServerError,
    NotFoundError,
    OutcomeUnknownError,
    StaleVersionError,
    TransportError,
)
from support.faults import WRITE_KINDS, FaultProxy, session_losing_first_answer
from support.tables import created

PATIENT = RetryPolicy(max_attempts=25, max_delay=60.0, initial=0.005, maximum=0.1)
KEYS = ("a", "b", "c", "d")
UNKNOWN = (OutcomeUnknownError, TransportError, InternalServerError)


def declare() -> tuple[Table, type[Any], type[Any]]:
    table = Table(f"outcomes_{uuid.uuid4().hex[:10]}", "pk", "sk")

    class Doc(Entity, table=table, keys={"pk": "DOC#{did}", "sk": "D"}):
        did: str
        body: str = ""
        hits: int = 0
        note: str | None = None

    class VDoc(Entity, table=table, keys={"pk": "VDOC#{did}", "sk": "V"}, version="rev"):
        did: str
        body: str = ""
        rev: int = 0

    return table, Doc, VDoc


@pytest.fixture
def fresh(dynamodb_client: Any) -> Iterator[tuple[Table, type[Any], type[Any]]]:
    table, doc, vdoc = declare()
    with created(dynamodb_client, table):
        yield table, doc, vdoc


class Checker:
    """Runs one call, then compares its reported outcome with the engine."""

    def __init__(self, direct: Session, doc: type[Any], vdoc: type[Any]) -> None:
        self.direct = direct
        self.doc = doc
        self.vdoc = vdoc
        self.disagreements: list[str] = []
        self.outcomes: Counter[str] = Counter()

    def read(self, cls: type[Any], did: str) -> Any:
        return self.direct.get(cls, did=did, consistent=True)

    def bad(self, what: str) -> None:
        self.disagreements.append(what)

    async def step(self, rng: random.Random, do: Callable[..., Awaitable[Any]]) -> None:
        doc, vdoc = self.doc, self.vdoc
        did = rng.choice(KEYS)
        kind = rng.choice(
            ["put", "create", "set", "add", "add-tx", "vput", "vupdate", "delete", "vdelete"]
        )
        if kind == "add-tx" and not self.transactions:
            kind = "add"
        cls = vdoc if kind in ("vput", "vupdate", "vdelete") else doc
        before = self.read(cls, did)
        body = f"body-{rng.randrange(10**6)}"
        result: Any = None
        error: BaseException | None = None
        try:
            if kind == "put":
                result = await do("put", doc(did=did, body=body))
            elif kind == "create":
                result = await do("put", doc(did=did, body=body), create_only=True)
            elif kind == "set":
                result = await do("update", doc, did=did, set={"body": body, "note": None})
            elif kind == "add":
                result = await do("update", doc, did=did, add={"hits": 3})
            elif kind == "add-tx":
                result = await do(
                    "update", doc, did=did, add={"hits": 5}, idempotency="transaction"
                )
            elif kind == "vput":
                base = before if before is not None else vdoc(did=did)
                result = await do("put", base.model_copy(update={"body": body}))
            elif kind == "vupdate":
                if before is None:
                    kind = "vput"
                    result = await do("put", vdoc(did=did, body=body))
                else:
                    result = await do("update", before, set={"body": body})
            elif kind in ("delete", "vdelete"):
                target = before if (kind == "vdelete" and before is not None) else cls
                keys = {} if target is before else {"did": did}
                result = await do("delete_result", target, **keys)
        except Exception as exc:
            error = exc
        after = self.read(cls, did)
        name = type(error).__name__ if error is not None else "ok"
        self.outcomes[f"{kind}:{name}"] += 1
        self.judge(kind, before, after, result, error, body)

    def judge(
        self,
        kind: str,
        before: Any,
        after: Any,
        result: Any,
        error: BaseException | None,
        body: str,
    ) -> None:
        where = f"{kind}: before={before!r} after={after!r} result={result!r} error={error!r}"
        if kind in ("add", "add-tx"):
            step = 3 if kind == "add" else 5
            start = before.hits if before is not None else 0
            now = after.hits if after is not None else 0
            if now not in (start, start + step):
                self.bad(f"ADD applied {(now - start) / step} times; {where}")
                return
        if isinstance(error, UNKNOWN):
            # Unknown is a true report; the engine holds either outcome (checked above for ADD).
            return
        if kind == "put":
            if error is not None or after != result or after.body != body:
                self.bad(where)
        elif kind == "create":
            if error is None:
                if before is not None or after != result or after.body != body:
                    self.bad(where)
            elif isinstance(error, ConditionFailedError):
                if before is None or after != before:
                    self.bad(where)
            else:
                self.bad(where)
        elif kind in ("set", "add", "add-tx"):
            # An update of a missing item is refused (NotFoundError) and creates nothing.
            if isinstance(error, NotFoundError):
                if before is not None or after is not None:
                    self.bad(where)
            elif error is not None or before is None or after != result:
                self.bad(where)
            else:
                applied = after.body == body if kind == "set" else after.hits == before.hits + step
                if not applied:
                    self.bad(where)
        elif kind in ("vput", "vupdate"):
            # Nobody else writes: a stale version is always a wrong report.
            expected_rev = (before.rev if before is not None else 0) + 1
            wrong = isinstance(error, StaleVersionError) or error is not None
            if wrong or after != result or after.rev != expected_rev or after.body != body:
                self.bad(where)
        elif kind in ("delete", "vdelete"):
            if error is not None or after is not None:
                self.bad(where)
            elif result.deleted is True:
                if before is None or result.item != before:
                    self.bad(where)
            elif result.deleted is False and before is not None:
                self.bad(where)
            # deleted=None: unknown, and the item is gone (checked above).

    transactions = True


async def run_loop(
    mode: str, url: str, direct: Session, doc: type[Any], vdoc: type[Any], calls: int, tx: bool
) -> Checker:
    checker = Checker(direct, doc, vdoc)
    checker.transactions = tx
    rng = random.Random(f"{mode}-outcomes")
    if mode == "sync":
        with Session(endpoint_url=url, region_name="us-east-1", retry=PATIENT) as session:

            async def do_sync(method: str, *args: Any, **kwargs: Any) -> Any:
                return getattr(session, method)(*args, **kwargs)

            for _ in range(calls):
                await checker.step(rng, do_sync)
    else:
        async with AsyncSession(endpoint_url=url, region_name="us-east-1", retry=PATIENT) as s:

            async def do_async(method: str, *args: Any, **kwargs: Any) -> Any:
                return await asyncio.wait_for(getattr(s, method)(*args, **kwargs), 60)

            for _ in range(calls):
                await checker.step(rng, do_async)
    return checker


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_single_writes_report_the_truth_at_30_percent_faults(
    direct: Session,
    mode: str,
    backend: str,
    endpoint_url: str,
    fresh: tuple[Table, type[Any], type[Any]],
) -> None:
    _table, doc, vdoc = fresh
    # moto ignores ClientRequestToken: a re-sent transaction would apply twice there, so the
    # transactional ADD runs on DynamoDB Local only.
    tx = backend != "moto"
    calls = 150 if backend == "moto" else 300
    with (
        Session(endpoint_url=endpoint_url, region_name="us-east-1") as direct,
        FaultProxy(endpoint_url, rate=0.3, kinds=WRITE_KINDS, seed=11) as proxy,
    ):
        checker = await run_loop(mode, proxy.endpoint_url, direct, doc, vdoc, calls, tx)
        stats = dict(proxy.stats)
    assert checker.disagreements == [], "\n".join(checker.disagreements[:10])
    # The faults really happened, every kind, and lost answers hit single writes.
    assert all(stats.get(kind, 0) > 0 for kind in WRITE_KINDS), stats
    assert 0.2 < stats["faults"] / stats["requests"] < 0.4, stats
    # Lost answers were recovered as successes, not only reported as unknown.
    assert checker.outcomes["create:ok"] > 0
    assert checker.outcomes["vupdate:ok"] > 0
    assert sum(v for k, v in checker.outcomes.items() if k.endswith(":ok")) > calls // 2


def test_create_only_put_whose_answer_was_lost_succeeds(
    direct: Session, endpoint_url: str, fresh: tuple[Table, type[Any], type[Any]]
) -> None:
    _table, doc, _vdoc = fresh
    with session_losing_first_answer(endpoint_url) as (session, faults, hook):
        stored = session.put(doc(did="b", body="new"), create_only=True)
    assert isinstance(hook.errors[0], TransportError)
    assert faults.stats["lost-answer"] == 1
    assert direct.get(doc, did="b", consistent=True) == stored


def test_create_only_put_of_someone_elses_item_still_fails(
    direct: Session, endpoint_url: str, fresh: tuple[Table, type[Any], type[Any]]
) -> None:
    _table, doc, _vdoc = fresh
    direct.put(doc(did="b", body="theirs"))
    with (
        session_losing_first_answer(endpoint_url) as (session, _faults, _hook),
        pytest.raises(ConditionFailedError),
    ):
        session.put(doc(did="b", body="mine"), create_only=True)


def test_versioned_update_whose_answer_was_lost_succeeds(
    direct: Session, endpoint_url: str, fresh: tuple[Table, type[Any], type[Any]]
) -> None:
    _table, _doc, vdoc = fresh
    stored = direct.put(vdoc(did="v", body="old"))
    with session_losing_first_answer(endpoint_url) as (session, _faults, _hook):
        updated = session.update(stored, set={"body": "new"})
    assert updated.rev == stored.rev + 1
    assert updated.body == "new"
    assert direct.get(vdoc, did="v", consistent=True) == updated


def test_add_whose_answer_was_lost_is_never_applied_twice(
    direct: Session, endpoint_url: str, fresh: tuple[Table, type[Any], type[Any]]
) -> None:
    _table, doc, _vdoc = fresh
    direct.put(doc(did="a"))
    with (
        session_losing_first_answer(endpoint_url) as (session, faults, _hook),
        pytest.raises(OutcomeUnknownError) as caught,
    ):
        session.update(doc, did="a", add={"hits": 1})
    assert caught.value.request["operation"] == "UpdateItem"
    assert faults.stats["forwarded"] == 1  # never re-sent
    assert direct.get(doc, did="a", consistent=True).hits == 1


def test_transactional_add_whose_answer_was_lost_applies_once(
    direct: Session, backend: str, endpoint_url: str, fresh: tuple[Table, type[Any], type[Any]]
) -> None:
    if backend == "moto":
        pytest.skip("moto ignores ClientRequestToken, so a re-sent transaction applies twice")
    _table, doc, _vdoc = fresh
    direct.put(doc(did="a"))
    with session_losing_first_answer(endpoint_url) as (session, _faults, hook):
        result = session.update(doc, did="a", add={"hits": 1}, idempotency="transaction")
    assert result.hits == 1
    assert isinstance(hook.errors[0], TransportError)
    assert direct.get(doc, did="a", consistent=True).hits == 1


def test_delete_whose_answer_was_lost_does_not_claim_nothing_was_deleted(
    direct: Session, endpoint_url: str, fresh: tuple[Table, type[Any], type[Any]]
) -> None:
    _table, doc, _vdoc = fresh
    direct.put(doc(did="a"))
    direct.put(doc(did="b"))
    with session_losing_first_answer(endpoint_url) as (session, faults, hook):
        result = session.delete_result(doc, did="a")
        assert result.deleted is None
        assert result.item is None
        faults.lose_answer()
        hook.errors = []
        with pytest.raises(OutcomeUnknownError):
            session.delete(doc, did="b")
        # Without a lost answer: the deleted item, and a clear "nothing deleted".
        assert session.delete_result(doc, did="zz").deleted is False
    direct.put(doc(did="c", body="x"))
    gone = direct.delete_result(doc, did="c")
    assert gone.deleted is True
    assert gone.item == doc(did="c", body="x")
    assert direct.delete(doc, did="c") is None
