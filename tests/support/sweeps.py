"""Every public method of a session, called once, to see that only lsiorm errors come out."""

from __future__ import annotations

import inspect
import uuid
from collections.abc import Callable
from functools import partial
from typing import Any

import pytest
from pydantic import BaseModel, Field

from lsiorm import (
    AsyncSession,
    ConditionCheck,
    Delete,
    Entity,
    Get,
    LsiormError,
    Put,
    RetryPolicy,
    ScanUnit,
    Session,
    Table,
    Update,
    ValidationError,
    query,
    scan,
    where,
)

#: Two quick attempts: a sweep meets many failures.
QUICK = RetryPolicy(max_attempts=2, max_delay=2.0, initial=0.001, maximum=0.01)


class Inner(BaseModel):
    """The deepest level of a document's nested text."""

    word: str | None = None


class Card(BaseModel):
    """A nested model of a document: text at each depth, in a list, a map and a set."""

    label: str | None = None
    inner: Inner | None = None
    words: list[str] = []
    named: dict[str, str] = {}
    tags: set[str] = set()


def declare() -> tuple[Table, type[Any]]:
    """A fresh table that is never created, and a document on it."""
    table = Table(f"missing_{uuid.uuid4().hex[:10]}", "pk", "sk")

    class Doc(Entity, table=table, keys={"pk": "D#{did}", "sk": "X"}):
        did: str
        hits: int = 0
        note: str | None = None
        card: Card | None = None
        cards: list[Card] = Field(default_factory=list)
        labels: set[str] = Field(default_factory=set)

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
        "collect_orphans": lambda s: s.collect_orphans(table, dry_run=True),
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


#: A lone surrogate: text UTF-8 cannot encode.
BAD = "x\udfff"


def misuse(doc: type[Any]) -> dict[str, tuple[str, Callable[[Any], Any]]]:
    """Calls given what they do not take (the class for an entity, a dict for either, a key's
    text for its fields): name -> (the rule each is refused with, the call)."""
    entity, data = "entity.class-not-instance", "entity.expected"
    text = "key.not-fields"
    return {
        "put(class)": (entity, lambda s: s.put(doc)),
        "put(dict)": (data, lambda s: s.put({"did": "a"})),
        "get(class, text)": (text, lambda s: s.get(doc, "42")),
        "get(dict)": (data, lambda s: s.get({"did": "a"})),
        "update(class, text)": (text, lambda s: s.update(doc, "42", set={"hits": 1})),
        "update(dict)": (data, lambda s: s.update({"did": "a"}, set={"hits": 1})),
        "delete(class, text)": (text, lambda s: s.delete(doc, "42")),
        "delete(dict)": (data, lambda s: s.delete({"did": "a"})),
        "delete_result(class, text)": (text, lambda s: s.delete_result(doc, "42")),
        "batch_write(class)": (entity, lambda s: s.batch_write([doc])),
        "batch_write(dict)": (data, lambda s: s.batch_write([{"did": "a"}])),
        "batch_write(delete text)": (text, lambda s: s.batch_write([], deletes=[(doc, "42")])),
        "batch_get(text)": (text, lambda s: s.batch_get(doc, ["42"])),
        "transact_write(Put(class))": (entity, lambda s: s.transact_write([Put(doc)])),
        "transact_write(Put(dict))": (data, lambda s: s.transact_write([Put({"did": "a"})])),
        "transact_write(Update text)": (
            text,
            lambda s: s.transact_write([Update(doc, "42", set={"hits": 1})]),
        ),
        "transact_write(Delete text)": (text, lambda s: s.transact_write([Delete(doc, "42")])),
        "transact_write(ConditionCheck dict)": (
            data,
            lambda s: s.transact_write([ConditionCheck({"did": "a"}, where(hits=1))]),
        ),
        "transact_get(Get text)": (text, lambda s: s.transact_get([Get(doc, "42")])),
        "transact_get(Get dict)": (data, lambda s: s.transact_get([Get({"did": "a"})])),
    }


