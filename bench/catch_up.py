"""A table migration's catch-up on a stream of 16 shards: changes applied per second with 1, 2
and 4 workers, the write rate at which the lag still converges, and memory against the number
of changed items.

``python -m bench.catch_up [--quick]`` starts DynamoDB Local with `lsiorm.testing.AwsLikeEngine`
in front of it (a stream of 16 shards, as a busy table has many) and measures, through the
public API (`Session.migrate_table` with ``executor=`` and ``progress=``):

* **apply rate**: C changes written to the source after the copy (one per item, spread over
  the shards), then the next call's catch-up timed from its start to the pass that found nothing
  more, with 1, 2 and 4 workers (a thread pool as the executor) of ``concurrency=2`` each (a
  small worker, so that the figure is about workers and shards, not one worker's threads);
* **convergence**: writers (4 threads, each request a batch of puts) at a steady rate W for S
  seconds while the catch-up follows (``follow=``) with 4 workers; then the time from the
  writers' last write until the destination shows it. A catch-up that keeps up shows it
  within a few passes, whatever S; one slower than its writers is behind by a share of S. The
  highest W that converges is compared with what one worker applies: a source writing faster
  than one worker can apply still reaches zero lag. The writers write to the upstream engine
  straight (the AWS-like engine takes their changes from its stream), so that the AWS-like
  engine's one process serves the catch-up alone. Taken at 5 ms round trips and at 20 ms
  (`FAR_LATENCY`), each against one worker's rate at the same round trip: at 5 ms this
  machine's cores, which DynamoDB Local shares with the engine, the writers and the workers,
  are part of the measure; at 20 ms the round trips are most of it;
* **memory**: the peak of Python's allocations (``tracemalloc``) while the catch-up applies N
  inserts, for N and 10 N: a catch-up keeps nothing per changed item, so the peak must not grow
  with N (the changes go to a few shards, so that every page the catch-up holds is full at
  both sizes: see `MEMORY_PARTITIONS`); and the peak of the verification that follows.

It prints the figures (and `bench/__main__.py` puts them in docs/benchmarks.md); nothing is
asserted. On a small, shared machine the rates say more about the machine than about lsiorm:
compare them within one run.
"""

from __future__ import annotations

import argparse
import multiprocessing
import random
import threading
import time
import tracemalloc
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

import boto3

from lsiorm import Entity, JobProgress, Session, Table
from lsiorm.testing import AwsLikeEngine, DynamoDBLocal, StreamShards

from .report import Target

REGION = "us-east-1"
SHARDS = 16
#: Partition key values of the source (many, so that every shard gets changes).
PARTITIONS = 256
#: Each worker's own concurrency (threads applying one page's items).
WORKER_CONCURRENCY = 2
WORKERS = (1, 2, 4)


class BenchItem(Entity):
    """What the bench's items carry (abstract: no table)."""

    p: int
    n: int
    title: str


#: The destination: the five reserved slots, LSI1 by title. Declared once, at module level,
#: so that the executor's workers import it by path; each measure runs under a table prefix of
#: its own (fresh tables).
DEST = Table.with_reserved_lsi_slots("cu_dst", "PK", "SK")
SOURCE = "cu_src"


class Item(
    BenchItem, table=DEST, keys={"PK": "P#{p:03d}", "SK": "I#{n:07d}", "LSI1SK": "T#{title}"}
):
    """An item of the bench's table."""


def source_item(n: int, title: str = "", partitions: int = PARTITIONS) -> dict[str, Any]:
    return {
        "PK": {"S": f"P#{n % partitions:03d}"},
        "SK": {"S": f"I#{n:07d}"},
        "_type": {"S": "Item"},
        "p": {"N": str(n % partitions)},
        "n": {"N": str(n)},
        "title": {"S": title or f"item {n}"},
    }


