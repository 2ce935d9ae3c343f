"""A random concurrent writer for the key jobs' tests, and the brute-force model of its writes.

`RandomWriter` is a session hook: before each of a job's requests (the ledger's left out) it
makes a few random writes of its own through another session, so that they land between the
job's read of an item and the job's write of it, where a lost write would hide. Its writes:

* ``set``: set a field the model declares (the job's condition must catch it);
* ``add``: add 1 to a number;
* ``remove``: remove an attribute;
* ``add-new``: set an attribute no model declares (only the check after the job's write can
  catch that one);
* ``delete`` and ``re-put``: delete the item, or put a deleted item back.

Every write is conditional on the item existing (a re-put on it not existing), tried at each
key the item may be stored under, and applied to the model only when DynamoDB applied it. After
the job, `RandomWriter.check` compares every stored item, attribute by attribute, with the
model: an item lost, resurrected, duplicated or stale fails it.
"""

from __future__ import annotations

import random
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from lsiorm import HookRequest, Session
from lsiorm._model.wire import item_from_wire
from lsiorm.errors import ConditionFailedError
from support.jobs import on_ledger

__all__ = ["OPERATIONS", "RandomWriter"]

OPERATIONS = ("set", "add", "remove", "add-new", "delete", "re-put")
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
        if operation == "re-put":
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
        self.applied["re-put"] += 1

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
        else:  # add-new
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

    # the check ---------------------------------------------------------------------------

    def check(self, stored: Iterable[Mapping[str, Any]], ident: Callable[[Any], int]) -> None:
        """Every live item of the model is stored exactly once, attribute by attribute as the
        model has it; no deleted item is stored."""
        assert self.errors == []
        assert sum(self.applied.values()) > 0  # the writer did write
        found: dict[int, list[dict[str, Any]]] = {}
        for item in stored:
            plain = self.plain(item)
            found.setdefault(ident(plain), []).append(plain)
        lost = [i for i, state in self.model.items() if state is not None and i not in found]
        resurrected = [i for i, state in self.model.items() if state is None and i in found]
        duplicated = [i for i, copies in found.items() if len(copies) > 1]
        stale = [
            (i, found[i][0], state)
            for i, state in self.model.items()
            if state is not None and i in found and found[i][0] != state
        ]
        assert (lost, resurrected, duplicated, stale) == ([], [], [], []), self.applied


def _key_text(item: Mapping[str, Any]) -> str:
    return repr((item.get("PK"), item.get("SK")))


def _extras(state: Mapping[str, Any]) -> list[str]:
    return [name for name in state if name.startswith("late")]
