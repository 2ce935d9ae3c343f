"""Cold start: from interpreter start to the first completed GetItem, in fresh interpreters.

Each variant is a small program run by a new interpreter: it imports its library, declares
what it reads (a model, or nothing for the raw client), builds its client and reads one order
that the single-call workload wrote. The program prints the system's monotonic clock once the
item is decoded; the time counted runs from just before the interpreter is started to that
reading, so interpreter start-up, every import, the client's construction and the request are
in it, and interpreter shutdown is not.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .timing import WALL, Variant
from .workloads import Group

#: The order every program reads (written by the single-call workload).
CUSTOMER, ORDER_NO = "s00000", 0

_LSIORM_SYNC = """
from bench.models import Order
from lsiorm import Session
session = Session(endpoint_url=URL, region_name="us-east-1")
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
from bench.pydynox_order import pydynox_model
Order = pydynox_model(URL)
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


def _program(body: str, url: str) -> str:
    return (
        f"URL, CUSTOMER, ORDER_NO = {url!r}, {CUSTOMER!r}, {ORDER_NO!r}\n"
        f"{body}\n"
        "assert found is not None, 'the order was not found'\n"
        "import time; print(time.monotonic())\n"
    )


def _seconds(program: str, env: dict[str, str]) -> float:
    """Run ``program`` in a fresh interpreter; return start to its clock reading, in seconds."""
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", program],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        cwd=Path(__file__).resolve().parent.parent,
    )
    return float(done.stdout.split()[-1]) - started


def cold_start(url: str, rounds: int) -> Group:
    """Time each program ``rounds`` times, interleaved, after one discarded warm-up round.

    The warm-up round fills the OS file cache and writes every module's bytecode (into a
    temporary folder, so also where PYTHONDONTWRITEBYTECODE is set), as users have them.
    """
    variants = [Variant(name, lambda _: None) for name in PROGRAMS]
    order = list(zip(PROGRAMS.values(), variants, strict=True))
    shuffle = random.Random(3).shuffle
    with tempfile.TemporaryDirectory(prefix="lsiorm-bench-pyc-") as pyc:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = pyc
        for round_number in range(1 + rounds):
            shuffle(order)
            for body, variant in order:
                seconds = _seconds(_program(body, url), env)
                if round_number:
                    variant.samples.append(seconds)
    return Group(
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
        ],
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
    for note in group.notes:
        print(f"  note: {note}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