def create_source(client: Any, name: str) -> None:
    client.create_table(
        TableName=name,
        KeySchema=[
            {"AttributeName": "PK", "KeyType": "HASH"},
            {"AttributeName": "SK", "KeyType": "RANGE"},
        ],
        AttributeDefinitions=[
            {"AttributeName": "PK", "AttributeType": "S"},
            {"AttributeName": "SK", "AttributeType": "S"},
        ],
        BillingMode="PAY_PER_REQUEST",
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
    )


def put_many(
    client: Any, name: str, numbers: range, title: str, partitions: int = PARTITIONS
) -> None:
    """Put items ``numbers`` (25 to a request), over ``partitions`` partition keys."""
    for start in range(numbers.start, numbers.stop, 25):
        chunk = range(start, min(numbers.stop, start + 25))
        requests = [
            {"PutRequest": {"Item": source_item(n, f"{title} {n}", partitions)}} for n in chunk
        ]
        pending: dict[str, Any] = {name: requests}
        while pending:
            pending = client.batch_write_item(RequestItems=pending).get("UnprocessedItems") or {}


@dataclass
class Passes:
    """Each catch-up pass as `progress` reported it: when (since the call began), the changes
    it found, and how far behind it ended."""

    started: float = field(default_factory=time.perf_counter)
    seen: list[tuple[float, int, float]] = field(default_factory=list)

    def __call__(self, state: JobProgress) -> None:
        if state.events_behind is not None and state.seconds_behind is not None:
            at = time.perf_counter() - self.started
            self.seen.append((at, state.events_behind, state.seconds_behind))

    def drained_at(self) -> float:
        """When the first pass that found nothing ended (the end of the catch-up)."""
        return next((at for at, found, _ in self.seen if found == 0), self.seen[-1][0])


class Bench:
    """An engine, and a fresh pair of tables (under a prefix of their own) per measure.

    ``url`` is the AWS-like engine's, which the catch-up talks to; ``upstream`` is the engine
    behind it (DynamoDB Local), to which the source's writers write straight: the AWS-like
    engine takes their changes from the upstream stream, as it takes every write's, and its
    one process then serves the catch-up alone."""

    def __init__(self, url: str, upstream: str | None = None) -> None:
        self.url = url
        self.upstream = upstream or url
        self.client = boto3.client("dynamodb", endpoint_url=url, region_name=REGION)
        #: Writes the source's items straight to the upstream engine (seeding, changes).
        self.writer = boto3.client("dynamodb", endpoint_url=self.upstream, region_name=REGION)

    @contextmanager
    def pair(self) -> Iterator[tuple[Session, str]]:
        """A session under a fresh table prefix, and the live name of its source table."""
        prefix = f"b{uuid.uuid4().hex[:8]}_"
        source = prefix + SOURCE
        create_source(self.client, source)
        with Session(endpoint_url=self.url, region_name=REGION, table_prefix=prefix) as session:
            yield session, source

    def migrate(self, session: Session, workers: int, **more: Any) -> tuple[Any, Passes]:
        passes = Passes()
        with ThreadPoolExecutor(workers) as pool:
            report = session.migrate_table(
                DEST,
                SOURCE,
                executor=pool,
                concurrency=WORKER_CONCURRENCY,
                progress=passes,
                **more,
            )
        return report, passes


def apply_rate(bench: Bench, changes: int, workers: int) -> float:
    """Changes applied per second by a catch-up of ``changes`` changes with ``workers``."""
    with bench.pair() as (session, source):
        put_many(bench.writer, source, range(changes), "item")
        first, _ = bench.migrate(session, workers)  # the copy (and a catch-up of the seeding)
        put_many(bench.writer, source, range(changes), "changed")
        report, passes = bench.migrate(session, workers)
    applied: int = report.applied - first.applied
    return max(applied, 1) / passes.drained_at()


