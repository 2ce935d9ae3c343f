"""Cold start: from interpreter start to the first completed GetItem, in fresh interpreters.

Each variant is a small program run by a new interpreter: it imports its library, declares
what it reads (a model, or nothing for the raw client), builds its client and reads one order
that the single-call workload wrote. The program prints the system's monotonic clock once the
item is decoded; the time counted runs from just before the interpreter is started to that
reading, so interpreter start-up, every import, the client's construction and the request are
in it, and interpreter shutdown is not.

The programs of lsiorm's sync session and of pydynox also mark where their time goes (`PARTS`):
each ``_mark(...)`` reads the same clock, so a run splits its own total into interpreter
start-up, imports, the model's declaration, the session and the request, and `reason` says
what each part cost in this run.
"""

from __future__ import annotations

import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from .timing import WALL, Variant
from .workloads import Group

#: The order every program reads (written by the single-call workload).
CUSTOMER, ORDER_NO = "s00000", 0

_LSIORM_SYNC = """
from pydantic import Field
from lsiorm import Entity, KeyAttribute, LocalIndex, Projection, Session, Table
_mark("imports: pydantic and lsiorm")
from bench.models import Order
_mark("declaring the model")
session = Session(endpoint_url=URL, region_name="us-east-1")
_mark("Session(): region, endpoint, credentials, the lane")
found = session.get(Order, customer=CUSTOMER, order_no=ORDER_NO)
"""
_LSIORM_SYNC_CLIENT = """
import os
os.environ["LSIORM_CLIENTLESS"] = "0"
from bench.models import Order
from lsiorm import Session
session = Session(endpoint_url=URL, region_name="us-east-1")
found = session.get(Order, customer=CUSTOMER, order_no=ORDER_NO)
"""
_LSIORM_ASYNC = """
import asyncio
from bench.models import Order
from lsiorm import AsyncSession
async def main():
    async with AsyncSession(endpoint_url=URL, region_name="us-east-1") as session:
        return await session.get(Order, customer=CUSTOMER, order_no=ORDER_NO)
found = asyncio.run(main())
"""
_BOTO3 = """
import boto3
client = boto3.client("dynamodb", endpoint_url=URL, region_name="us-east-1")
key = {"pk": {"S": f"CUST#{CUSTOMER}"}, "sk": {"S": f"ORDER#{ORDER_NO:08d}"}}
found = client.get_item(TableName="bench_lsiorm", Key=key).get("Item")
"""
_PYDYNOX = """
import pydynox
_mark("imports: pydynox")
from bench.pydynox_order import pydynox_model
Order = pydynox_model(URL)
_mark("declaring the model, the client")
found = Order.sync_get(pk=f"CUST#{CUSTOMER}", sk=f"ORDER#{ORDER_NO:08d}")
"""
#: The programs, by variant name; boto3's first, as the baseline.
PROGRAMS = {
    "boto3 client get_item (wire dict)": _BOTO3,
    "pydynox sync_get (Rust core, typed)": _PYDYNOX,
    "lsiorm Session.get (typed)": _LSIORM_SYNC,
    "lsiorm Session.get (typed, botocore client built first)": _LSIORM_SYNC_CLIENT,
    "lsiorm AsyncSession.get (typed)": _LSIORM_ASYNC,
}
LSIORM_SYNC = "lsiorm Session.get (typed)"
PYDYNOX = "pydynox sync_get (Rust core, typed)"


#: The name of the part from the last mark to the item decoded, and of interpreter start-up.
LAST_PART, START_PART = "the first GetItem", "interpreter start-up"


def _program(body: str, url: str) -> str:
    return (
        "import time as _time\n"
        "_marks = []\n"
        "def _mark(part): _marks.append((part, _time.monotonic()))\n"
        "_mark(" + repr(START_PART) + ")\n"
        f"URL, CUSTOMER, ORDER_NO = {url!r}, {CUSTOMER!r}, {ORDER_NO!r}\n"
        f"{body}\n"
        "assert found is not None, 'the order was not found'\n"
        "_mark(" + repr(LAST_PART) + ")\n"
        "for _part, _at in _marks: print(f'{_part}\\t{_at!r}')\n"
    )


def _run(program: str, env: dict[str, str]) -> dict[str, float]:
    """Run ``program`` in a fresh interpreter; return what each of its parts took, in seconds
    (in the program's order; their sum is start to the item decoded)."""
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", program],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        cwd=Path(__file__).resolve().parent.parent,
    )
    parts: dict[str, float] = {}
    before = started
    for line in done.stdout.splitlines():
        part, _, at = line.rpartition("\t")
        if part:
            parts[part] = float(at) - before
            before = float(at)
    return parts


@dataclass
class ColdGroup(Group):
    """The cold-start group, with each program's parts: variant name -> part -> samples."""

    parts: dict[str, dict[str, list[float]]] = field(default_factory=dict)

    def part_medians(self, variant: str) -> dict[str, float]:
        """The median of each part of ``variant``'s runs, in seconds, in the program's order."""
        return {
            part: statistics.median(samples)
            for part, samples in self.parts.get(variant, {}).items()
        }


