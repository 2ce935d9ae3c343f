"""Concurrent writers for job tests: random sets, adds, removes, new attributes, deletes and
re-creates of an app's items while a job runs, with a model of what the table must hold after.

Each writer thread applies random operations through its own session (straight to the engine)
and records in the model the effect of each that succeeded. After the job, every item of the
table must be the model's item: nothing a writer wrote lost, nothing deleted brought back.
"""

from __future__ import annotations

import random
import threading
from typing import Any

from lsiorm import Session
from lsiorm.errors import ConditionFailedError, NotFoundError

__all__ = ["ConcurrentWriters"]

OPERATIONS = ("set", "add", "remove", "new-attribute", "delete", "re-create")


class ConcurrentWriters:
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
        self.model: dict[int, dict[str, Any] | None] = {n: dict(f) for n, f in items.items()}
        self.threads = threads
        self.seed = seed
        self.pause = pause
        self.done: dict[str, int] = dict.fromkeys(OPERATIONS, 0)
        self.touched: set[int] = set()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._workers: list[threading.Thread] = []
        self.errors: list[BaseException] = []

    def __enter__(self) -> ConcurrentWriters:
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
            thread.join(timeout=120)
        if self.errors:
            raise self.errors[0]

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