class Writers:
    """Update random items of the source at ``rate`` a second in all, from ``threads`` threads,
    until stopped; the last write is kept.

    Each request is a batch of up to 25 puts (`BatchWriteItem`), as a busy source's writers
    often send them: one put per request would make the writers' own round trips, not the
    catch-up, the limit of the rate (the engine answers each request after its round trip).
    Each thread writes its own items, so an item's last write is the last one its thread sent."""

    def __init__(self, url: str, source: str, items: int, rate: float, threads: int = 4) -> None:
        self.url, self.source, self.items, self.rate = url, source, items, rate
        self.stop = threading.Event()
        self.writes = 0
        self.last: tuple[float, int, str] | None = None
        self._lock = threading.Lock()
        self.threads = [threading.Thread(target=self.run, args=(i,)) for i in range(threads)]

    def run(self, index: int) -> None:
        client = boto3.client("dynamodb", endpoint_url=self.url, region_name=REGION)
        rng = random.Random(index)
        count = len(self.threads)
        each = self.rate / count
        mine = range(index, self.items, count)
        batch = max(1, min(25, round(each / 10), len(mine)))  # about ten requests a second
        start, sent = time.perf_counter(), 0
        while not self.stop.is_set():
            wait = start + sent / each - time.perf_counter()
            if wait > 0:
                time.sleep(wait)
            numbers = rng.sample(mine, batch)
            titles = [f"w{index}.{sent + i}" for i in range(batch)]
            requests = [
                {"PutRequest": {"Item": source_item(n, title)}}
                for n, title in zip(numbers, titles, strict=True)
            ]
            pending: dict[str, Any] = {self.source: requests}
            while pending:
                answer = client.batch_write_item(RequestItems=pending)
                pending = answer.get("UnprocessedItems") or {}
            sent += batch
            with self._lock:
                self.writes += batch
                self.last = (time.perf_counter(), numbers[-1], titles[-1])

    def __enter__(self) -> Writers:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join()


#: How long a catch-up that keeps up may take to show the writers' last write (a few passes).
LAG_BOUND = 5.0
#: How long the catch-up follows after the writers stop, at most (the measure's patience).
PATIENCE = 20.0


@dataclass(frozen=True)
class Convergence:
    """A catch-up followed writers at ``rate`` writes per second (``achieved`` done) for
    ``seconds``; ``lag`` is the time from the writers' last write until the destination showed
    it (None: not within the measure's patience); ``passes`` as `progress` reported them;
    ``latency`` the round trip the engine added, and ``one`` what one worker applied per second
    at that round trip (without writers)."""

    rate: float
    achieved: float
    seconds: float
    lag: float | None
    passes: tuple[tuple[float, int, float], ...]
    latency: float = 0.0
    one: float = 0.0

    @property
    def converged(self) -> bool:
        """The catch-up kept up: when the writers stopped, it was at most a few seconds behind.

        A catch-up slower than its writers falls behind by ``(W - R) / W`` of the time they
        write (for a rate ``R`` < ``W``), so its lag at the end grows with ``seconds``."""
        return self.lag is not None and self.lag <= LAG_BOUND

    @property
    def sustained(self) -> float:
        """Changes per second the catch-up applied at least: every write of the ``seconds``
        was in the destination ``lag`` seconds after the last one, so the catch-up applied
        ``achieved * seconds`` changes in at most ``seconds + lag`` (it began behind, after the
        copy's verification, so it applied them faster than this). 0 when it did not catch
        up."""
        if self.lag is None:
            return 0.0
        return self.achieved * self.seconds / (self.seconds + self.lag)

    @property
    def outran_one_worker(self) -> bool:
        """It converged with writers faster than one worker applies at the same round trip,
        and the catch-up applied more than one worker does."""
        return self.converged and self.achieved > self.one and self.sustained > self.one


