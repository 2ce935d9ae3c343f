"""Turning timed groups into console lines and the markdown page docs/benchmarks.md."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone

from . import async_calls, cold_start, workloads
from .timing import CPU
from .workloads import Group, MemoryResult

#: For each workload, the lsiorm path a user gets by default.
_DEFAULT_PATHS = {
    "decode": "lsiorm decode_item",
    "query": "lsiorm Session.all (fast path)",
    "put": workloads.LEAN_PUT,
    "get": workloads.LEAN_GET,
    "batch-sync": workloads.LEAN_BATCH,
    "cold": cold_start.LSIORM_SYNC,
    "query-async": async_calls.ASYNC_QUERY,
    "put-async": async_calls.ASYNC_PUT,
    "get-async": async_calls.ASYNC_GET,
    "batch-async": workloads.ASYNC_BATCH,
    "cpu-put": workloads.LEAN_PUT,
    "cpu-get": workloads.LEAN_GET,
}


def gains(groups: Sequence[Group]) -> list[str]:
    """One line per workload: lsiorm's default path against the raw client and the peers."""
    lines = []
    for group in groups:
        mine_name = _DEFAULT_PATHS.get(group.key)
        if mine_name is None:
            continue
        mine = group.variant(mine_name).median
        others = [
            v
            for v in group.variants
            if not v.name.startswith("lsiorm") and v.name != group.baseline
        ]
        peers = ", ".join(f"{v.name} {v.median / mine:.2f}x" for v in others)
        ratio = mine / group.variant(group.baseline).median
        lines.append(
            f"- **{group.title}**: {ratio:.2f}x the time of {group.baseline}"
            + (f"; against lsiorm's time, {peers}" if peers else "")
            + "."
        )
    return lines


#: The rows of the side-by-side summary, by title: each workload's group (lsiorm's path in it
#: is its default path; a group whose key ends in "-async" is timed against aioboto3).
_SUMMARY_ROWS = {
    "typed query of 1,000, sync callers": "query",
    "typed query of 1,000, async": "query-async",
    "single put, sync": "put",
    "single get, sync": "get",
    "single put, async": "put-async",
    "single get, async": "get-async",
    "batch write of 10k, sync": "batch-sync",
    "batch write of 10k, async": "batch-async",
    "cold start to the first GetItem": "cold",
}
#: The client-CPU rows, by title: the CPU group and the async group whose default path is
#: lsiorm's async call (the CPU group's own default path is its sync call).
_CPU_ROWS = {
    "client CPU per get (µs)": ("cpu-get", "get-async"),
    "client CPU per put (µs)": ("cpu-put", "put-async"),
}


def _first(group: Group, prefix: str) -> float | None:
    """The median of the first row of ``group`` whose name starts with ``prefix``, if any."""
    return next((v.median for v in group.variants if v.name.startswith(prefix)), None)


def _pydynox(group: Group, asynchronous: bool) -> float | None:
    """pydynox's sync or async call in ``group`` (its sync calls' names say ``sync_``/``Sync``)."""
    for variant in group.variants:
        sync_call = "sync_" in variant.name or "Sync" in variant.name
        if variant.name.startswith("pydynox") and sync_call != asynchronous:
            return variant.median
    return None


def _ratio(value: float | None, base: float) -> str:
    return "—" if value is None else f"{value / base:.2f}x"


def _micros(value: float | None) -> str:
    return "—" if value is None else f"{value * 1e6:,.0f}"


