"""Concurrent writers for job tests, with a model of what the table must hold after the job.

Both kinds make the same writes (`OPERATIONS`): set a declared field, add to a number, remove
an attribute, set an attribute no model declares (only the check after a job's write can catch
that one), delete an item, re-create a deleted one. Each write that DynamoDB applied is
recorded in the model; after the job, every stored item must be the model's item: nothing a
writer wrote lost, nothing deleted brought back.

* `ConcurrentWriters`: writer threads beside a running job, each through its own session.
* `RandomWriter`: a session hook. Before each of a job's requests (the ledger's left out) it
  makes a few writes through another session, half of them to an item the request is about,
  so that they land between the job's read of an item and its write, where a lost write would
  hide. Its writes are conditional on the item existing (a re-create on it not existing), and
  `RandomWriter.check` compares the stored items with the model attribute by attribute: an
  item lost, resurrected, duplicated or stale fails it. One instant is allowed for, only for
  the items a test names: a move whose delete of the original lost its answer (the job's
  report counts them as ``unverified``) cannot know what a writer added to the original just
  before, so the copy of such an item may lack those attributes (and nothing else).
"""

from __future__ import annotations

import random
import threading
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any

from typing_extensions import Self

from lsiorm import HookRequest, Session
from lsiorm._model.wire import item_from_wire
from lsiorm.errors import ConditionFailedError, NotFoundError
from support.jobs import on_ledger

__all__ = ["OPERATIONS", "ConcurrentWriters", "RandomWriter", "WriterThreads"]

OPERATIONS = ("set", "add", "remove", "new-attribute", "delete", "re-create")