def convergence(
    bench: Bench, items: int, rate: float, seconds: float, *, latency: float, one: float
) -> Convergence:
    """Writers at ``rate`` for ``seconds`` while a 4-worker catch-up follows them; then the
    time until the destination holds the last write (read from the upstream engine, so that
    watching adds nothing to the AWS-like engine's load)."""
    with bench.pair() as (session, source):
        put_many(bench.writer, source, range(items), "item")
        bench.migrate(session, max(WORKERS))  # the copy
        destination = session.table_name(DEST)
        outcome: dict[str, Any] = {}

        def follow() -> None:
            outcome["passes"] = bench.migrate(session, max(WORKERS), follow=seconds + PATIENCE)[1]

        follower = threading.Thread(target=follow)
        with Writers(bench.upstream, source, items, rate) as writers:
            follower.start()
            started = time.perf_counter()
            time.sleep(seconds)
        achieved = writers.writes / (time.perf_counter() - started)
        assert writers.last is not None
        stopped, n, title = writers.last
        lag: float | None = None
        key = {k: v for k, v in source_item(n).items() if k in ("PK", "SK")}
        upstream = boto3.client("dynamodb", endpoint_url=bench.upstream, region_name=REGION)
        while follower.is_alive():
            got = upstream.get_item(TableName=destination, Key=key, ConsistentRead=True)
            if got.get("Item", {}).get("title", {}).get("S") == title:
                lag = time.perf_counter() - stopped
                break
            time.sleep(0.1)
        follower.join()
    passes = tuple(outcome["passes"].seen)
    return Convergence(rate, achieved, seconds, lag, passes, latency, one)


#: The memory measure's changes go to items of this many partition keys, so to at most as
#: many shards, each of which then gets at least 2,500 of 10,000 changes: every page a shard
#: unit holds is full (1,000 records) at both sizes. Spread over all 16 shards, 10,000 changes
#: are 625 a shard, one page each, and the peak would grow with how full the pages are (up to
#: 1,000 records), not with what the catch-up keeps per item, which is what is measured.
MEMORY_PARTITIONS = 4
#: Items per scan page of the verification measured with ``page_size=`` (the verification's
#: 4 segments then hold full pages at both sizes: 10,000 items are 2,500 a segment).
VERIFY_PAGE = 1_000


@dataclass(frozen=True)
class MemoryPeak:
    """The peaks of Python's allocations (bytes, above the start): of the catch-up of a number
    of changes, and of the verification of the destination that follows it (a migration's
    call verifies after catching up; it scans both tables a page per segment at once)."""

    catch_up: int
    verification: int
    #: The peak of a verification with ``page_size=VERIFY_PAGE`` (items per scan page).
    verification_paged: int = 0


def peak_memory(bench: Bench, changes: int) -> MemoryPeak:
    """The peaks of Python's allocations while a catch-up applies ``changes`` inserts (in
    this process's threads), and while the destination is then verified.

    The catch-up alone: calls with ``detach=True`` (each catches up, at most a few passes, and
    only opens the verification's run) until a pass finds nothing more; then a call that runs
    the verification."""
    with bench.pair() as (session, source):
        session.migrate_table(DEST, SOURCE)  # an empty copy: every change comes after it
        put_many(bench.writer, source, range(changes), "new", MEMORY_PARTITIONS)
        drained: list[bool] = []

        def at_pass(state: JobProgress) -> None:
            if state.events_behind == 0:
                drained.append(True)

        tracemalloc.start()
        try:
            base = tracemalloc.get_traced_memory()[0]
            tracemalloc.reset_peak()
            while not drained:
                session.migrate_table(DEST, SOURCE, concurrency=8, detach=True, progress=at_pass)
            catch_up = tracemalloc.get_traced_memory()[1] - base
            base = tracemalloc.get_traced_memory()[0]
            tracemalloc.reset_peak()
            session.migrate_table(DEST, SOURCE, concurrency=8)
            verification = tracemalloc.get_traced_memory()[1] - base
            # A verification after one that ended begins anew: the same, a page of at most
            # VERIFY_PAGE items per segment.
            base = tracemalloc.get_traced_memory()[0]
            tracemalloc.reset_peak()
            session.migrate_table(DEST, SOURCE, concurrency=8, page_size=VERIFY_PAGE)
            paged = tracemalloc.get_traced_memory()[1] - base
        finally:
            tracemalloc.stop()
    return MemoryPeak(catch_up, verification, paged)


