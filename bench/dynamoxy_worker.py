"""dynamoxy's side of the benchmark, run by a Python 3.12+ interpreter (``python -m``).

dynamoxy needs Python 3.12 or later, and the benchmark runs on the project's interpreter, so
its workloads run here, in a process of their own that imports only the standard library and
dynamoxy. The benchmark sends one JSON command per line on standard input and reads one JSON
answer per line on standard output. A timed command runs its workload ``repeat`` times and
answers with this process's wall time and CPU time per run, so every library's time is taken
with the same clocks around the same calls, and the parent interleaves these samples with the
other libraries' rounds.

The order is declared as a dynamoxy model with the same stored attributes as the other
libraries' (keys from templates, the type attribute, seven fields), in its own table.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from datetime import datetime
from decimal import Decimal
from typing import Any

import dynamoxy
from dynamoxy import Attr, field, partition_key, sort_key


class DynamoxyOrder(dynamoxy.Model, table="bench_dynamoxy", entity="Order", type_attribute="_type"):
    """The order, as the other libraries store it."""

    pk: Attr[str] = partition_key(template="CUST#{customer}")
    sk: Attr[str] = sort_key(template="ORDER#{order_no:08d}")
    lsi1: Attr[str] = field(template="{status}#{created}")
    customer: Attr[str]
    order_no: Attr[int]
    status: Attr[str]
    total: Attr[Decimal]
    created: Attr[datetime]
    tags: Attr[list[str]] = field(default_factory=list)
    note: Attr[str] = field(default="")


def _order(row: dict[str, Any]) -> DynamoxyOrder:
    return DynamoxyOrder(
        customer=row["customer"],
        order_no=row["order_no"],
        status=row["status"],
        total=Decimal(row["total"]),
        created=datetime.fromisoformat(row["created"]),
        tags=list(row["tags"]),
        note=row["note"],
    )


class Worker:
    """One dynamoxy client and the orders the benchmark handed over, by name."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.client: Any = None
        self.orders: Any = None
        self.rows: dict[str, list[DynamoxyOrder]] = {}

    def open(self, url: str, concurrency: int) -> dict[str, Any]:
        self.client = dynamoxy.Client(
            endpoint_url=url,
            region="us-east-1",
            credentials=dynamoxy.Credentials("testing", "testing"),
            batch_concurrency=concurrency,
        )
        self.loop.run_until_complete(self.client.__aenter__())
        self.orders = self.client.repository(DynamoxyOrder)
        return {"version": dynamoxy.__version__, "python": sys.version.split()[0]}

    def close(self) -> dict[str, Any]:
        self.loop.run_until_complete(self.client.__aexit__(None, None, None))
        self.loop.close()
        return {}

    # -- the workloads, one run each ----------------------------------------------------------

    async def put(self, name: str) -> Any:
        return await self.orders.put(self.rows[name][0])

    async def get(self, name: str) -> Any:
        first = self.rows[name][0]
        return await self.orders.get(customer=first.customer, order_no=first.order_no)

    async def query(self, name: str) -> Any:
        return await self.orders.query(customer=self.rows[name][0].customer).all()

    async def batch(self, name: str) -> Any:
        return await self.orders.batch_put(self.rows[name])

    # -- commands -----------------------------------------------------------------------------

    def handle(self, command: dict[str, Any]) -> dict[str, Any]:
        kind = command["cmd"]
        if kind == "open":
            return self.open(command["url"], command["concurrency"])
        if kind == "close":
            return self.close()
        if kind == "rows":
            self.rows[command["name"]] = [_order(row) for row in command["rows"]]
            return {"count": len(self.rows[command["name"]])}
        workload = getattr(self, command["workload"])
        name = command["name"]
        if kind == "check":
            found = self.loop.run_until_complete(workload(name))
            return {"summary": _summary(found)}
        repeat = command["repeat"]
        run = self.loop.run_until_complete
        wall, cpu = time.perf_counter(), time.process_time()
        for _ in range(repeat):
            run(workload(name))
        return {
            "wall": (time.perf_counter() - wall) / repeat,
            "cpu": (time.process_time() - cpu) / repeat,
        }


def _summary(found: Any) -> Any:
    """What a check compares: the order numbers and notes read back (None after a write)."""
    if found is None:
        return None
    items = found if isinstance(found, list) else [found]
    return [[item.order_no, item.note] for item in items]


def main() -> None:
    """Answer commands until standard input ends."""
    worker = Worker()
    for line in sys.stdin:
        try:
            answer = worker.handle(json.loads(line))
        except Exception as error:  # the parent reports it and stops the benchmark
            answer = {"error": f"{type(error).__name__}: {error}"}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