def summary(groups: Mapping[str, Group]) -> list[str]:
    """One table of lsiorm against the peers, workload by workload, as ratios to the raw
    client of the same run (boto3 for sync rows, aioboto3 for async ones); "—" where a peer has
    no such call or was not run."""
    lines = [
        "| workload | lsiorm | pydynox (Rust core) | dynamoxy (Rust core) | raw boto3 / aioboto3 |",
        "|---|---:|---:|---:|---:|",
    ]
    for title, key in _SUMMARY_ROWS.items():
        group = groups.get(key)
        if group is None:
            continue
        base = group.variant(group.baseline).median
        mine = group.variant(_DEFAULT_PATHS[key]).median
        pydynox = _pydynox(group, asynchronous=key.endswith("-async"))
        lines.append(
            f"| {title} | {_ratio(mine, base)} | {_ratio(pydynox, base)} "
            f"| {_ratio(_first(group, 'dynamoxy'), base)} | 1.00x |"
        )
    for title, (key, async_key) in _CPU_ROWS.items():
        group = groups.get(key)
        if group is None:
            continue
        mine_sync = group.variant(_DEFAULT_PATHS[key]).median
        mine_async = group.variant(_DEFAULT_PATHS[async_key]).median
        lines.append(
            f"| {title} | {_micros(mine_sync)} sync / {_micros(mine_async)} async "
            f"| {_micros(_pydynox(group, False))} sync / {_micros(_pydynox(group, True))} async "
            f"| {_micros(_first(group, 'dynamoxy'))} "
            f"| {_micros(group.variant(group.baseline).median)} sync / "
            f"{_micros(_first(group, 'aioboto3'))} async |"
        )
    if "import" in groups:
        group = groups["import"]
        lines.append(
            f"| `import` (ms) | {group.variant(workloads.LSIORM_IMPORT).median * 1e3:.0f} "
            f"| {group.variant('import pydynox').median * 1e3:.0f} | — "
            f"| {group.variant('import boto3').median * 1e3:.0f} (boto3) |"
        )
    return lines


@dataclass(frozen=True)
class Target:
    """One performance target of lsiorm's development and how this run did against it."""

    name: str
    goal: str
    measured: str
    met: bool
    #: Why the target can be missed, from profiling; shown when it is. Every target has one:
    #: a miss is never printed without its reason.
    why: str

    def __post_init__(self) -> None:
        if not self.why.strip():
            raise ValueError(f"the target {self.name!r} says nothing of why it can be missed")