@dataclass
class CatchUpResult:
    """What `run` measured."""

    rates: dict[int, float] = field(default_factory=dict)
    #: The same measure with no network between the workers and the engine (loopback).
    loopback: dict[int, float] = field(default_factory=dict)
    changes: int = 0
    runs: list[Convergence] = field(default_factory=list)
    memory: dict[int, MemoryPeak] = field(default_factory=dict)
    #: The apply rates at `FAR_LATENCY`.
    far: dict[int, float] = field(default_factory=dict)

    @property
    def fastest_converging(self) -> Convergence | None:
        """The converged run that outran one worker (at its round trip) by the most; else
        the converged run that applied the most."""
        done = [r for r in self.runs if r.converged]
        if not done:
            return None
        return max(done, key=lambda r: (r.outran_one_worker, r.sustained / max(r.one, 1.0)))


#: The network round trip the engine adds to every answer, as within an AWS region.
LATENCY = 0.005
#: A longer round trip (a client in another region, or one behind a VPN): one worker is then
#: bound by its round trips, as it is on AWS, where the table's service does not share the
#: client's cores; at 5 ms, DynamoDB Local, the engine, the writers and the workers share this
#: machine's cores, and a DynamoDB Local that holds much (one not fresh) gave out before the
#: writers outran one worker.
FAR_LATENCY = 0.02
#: The writers' rates of the convergence runs, as factors of one worker's rate at each round
#: trip.
FACTORS = {LATENCY: (0.5, 1.0, 1.5, 2.0), FAR_LATENCY: (1.5, 2.0, 3.0)}
QUICK_FACTORS = {LATENCY: (0.5, 1.5), FAR_LATENCY: (2.0,)}


def _serve_engine(upstream: str, latency: float, urls: Any, stop: Any) -> None:
    """A child process's life: an AWS-like engine in front of ``upstream`` until ``stop``."""
    # No idle stop: the bench stops it, and seeding 100,000 items straight to the upstream
    # engine takes longer than the default idle timeout (the engine stopped under a catch-up).
    with AwsLikeEngine(
        upstream, streams=StreamShards(shards=SHARDS), latency=latency, idle_timeout=24 * 3600.0
    ) as engine:
        urls.put(engine.endpoint_url)
        stop.wait()


@contextmanager
def engines(latency: float) -> Iterator[tuple[str, str]]:
    """A fresh DynamoDB Local, and a fresh AWS-like engine in front of it: (the AWS-like
    engine's URL, DynamoDB Local's). Each measure gets engines of its own: DynamoDB Local
    slows down with what it holds (after 100,000 items of the memory measure, one worker
    applied 63 changes a second at 5 ms round trips, against 195 on a fresh one, with
    DynamoDB Local at 5 GB and most of a core), and an AWS-like engine tails every stream it
    ever knew (a first pass of 34 s against 3 s on a fresh one), which AWS does not."""
    with DynamoDBLocal() as local, engine_process(local.endpoint_url, latency) as endpoint:
        yield endpoint, local.endpoint_url


@contextmanager
def engine_process(upstream: str, latency: float) -> Iterator[str]:
    """The AWS-like engine in a process of its own; its endpoint URL.

    In this process it would share one interpreter lock with the catch-up's workers and the
    writers, so the figures would be about the lock; on its own it uses a core of its own."""
    context = multiprocessing.get_context("spawn")
    urls, stop = context.Queue(), context.Event()
    child = context.Process(target=_serve_engine, args=(upstream, latency, urls, stop), daemon=True)
    child.start()
    try:
        yield str(urls.get(timeout=60))
    finally:
        stop.set()
        child.join(timeout=10)
        if child.is_alive():
            child.kill()


#: The measures `run` can take (``--only``): apply rates, convergence, memory.
MEASURES = ("rates", "convergence", "memory")