def cold_start(url: str, rounds: int) -> Group:
    """Time each program ``rounds`` times, interleaved, after one discarded warm-up round.

    The warm-up round fills the OS file cache and writes every module's bytecode (into a
    temporary folder, so also where PYTHONDONTWRITEBYTECODE is set), as users have them.
    """
    variants = [Variant(name, lambda _: None) for name in PROGRAMS]
    order = list(zip(PROGRAMS.values(), variants, strict=True))
    shuffle = random.Random(3).shuffle
    parts: dict[str, dict[str, list[float]]] = {name: {} for name in PROGRAMS}
    with tempfile.TemporaryDirectory(prefix="lsiorm-bench-pyc-") as pyc:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = pyc
        for round_number in range(1 + rounds):
            shuffle(order)
            for body, variant in order:
                measured = _run(_program(body, url), env)
                if round_number:
                    variant.samples.append(sum(measured.values()))
                    for part, seconds in measured.items():
                        parts[variant.name].setdefault(part, []).append(seconds)
    return ColdGroup(
        "cold",
        "Cold start: interpreter start to the first completed GetItem",
        WALL,
        variants[0].name,
        variants,
        1,
        notes=[
            "Each in a fresh interpreter: start-up, imports, declaring the model, building the "
            "client and one GetItem of an order. Each program imports the order's model from "
            "the benchmark's own modules, as an application imports its model module: for "
            "lsiorm that loads pydantic, datetime and decimal too, for pydynox only pydynox.",
            "Measured with bytecode cached: every interpreter reads compiled modules from one "
            "PYTHONPYCACHEPREFIX folder, written by a first round that is not counted (as "
            "PYTHONDONTWRITEBYTECODE is dropped for these runs, like an installed package's "
            "cached bytecode).",
            "lsiorm Session.get sends its first GetItem on the clientless lane (region, "
            "endpoint and environment credentials resolved without a botocore client); "
            "'botocore client built first' is the same program with LSIORM_CLIENTLESS=0.",
            "lsiorm's sync program and pydynox's mark their parts (interpreter start-up, "
            "imports, declaring the model, the session, the request); each part's median is "
            "printed with the cold-start target.",
        ],
        parts=parts,
    )


def _split(group: ColdGroup, variant: str) -> str:
    return ", ".join(
        f"{part} {seconds * 1e3:.0f} ms" for part, seconds in group.part_medians(variant).items()
    )


def reason(group: ColdGroup, goal: float = 1.5) -> str:
    """Where lsiorm's and pydynox's cold starts went in this run (medians of each part), and
    which of lsiorm's parts alone is over the budget (``goal`` times pydynox's cold start)."""
    mine = group.part_medians(LSIORM_SYNC)
    total = sum(mine.values()) or 1.0
    largest = max(mine, key=mine.__getitem__) if mine else "?"
    budget = goal * group.variant(PYDYNOX).median
    over = [part for part, seconds in mine.items() if seconds > budget]
    text = (
        f"measured in this run (medians): lsiorm Session.get: {_split(group, LSIORM_SYNC)}; "
        f"pydynox: {_split(group, PYDYNOX)}. lsiorm's largest part is {largest} "
        f"({mine.get(largest, 0.0) / total:.0%} of its parts)"
    )
    if over:
        return text + f", and alone over the budget of {budget * 1e3:.0f} ms: {', '.join(over)}."
    left = budget - mine.get(largest, 0.0)
    return text + (
        f"; it leaves {left * 1e3:.0f} ms of the budget of {budget * 1e3:.0f} ms for the other "
        f"parts, which take {(total - mine.get(largest, 0.0)) * 1e3:.0f} ms."
    )


def main(argv: list[str] | None = None) -> int:
    """Run the cold-start workload alone (``python -m bench.cold_start [rounds]``): DynamoDB
    Local, the order written by every library once, then ``rounds`` interleaved rounds."""
    from lsiorm.testing import DynamoDBLocal

    from . import workloads

    args = sys.argv[1:] if argv is None else argv
    rounds = int(args[0]) if args else 5
    for name, value in (
        ("AWS_ACCESS_KEY_ID", "testing"),
        ("AWS_SECRET_ACCESS_KEY", "testing"),
        ("AWS_DEFAULT_REGION", "us-east-1"),
    ):
        os.environ.setdefault(name, value)
    with DynamoDBLocal() as engine_process:
        engine = workloads.Engine(engine_process.endpoint_url)
        engine.open()
        try:
            workloads.single_calls(engine, 1)  # writes the order every program reads
            before = os.getloadavg()
            group = cold_start(engine.url, rounds)
            after = os.getloadavg()
        finally:
            engine.close()
    base = group.variant(group.baseline).median
    print(
        f"{group.title} ({rounds} rounds; load average {before[0]:.2f} before, "
        f"{after[0]:.2f} after)"
    )
    for variant in group.variants:
        print(
            f"  {variant.name:<58} {variant.median * 1e3:8.1f} ms  "
            f"{variant.median / base:5.2f}x {group.baseline}"
        )
    print(f"  {reason(group)}")
    for note in group.notes:
        print(f"  note: {note}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