class WriterThreads:
    """``threads`` writer threads, each running ``_run(number)`` until `stop`; a block starts
    them and stops them. What a thread raises is kept in ``errors`` and raised by `stop`."""

    #: How long `stop` waits for each thread.
    join_timeout = 120.0

    def __init__(self, threads: int) -> None:
        self.threads = threads
        self._stop = threading.Event()
        self._workers: list[threading.Thread] = []
        self.errors: list[BaseException] = []

    def __enter__(self) -> Self:
        for number in range(self.threads):
            thread = threading.Thread(target=self._run, args=(number,), daemon=True)
            thread.start()
            self._workers.append(thread)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop the writers and wait for them; re-raise what one of them raised."""
        self._stop.set()
        for thread in self._workers:
            thread.join(timeout=self.join_timeout)
        if self.errors:
            raise self.errors[0]

    def _run(self, number: int) -> None:
        raise NotImplementedError


class ConcurrentWriters(WriterThreads):
    """``threads`` writers over ``items`` (n -> field values) of ``entity`` (the new release).

    ``model`` maps each n to its expected fields (``extra`` for the new attribute), or None
    once deleted. Each n is written by one thread only, so the model needs no ordering.
    """

    def __init__(
        self,
        endpoint_url: str,
        entity: type[Any],
        items: dict[int, dict[str, Any]],
        *,
        threads: int = 2,
        seed: int = 0,
        pause: float = 0.002,
    ) -> None:
        self.endpoint_url = endpoint_url
        self.entity = entity
        super().__init__(threads)
        self.model: dict[int, dict[str, Any] | None] = {n: dict(f) for n, f in items.items()}
        self.seed = seed
        self.pause = pause
        self.done: dict[str, int] = dict.fromkeys(OPERATIONS, 0)
        self.touched: set[int] = set()
        self._lock = threading.Lock()

    def _run(self, number: int) -> None:
        rng = random.Random(self.seed * 100 + number)
        mine = [n for n in sorted(self.model) if n % self.threads == number]
        try:
            with Session(endpoint_url=self.endpoint_url, region_name="us-east-1") as session:
                while not self._stop.wait(self.pause):
                    n = rng.choice(mine)
                    self._write(session, rng, n)
        except BaseException as exc:
            self.errors.append(exc)

    def _write(self, session: Session, rng: random.Random, n: int) -> None:
        fields = self.model[n]
        operation = "re-create" if fields is None else rng.choice(OPERATIONS[:-1])
        entity = self.entity
        key = {"p": n % 40, "n": n}
        try:
            if operation == "set":
                title = f"t{rng.randrange(1000)}"
                session.update(entity, key, set={"title": title})
                assert fields is not None
                fields["title"] = title
            elif operation == "add":
                session.update(entity, key, add={"hits": 1})
                assert fields is not None
                fields["hits"] += 1
            elif operation == "remove":
                note = None if fields and fields.get("note") else f"note{n}"
                session.update(entity, key, set={"note": note})
                assert fields is not None
                fields["note"] = note
            elif operation == "new-attribute":
                value = rng.randrange(10**6)
                session.call(
                    "UpdateItem",
                    {
                        "TableName": session.table_name(entity.__lsiorm__.table),
                        "Key": {"PK": {"S": f"P#{n % 40:03d}"}, "SK": {"S": f"I#{n:06d}"}},
                        "UpdateExpression": "SET extra = :x",
                        "ConditionExpression": "attribute_exists(PK)",
                        "ExpressionAttributeValues": {":x": {"N": str(value)}},
                    },
                )
                assert fields is not None
                fields["extra"] = value
            elif operation == "delete":
                session.delete(entity, key)
                self.model[n] = None
            else:
                fresh = {"p": n % 40, "n": n, "title": f"r{rng.randrange(1000)}", "hits": 0}
                session.put(entity(**fresh), create_only=True)
                self.model[n] = {**fresh, "note": None}
        except (ConditionFailedError, NotFoundError):
            return
        with self._lock:
            self.done[operation] += 1
            self.touched.add(n)


_JOB_REQUESTS = frozenset(
    {"GetItem", "Query", "Scan", "PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems"}
)


class RandomWriter:
    """See the module docstring.

    ``keys(i)`` gives the keys item ``i`` may be stored under (in the order to try them);
    ``fresh(i)`` the whole item to re-put; ``derived`` the attributes the job derives (left out
    of the comparison); ``field`` a declared field to set, ``number`` a number to add to.
    """

    def __init__(
        self,
        session: Session,
        table: str,
        rng: random.Random,
        items: Mapping[int, Mapping[str, Any]],
        *,
        keys: Callable[[int], Sequence[Mapping[str, Any]]],
        fresh: Callable[[int], Mapping[str, Any]],
        derived: Iterable[str],
        field: str,
        number: str,
        per_request: int = 2,
        operations: Sequence[str] = OPERATIONS,
    ) -> None:
        self.session = session
        self.table = table
        self.rng = rng
        self.keys = keys
        self.fresh = fresh
        self.derived = frozenset(derived)
        self.field = field
        self.number = number
        self.per_request = per_request
        self.operations = tuple(operations)
        self.model: dict[int, dict[str, Any] | None] = {
            i: self.plain(item) for i, item in items.items()
        }
        self.applied: Counter[str] = Counter()
        self.lock = threading.Lock()
        self.active = True
        self.new_names = 0
        self.errors: list[Exception] = []
        self.log: list[tuple[Any, ...]] = []  # the writes applied, in order
        self.by_key = {_key_text(key): i for i in items for key in keys(i)}

    def plain(self, item: Mapping[str, Any]) -> dict[str, Any]:
        """An item as the model holds it: Python values, without the derived attributes."""
        return {k: v for k, v in item_from_wire(dict(item)).items() if k not in self.derived}

    # the hook ----------------------------------------------------------------------------

    def before(self, request: HookRequest) -> None:
        if not self.active or request.operation not in _JOB_REQUESTS or on_ledger(request):
            return
        with self.lock:
            try:
                aimed = self.aimed_at(request.params)
                for _ in range(self.rng.randrange(self.per_request + 1)):
                    # Half the writes hit an item this request is about: the riskiest moment.
                    self.write(
                        self.rng.choice(aimed) if aimed and self.rng.random() < 0.5 else None
                    )
            except Exception as exc:  # a hook's errors are swallowed: keep it for `check`
                self.errors.append(exc)

    def item_at(self, key: Mapping[str, Any]) -> int | None:
        """The item stored under ``key`` (one of those `keys` gives), if any."""
        return self.by_key.get(_key_text(key))

    # the writes --------------------------------------------------------------------------

    def aimed_at(self, params: Mapping[str, Any]) -> list[int]:
        """The items a request is about (by the keys it names)."""
        keys = [params.get("Key")]
        for action in params.get("TransactItems", ()):
            inner = next(iter(action.values()))
            keys += [inner.get("Key"), inner.get("Item")]
        found = (self.by_key.get(_key_text(key)) for key in keys if key is not None)
        return [i for i in found if i is not None]

    def write(self, i: int | None = None) -> None:
        """One random write (to item ``i``, or any), applied to the model when DynamoDB
        applied it."""
        if i is None:
            i = self.rng.choice(sorted(self.model))
        operation = self.rng.choice(self.operations)
        state = self.model[i]
        if operation == "re-create":
            if state is None:
                self._put(i)
            return
        if state is None:
            return
        for key in self.keys(i):
            try:
                self._apply(operation, i, key)
            except ConditionFailedError:
                continue
            return

    def _put(self, i: int) -> None:
        item = dict(self.fresh(i))
        try:
            self.session.call(
                "PutItem",
                {
                    "TableName": self.table,
                    "Item": item,
                    "ConditionExpression": "attribute_not_exists(PK)",
                },
            )
        except ConditionFailedError:
            return
        self.model[i] = self.plain(item)
        self.applied["re-create"] += 1
        self.log.append(("re-create", i))

    def _apply(self, operation: str, i: int, key: Mapping[str, Any]) -> None:
        state = self.model[i]
        assert state is not None
        params: dict[str, Any] = {
            "TableName": self.table,
            "Key": dict(key),
            "ConditionExpression": "attribute_exists(PK)",
        }
        if operation == "delete":
            self.session.call("DeleteItem", params)
            self.model[i] = None
            self.applied[operation] += 1
            self.log.append((operation, i))
            return
        if operation == "set":
            name, value = self.field, f"v{self.rng.randrange(1000)}"
            params["UpdateExpression"] = "SET #a = :v"
            params["ExpressionAttributeValues"] = {":v": {"S": value}}
        elif operation == "add":
            name, value = self.number, int(state.get(self.number, 0)) + 1
            params["UpdateExpression"] = "ADD #a :v"
            params["ExpressionAttributeValues"] = {":v": {"N": "1"}}
        elif operation == "remove":
            name = self.rng.choice([self.field, self.number, *_extras(state)])
            params["UpdateExpression"] = "REMOVE #a"
        else:  # new-attribute
            self.new_names += 1
            name, value = f"late{self.new_names}", f"x{self.rng.randrange(1000)}"
            params["UpdateExpression"] = "SET #a = :v"
            params["ExpressionAttributeValues"] = {":v": {"S": value}}
        params["ExpressionAttributeNames"] = {"#a": name}
        self.session.call("UpdateItem", params)
        if operation == "remove":
            state.pop(name, None)
        else:
            state[name] = value
        self.applied[operation] += 1
        self.log.append((operation, i, name))

    # the check ---------------------------------------------------------------------------

    def check(
        self,
        stored: Iterable[Mapping[str, Any]],
        ident: Callable[[Any], int],
        *,
        unverified: Collection[int] = (),
    ) -> set[int]:
        """Every live item of the model is stored exactly once, attribute by attribute as the
        model has it; no deleted item is stored.

        ``unverified``: items whose move lost the answer of its delete of the original (the
        job's report counts them). Attributes a writer added to the original just before that
        delete are gone with it, and no request can tell; such an item's copy may lack
        attributes the model has (never the declared ``field``), and must have every other
        one as the model has it. Returns those of them that did lack some.
        """
        assert self.errors == []
        assert sum(self.applied.values()) > 0  # the writer did write
        found: dict[int, list[dict[str, Any]]] = {}
        for item in stored:
            plain = self.plain(item)
            found.setdefault(ident(plain), []).append(plain)
        lost = [i for i, state in self.model.items() if state is not None and i not in found]
        resurrected = [i for i, state in self.model.items() if state is None and i in found]
        duplicated = [i for i, copies in found.items() if len(copies) > 1]
        lacking = {
            i
            for i in unverified
            if (state := self.model[i]) is not None
            and i in found
            and _lacks_only_added(found[i][0], state, self.field)
        }
        stale = [
            (i, found[i][0], state)
            for i, state in self.model.items()
            if state is not None and i in found and found[i][0] != state and i not in lacking
        ]
        assert (lost, resurrected, duplicated, stale) == ([], [], [], []), (self.applied, self.log)
        return lacking


def _lacks_only_added(stored: Mapping[str, Any], model: Mapping[str, Any], field: str) -> bool:
    """Whether ``stored`` is ``model`` without some of its attributes (not ``field``)."""
    missing = set(model) - set(stored)
    return (
        bool(missing)
        and field not in missing
        and stored == {k: v for k, v in model.items() if k not in missing}
    )


def _key_text(item: Mapping[str, Any]) -> str:
    return repr((item.get("PK"), item.get("SK")))


def _extras(state: Mapping[str, Any]) -> list[str]:
    return [name for name in state if name.startswith("late")]