def run(
    *,
    quick: bool,
    memory: bool = True,
    only: tuple[str, ...] = MEASURES,
    say: Callable[[str], object] = print,
) -> CatchUpResult:
    """Measure on DynamoDB Local behind a 16-shard AWS-like engine, both fresh for each
    measure (`engines`).

    ``only``: the measures to take (convergence needs one worker's rate, so it takes the rates
    too). Memory is measured last: it is the longest."""
    result = CatchUpResult(changes=1_000 if quick else 4_000)
    memory = memory and "memory" in only
    for workers in WORKERS if "rates" in only else ():
        with engines(0.0) as (endpoint, upstream):
            rate = result.loopback[workers] = apply_rate(
                Bench(endpoint, upstream), result.changes, workers
            )
        say(f"  apply rate, {workers} worker(s), loopback: {rate:,.0f} changes/s")
    for latency, factors in (
        (QUICK_FACTORS if quick else FACTORS).items()
        if "rates" in only or "convergence" in only
        else ()
    ):
        rates = result.rates if latency == LATENCY else result.far
        for workers in WORKERS:
            with engines(latency) as (endpoint, upstream):
                rate = rates[workers] = apply_rate(
                    Bench(endpoint, upstream), result.changes, workers
                )
            say(
                f"  apply rate, {workers} worker(s) over {SHARDS} shards, "
                f"{latency * 1000:g} ms round trips: {rate:,.0f} changes/s"
            )
        for factor in factors if "convergence" in only else ():
            with engines(latency) as (endpoint, upstream):
                outcome = convergence(
                    Bench(endpoint, upstream),
                    500,
                    rates[1] * factor,
                    10.0 if quick else 30.0,
                    latency=latency,
                    one=rates[1],
                )
            result.runs.append(outcome)
            trend = ", ".join(
                f"{f} ({at:.0f} s, {lag:.1f} s behind)" for at, f, lag in outcome.passes
            )
            say(
                f"  {latency * 1000:g} ms round trips, writers at {outcome.achieved:,.0f}/s "
                f"({factor:g}x one worker's rate) for {outcome.seconds:g} s: {_lag(outcome)}, "
                f"at least {outcome.sustained:,.0f}/s applied, "
                f"{'converges' if outcome.converged else 'does not converge'} "
                f"(changes per pass: {trend})"
            )
    # Memory does not depend on round trips: measured on loopback, where it is quickest.
    for changes in ((2_000, 20_000) if quick else (10_000, 100_000)) if memory else ():
        with engines(0.0) as (endpoint, upstream):
            peaks = result.memory[changes] = peak_memory(Bench(endpoint, upstream), changes)
        say(
            f"  peak memory, {changes:,} changed items: catch-up "
            f"{peaks.catch_up / 2**20:.1f} MiB, the verification that follows "
            f"{peaks.verification / 2**20:.1f} MiB "
            f"({peaks.verification_paged / 2**20:.1f} MiB with page_size={VERIFY_PAGE:,})"
        )
    return result


def _lag(run: Convergence) -> str:
    if run.lag is None:
        return f"last write not applied within {PATIENCE:g} s"
    return f"last write applied {run.lag:.1f} s after it was made"