def _ms(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 0.001:
        return f"{seconds * 1000:.2f} ms"
    return f"{seconds * 1e6:.1f} µs"


def _mib(size: int) -> str:
    return f"{size / 2**20:.1f} MiB"


def console(group: Group) -> str:
    """Return the group as plain text lines for the terminal."""
    clock = "CPU time" if group.clock is CPU else "wall time"
    lines = [f"\n{group.title} (median {clock}, ratio to {group.baseline})"]
    for v in group.variants:
        lines.append(f"  {v.name:<62} {_ms(v.median):>10}  {group.ratio(v.name):6.2f}x")
    lines.extend(f"  note: {note}" for note in group.notes)
    return "\n".join(lines)


def _group_table(group: Group, throughput: bool) -> list[str]:
    clock = "CPU time" if group.clock is CPU else "wall time"
    head = f"| path | median {clock} | middle half | vs {group.baseline} |"
    rule = "|---|---:|---:|---:|"
    if throughput:
        head += " items/s |"
        rule += "---:|"
    lines = [f"### {group.title}", "", head, rule]
    for v in group.variants:
        low, high = v.spread
        row = (
            f"| {v.name} | {_ms(v.median)} | {_ms(low)} – {_ms(high)} | "
            f"{group.ratio(v.name):.2f}x |"
        )
        if throughput:
            row += f" {group.items / v.median:,.0f} |"
        lines.append(row)
    lines.append("")
    lines.extend(f"{note}\n" for note in group.notes)
    return lines


_OTHER_LIBRARIES = ("PynamoDB", "dyntastic")


def _times(ratio: float) -> str:
    if ratio < 1:
        return f"{1 / ratio:.1f}x faster than"
    return f"{ratio:.2f}x the time of"


#: What the other libraries do differently from lsiorm in the rows above.
PEERS = (
    "## What each peer does differently",
    "",
    "- **raw boto3 / aioboto3**: handed wire items that are ready, and hand back DynamoDB JSON; "
    "no model, no validation, no key rendering.",
    "- **pydynox** (Rust core): its client, signing, HTTP and JSON are compiled into one "
    "extension module. Its typed results are its own model objects.",
    "- **dynamoxy** (Rust core, async only, Python 3.12 or later): signing, HTTP, JSON and "
    "retries run in Rust (the AWS SDK for Rust). The benchmark runs it in a worker process of "
    "a Python 3.12+ interpreter that `make bench` finds (its rows are missing, with the reason "
    "printed, when there is none); that process times its own calls with the same clocks, in "
    "the same interleaved rounds. Its single put stores one more attribute, a random write id "
    "(`_wid`), so that a write whose answer was lost can be recognised; its requests ask for "
    "the consumed capacity (`ReturnConsumedCapacity` TOTAL, its default); its query adds "
    '`begins_with(sk, "ORDER#")` to the key condition, from the sort key template; its '
    "`batch_put` keeps the last write per key and sends as many requests in flight as the "
    "other async batches here (`batch_concurrency=8`; its default is 4).",
)


def markdown(
    groups: Sequence[Group],
    memory: MemoryResult | None,
    targets: Sequence[Target],
    machine: Mapping[str, str],
    versions: Mapping[str, str],
    settings: Mapping[str, str],
    sections: Sequence[str] = (),
) -> str:
    """Return the whole docs/benchmarks.md page (``sections``: more result lines, after the
    tables of the groups)."""
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# Benchmarks",
        "",
        f"Written by `make bench` (`python -m bench`) on {when}. Do not edit by hand: run",
        "`make bench` again. How the fast read path, the lean request lane and the one-pass",
        "encoding work is in [Performance](performance.md).",
        "",
        "## What you gain",
        "",
        "Typed entities, checked keys and typed errors, with the item-collection watcher on, at",
        "these costs against the raw boto3 client handed ready wire items (below 1.00x is faster):",
        "",
        *gains(groups),
        "",
        "## lsiorm and the peers side by side",
        "",
        "Wall time as a ratio to the raw client of the same run (below 1.00x is faster), and "
        "client CPU in µs per call. A dash: the peer has no such call (dynamoxy is async only) "
        "or was not timed in that section (the async batch has no pydynox row; dynamoxy runs in "
        "an interpreter of its own, so its import is not timed).",
        "",
        *summary({group.key: group for group in groups}),
        "",
        "## Results",
        "",
    ]
    for group in groups:
        lines += _group_table(group, throughput=group.key.startswith("batch"))
    if memory is not None:
        lines += [
            f"### Peak memory reading a {memory.items:,}-item partition",
            "",
            "Peak traced by `tracemalloc` (Python allocations only) while the query runs.",
            "",
            "| how | peak |",
            "|---|---:|",
            f"| first page only (`pages()`, stop after one) | {_mib(memory.one_page)} |",
            f"| lazy: iterate `pages()` over all {memory.pages} pages, keep nothing "
            f"| {_mib(memory.lazy)} |",
            f"| eager: `session.all()` into one list | {_mib(memory.eager)} |",
            "",
        ]
    lines += [*sections, *PEERS, ""]
    lines += [
        "## Targets of lsiorm's development",
        "",
        "Goals the project measures itself against on every run; a missed one is a known cost, "
        "explained below the table.",
        "",
        "| target | goal | this run | met |",
        "|---|---|---|---|",
    ]
    for t in targets:
        lines.append(f"| {t.name} | {t.goal} | {t.measured} | {'yes' if t.met else 'not yet'} |")
    missed = [t for t in targets if not t.met]
    if missed:
        lines += ["", "Where a target is missed, and why:", ""]
        lines += [f"- **{t.name}**: {t.why}" for t in missed]
    lines += ["", "## Machine and versions", "", "| | |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in machine.items()]
    lines += [f"| {k} | {v} |" for k, v in versions.items()]
    lines += ["", "## Method", ""]
    lines += [f"- {k}: {v}" for k, v in settings.items()]
    lines.append("")
    return "\n".join(lines)