def surrogates(doc: type[Any]) -> dict[str, tuple[str, Callable[[Any], Any]]]:
    """A lone surrogate in an attribute at every depth, through every write path:
    name -> (the path the refusal names, the call); each is refused as
    ``item.invalid-unicode``."""
    card = Card  # the nested model of `declare`'s document

    def made(**fields: Any) -> Any:
        return doc(did="a", **fields)

    depths: dict[str, tuple[str, Any]] = {
        "top": ("Doc.note", made(note=BAD)),
        "nested": ("Doc.card.label", made(card=card(label=BAD))),
        "deeper": ("Doc.card.inner.word", made(card=card(inner=Inner(word=BAD)))),
        "list": ("Doc.card.words[1]", made(card=card(words=["ok", BAD]))),
        "map value": ("Doc.card.named.k", made(card=card(named={"k": BAD}))),
        "map key": (f"Doc.card.named[{BAD!r}]", made(card=card(named={BAD: "v"}))),
        "set": ("Doc.labels", made(labels={"ok", BAD})),
        "list of models": ("Doc.cards[0].inner.word", made(cards=[card(inner=Inner(word=BAD))])),
    }
    out: dict[str, tuple[str, Callable[[Any], Any]]] = {}
    for depth, (path, entity) in depths.items():
        out[f"put {depth}"] = (path, partial(_call, "put", entity))
        out[f"batch_write {depth}"] = (path, partial(_call, "batch_write", [entity]))
        out[f"transact_write Put {depth}"] = (path, partial(_call, "transact_write", [Put(entity)]))
    nested = card(inner=Inner(word=BAD))
    changes: dict[str, tuple[str, dict[str, Any]]] = {
        "set top": ("Doc.note", {"set": {"note": BAD}}),
        "set path": ("Doc.card.label", {"set": {"card.label": BAD}}),
        "set deep path": ("Doc.card.inner.word", {"set": {"card.inner.word": BAD}}),
        "set model": ("Doc.card.inner.word", {"set": {"card": nested}}),
        "set map key": (
            f"Path {f'card.named.{BAD}'!r} into Doc",
            {"set": {f"card.named.{BAD}": "v"}},
        ),
        "append": ("Doc.cards[0].inner.word", {"append": {"cards": [nested]}}),
        "prepend": ("Doc.card.words[0]", {"prepend": {"card.words": [BAD]}}),
        "add to a set": ("Doc.labels", {"add": {"labels": {BAD}}}),
        "if_not_exists": ("Doc.card.label", {"if_not_exists": {"card.label": BAD}}),
    }
    for name, (path, spec) in changes.items():
        out[f"update {name}"] = (path, partial(_update, doc, spec))
        out[f"transact_write Update {name}"] = (path, partial(_transact_update, doc, spec))
    condition = where(note=BAD)
    out["put condition"] = ("Doc.note", lambda s: s.put(made(), condition=condition))
    out["update condition"] = (
        "Doc.note",
        lambda s: s.update(doc, did="a", set={"hits": 1}, condition=condition),
    )
    out["delete condition"] = ("Doc.note", lambda s: s.delete(doc, did="a", condition=condition))
    out["transact_write ConditionCheck"] = (
        "Doc.note",
        lambda s: s.transact_write([ConditionCheck(doc, condition, key={"did": "a"})]),
    )
    return out


def _call(method: str, argument: Any, session: Any) -> Any:
    return getattr(session, method)(argument)


def _update(doc: type[Any], spec: dict[str, Any], session: Any) -> Any:
    return session.update(doc, did="a", **spec)


def _transact_update(doc: type[Any], spec: dict[str, Any], session: Any) -> Any:
    return session.transact_write([Update(doc, {"did": "a"}, **spec)])


class Sent:
    """A session hook that counts the requests the session sends."""

    def __init__(self) -> None:
        self.operations: list[str] = []

    def before(self, request: Any) -> None:
        self.operations.append(request.operation)


async def refusals(
    session: Any, calls: dict[str, tuple[str, Callable[[Any], Any]]]
) -> dict[str, ValidationError]:
    """Make each call; each must raise ValidationError before the session sends anything.

    Returns call name -> the error, for the caller to check its rule and words; any other
    outcome (no error, another error, a request sent) fails the test.
    """
    sent = Sent()
    session.add_hook(sent)
    seen: dict[str, ValidationError] = {}
    wrong: list[str] = []
    for name, (_, do) in calls.items():
        try:
            await consume(do(session))
        except ValidationError as exc:
            seen[name] = exc
        except Exception as exc:
            wrong.append(f"{name} raised {type(exc).__module__}.{exc!r}")
        else:
            wrong.append(f"{name} was not refused")
        if sent.operations:
            wrong.append(f"{name} sent {sent.operations} before its refusal")
            sent.operations.clear()
    if wrong:
        pytest.fail(
            f"{len(wrong)} of {len(calls)} calls were not refused as they should be:\n"
            + "\n".join(wrong)
        )
    return seen


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