def targets(result: CatchUpResult) -> list[Target]:
    """The catch-up's goals (a table migration at scale) as this run met them."""
    rates = [result.rates[w] for w in WORKERS if w in result.rates]
    rising = all(b > a for a, b in pairwise(rates))
    fastest = result.fastest_converging
    small, large = sorted(result.memory)[:1], sorted(result.memory)[1:]
    flat = (
        bool(small and large)
        and result.memory[large[0]].catch_up <= 1.5 * result.memory[small[0]].catch_up
    )
    paged_flat = (
        bool(small and large)
        and result.memory[large[0]].verification_paged
        <= 1.5 * result.memory[small[0]].verification_paged
    )
    return [
        Target(
            "catch-up throughput rises with workers",
            f"{' < '.join(str(w) for w in WORKERS)} workers over {SHARDS} shards, "
            f"{LATENCY * 1000:g} ms round trips",
            " < ".join(f"{r:,.0f}/s" for r in rates),
            rising,
            _rates_reason(result),
        ),
        Target(
            "lag converges for a source faster than one worker",
            "writers above one worker's rate at the same round trip ("
            + ", ".join(f"{ms:g} ms: {r:,.0f}/s" for ms, r in _one_worker(result))
            + f"), 4 workers, lag <= {LAG_BOUND:g} s, "
            "and the catch-up applying more than one worker's rate",
            "none converged"
            if fastest is None
            else (
                f"{fastest.achieved:,.0f}/s converges at {fastest.latency * 1000:g} ms "
                f"(lag {fastest.lag or 0.0:.1f} s, at least {fastest.sustained:,.0f}/s applied, "
                f"one worker {fastest.one:,.0f}/s)"
            ),
            fastest is not None and fastest.outran_one_worker,
            _convergence_reason(result),
        ),
        Target(
            "catch-up memory does not grow with changed items",
            "peak at 10x the changed items <= 1.5x",
            ", ".join(
                f"{n:,}: {m.catch_up / 2**20:.1f} MiB" for n, m in sorted(result.memory.items())
            ),
            flat,
            _growth(result, "catch_up"),
        ),
        Target(
            "verification memory does not grow with the table",
            f"with page_size={VERIFY_PAGE:,}, peak at 10x the items <= 1.5x",
            ", ".join(
                f"{n:,}: {m.verification_paged / 2**20:.1f} MiB"
                for n, m in sorted(result.memory.items())
            ),
            paged_flat,
            _growth(result, "verification_paged"),
        ),
    ]


def _rates_reason(result: CatchUpResult) -> str:
    """Why the rates did not rise, from the run's figures: the same measure on loopback."""
    if not result.rates:
        return "not measured in this run"
    loopback = ", ".join(f"{w}: {r:,.0f}/s" for w, r in sorted(result.loopback.items()))
    return (
        f"at {LATENCY * 1000:g} ms round trips, by workers: "
        + ", ".join(f"{w}: {r:,.0f}/s" for w, r in sorted(result.rates.items()))
        + (f"; with no round trips (loopback) {loopback}" if loopback else "")
        + ": where loopback does not rise either, this machine's cores (shared by DynamoDB "
        "Local, the engine and the workers) bound the measure, not the round trips"
    )


def _one_worker(result: CatchUpResult) -> list[tuple[float, float]]:
    """(round trip in ms, one worker's rate) for each round trip measured."""
    return [
        (latency * 1000, rates[1])
        for latency, rates in ((LATENCY, result.rates), (FAR_LATENCY, result.far))
        if 1 in rates
    ]


def _convergence_reason(result: CatchUpResult) -> str:
    """Why no run converged above one worker's rate, from the run's figures: for each round
    trip, the best run above one worker's rate there (or how far the writers got)."""
    if not result.runs:
        return "not measured in this run"
    said = []
    for latency in sorted({r.latency for r in result.runs}):
        runs = [r for r in result.runs if r.latency == latency]
        one, ms = runs[0].one, f"{latency * 1000:g} ms"
        rates = result.rates if latency == LATENCY else result.far
        best = max(rates.values(), default=0.0)
        above = [r for r in runs if r.achieved > one]
        if not above:
            top = max(runs, key=lambda r: r.achieved)
            said.append(
                f"at {ms}, the writers reached {top.achieved:,.0f}/s at most, asked for up to "
                f"{max(r.rate for r in runs):,.0f}/s: not above one worker's {one:,.0f}/s"
            )
            continue
        nearest = min(above, key=lambda r: r.lag if r.lag is not None else float("inf"))
        said.append(
            f"at {ms}, above one worker's {one:,.0f}/s, the best run had writers at "
            f"{nearest.achieved:,.0f}/s and {_lag(nearest)}; the most the catch-up applied "
            f"without writers there was {best:,.0f}/s"
        )
    return "; ".join(said)


def _growth(result: CatchUpResult, name: str) -> str:
    """A memory peak's growth from the smaller size to the larger, from the run's figures."""
    sizes = sorted(result.memory)
    if len(sizes) < 2:
        return "not measured at two sizes in this run"
    small, large = (getattr(result.memory[n], name) for n in (sizes[0], sizes[-1]))
    return (
        f"{sizes[-1] / sizes[0]:g}x the changed items gave {large / max(small, 1):.2f}x the peak "
        f"({small / 2**20:.1f} MiB to {large / 2**20:.1f} MiB)"
    )


def section(result: CatchUpResult) -> list[str]:
    """The catch-up's part of docs/benchmarks.md."""
    lines = [
        f"### A table migration's catch-up over {SHARDS} shards",
        "",
        "Behind `lsiorm.testing.AwsLikeEngine` (a stream of 16 shards, in a process of its own) "
        "in front of DynamoDB Local, both fresh for each measure; each worker is a thread of "
        "the executor with "
        f"`concurrency={WORKER_CONCURRENCY}`; {result.changes:,} changes applied per measure "
        f"(`bench/catch_up.py`). The engine adds a {LATENCY * 1000:g} ms round trip to every "
        "answer (`latency=`), as a client within an AWS region meets; the loopback column has "
        "none, where this machine's cores, shared by DynamoDB Local, the engine and the "
        "workers, are the limit.",
        "",
        f"| workers | changes applied per second ({LATENCY * 1000:g} ms) | "
        f"at {FAR_LATENCY * 1000:g} ms | loopback |",
        "|---:|---:|---:|---:|",
        *(
            f"| {w} | {r:,.0f} | {result.far.get(w, 0.0):,.0f} | "
            f"{result.loopback.get(w, 0.0):,.0f} |"
            for w, r in sorted(result.rates.items())
        ),
        "",
        "The writers write to DynamoDB Local straight (the engine takes their changes from "
        "its stream, as it takes every write's), so that the engine's process serves the "
        "catch-up alone. *Applied at least*: every write was in the destination by the time "
        "in the fifth column, so the catch-up applied the writes at this rate or faster. "
        f"At {LATENCY * 1000:g} ms, DynamoDB Local takes the writers' writes and the "
        "catch-up's on the same two cores as the engine and the workers; at "
        f"{FAR_LATENCY * 1000:g} ms (a client in another region) each worker waits on its "
        "round trips, as it does on AWS, where the table's service does not share the "
        "client's cores.",
        "",
        "| round trip | one worker | writers asked | done | for | last write applied after | "
        "applied at least | converges | changes found per pass |",
        "|---:|---:|---:|---:|---:|---:|---:|---|---|",
        *(
            f"| {r.latency * 1000:g} ms | {r.one:,.0f}/s | {r.rate:,.0f}/s | "
            f"{r.achieved:,.0f}/s | {r.seconds:g} s | "
            f"{'-' if r.lag is None else f'{r.lag:.1f} s'} | {r.sustained:,.0f}/s | "
            f"{'yes' if r.converged else 'no'} | "
            f"{', '.join(str(f) for _, f, _ in r.passes)} |"
            for r in result.runs
        ),
        "",
        "| changed items | peak memory of the catch-up | of the verification that follows | "
        f"the same with `page_size={VERIFY_PAGE:,}` |",
        "|---:|---:|---:|---:|",
        *(
            f"| {n:,} | {m.catch_up / 2**20:.1f} MiB | {m.verification / 2**20:.1f} MiB | "
            f"{m.verification_paged / 2**20:.1f} MiB |"
            for n, m in sorted(result.memory.items())
        ),
        "",
    ]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes")
    parser.add_argument("--skip-memory", action="store_true", help="no memory measure")
    parser.add_argument(
        "--only", choices=MEASURES, action="append", help="take only this measure (repeatable)"
    )
    args = parser.parse_args()
    only = tuple(args.only or MEASURES)
    result = run(quick=args.quick, memory=not args.skip_memory, only=only)
    for target in targets(result):
        print(f"  {'met ' if target.met else 'MISS'} {target.name}: {target.measured}")


if __name__ == "__main__":
    main()
