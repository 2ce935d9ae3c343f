"""A table migration's verification, resumable per unit from the migration's ledger.

A verification is two job runs on the migration's ledger (`job_ledger`), like the copy:

* ``migrate-verify`` reads the source in scan units and compares each derived item with the
  destination (`lsiorm._migration.table_copy.VerifyKind`); it may run on an executor;
* ``migrate-extra`` then reads the destination for items that no source item derives
  (`lsiorm._migration.table_copy.ExtraKind`). It runs in this process: an item whose derivation
  changed its source key is recognized from the set of such derived keys (`moved_keys`), which
  is read from the source here when the first run counted any.

Each unit keeps its counts and its findings with its position, in the ledger: the source keys
of the items it found missing or different, the destination keys of the extra ones (up to
`FINDINGS` keys of each kind per unit; past that, the counts alone). A verification that
stopped resumes its units where they are; either way the report is made from the units in the
ledger (`findings_of`, pure), so a resumed verification reports what an uninterrupted one does.

**Which run a call resumes.** A verification is an *epoch* of the migration
(`MigrationState.verify_epoch`), part of its runs' declarations, hence of their fingerprints.
A call that verifies begins a new epoch unless one is in progress (`MigrationState.verifying`):
the tables have changed since the last verification ended (more writes, more changes caught
up), so its findings are stale and nothing of it may count again; but a verification that
stopped is resumed, with the stream positions of its start (which a clean verification records
as `MigrationState.verified_from`: every change it may have missed is after them). A run that is
done is read back by its job id, kept in the state, and never opened again (opening a done run
starts a new one). When a new epoch begins, the runs of the one before are deleted from the
ledger.

Then the re-check: with writers running, an item may differ only because its latest change is
not caught up yet, so the items found are read again after a catch-up pass, up to `RECHECKS`
times, before they are reported.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lsiorm._jobs.budget import RateBudget
from lsiorm._jobs.engine import JobKind, JobRun, PageSource, digest, run_units, scan_pages
from lsiorm._jobs.ledger import JobRecord, UnitRecord
from lsiorm._jobs.resumable import DONE, Position, json_av, key_of
from lsiorm._jobs.scans import ScanSpec
from lsiorm._jobs.units import Unit
from lsiorm._migration.catch_up import drain, shard_positions
from lsiorm._migration.plan import VerifyReport
from lsiorm._migration.run import Migration, delete_runs, job_ledger, run_declaration
from lsiorm._migration.stream_replay import ShardPage, read_shard, shard_order
from lsiorm._migration.table_copy import ExtraKind, VerifyKind, derive_item, moved_from
from lsiorm._model.schema import Table
from lsiorm._model.wire import WireItem, from_wire, same_item
from lsiorm._ops.pipeline import Context, call
from lsiorm._ops.reserved import NAMESPACE, reserved_partition
from lsiorm._ops.steps import Operation
from lsiorm._ops.stream_pages import describe_shards
from lsiorm.errors import JobError

__all__ = [
    "EXAMPLES",
    "RECHECKS",
    "Findings",
    "findings_of",
    "keep_verify",
    "moved_keys",
    "verify",
    "verify_touched",
]

#: How often items that differ are read again (after a catch-up pass) before they are reported.
RECHECKS = 3
#: Items and examples shown per kind of difference.
EXAMPLES = 20
#: The kinds of finding, in the order the report gives them.
KINDS = ("missing", "different", "extra")


# -- what the units found (pure) ----------------------------------------------------------------


@dataclass
class Findings:
    """A verification's units added up: the counts (``report``), the keys kept per kind of
    finding (source keys for ``missing`` and ``different``, destination keys for ``extra``; by
    digest, in the units' order) and how many of each kind were found past the keys kept."""

    report: VerifyReport
    keys: dict[str, dict[str, WireItem]] = field(default_factory=dict)
    beyond: dict[str, int] = field(default_factory=dict)


def findings_of(sources: Sequence[UnitRecord], extras: Sequence[UnitRecord]) -> Findings:
    """Add up the units of a verification's two runs (as the ledger holds them)."""
    counts: dict[str, int] = {}
    keys: dict[str, dict[str, WireItem]] = {kind: {} for kind in KINDS}
    kept: dict[str, int] = dict.fromkeys(KINDS, 0)
    for unit in (*sources, *extras):
        for name, value in unit.counts.items():
            counts[name] = counts.get(name, 0) + value
        for kind in KINDS:
            noted = unit.notes.get(kind, ())
            kept[kind] += len(noted)
            keys[kind].update((digest(k), dict(k)) for k in noted)
    report = VerifyReport(
        source=counts.get("source", 0),
        matched=counts.get("matched", 0),
        missing=counts.get("missing", 0),
        different=counts.get("different", 0),
        extra=counts.get("extra", 0),
        unmatched=counts.get("unmatched", 0),
        source_checksum=counts.get("source_checksum", 0),
        destination_checksum=counts.get("destination_checksum", 0),
    )
    beyond = {kind: max(0, counts.get(kind, 0) - kept[kind]) for kind in KINDS}
    return Findings(report, keys, beyond)


# -- the runs -----------------------------------------------------------------------------------


def _epoch(m: Migration) -> Operation[dict[str, Any]]:
    """The verification in progress, or a new one: its epoch, the stream positions at its
    start, the ids of its runs done (``jobs``, by kind) and of every run it opened (``runs``:
    a cancelled run is replaced by a new one when opened again)."""
    if m.state.verifying is None:
        before = m.state.verify_epoch
        m.state.verify_epoch += 1
        start = yield from shard_positions(m)
        m.state.verifying = {
            "epoch": m.state.verify_epoch,
            "start": start,
            "jobs": {},
            "runs": [],
        }
        old, m.state.verify_jobs = m.state.verify_jobs, []
        yield from m.store.save(m.state)
        if before:
            declarations = [
                run_declaration(m, k, before) for k in ("migrate-verify", "migrate-extra")
            ]
            yield from delete_runs(m, old, declarations)
    return m.state.verifying


def _source_spec(m: Migration) -> ScanSpec:
    return ScanSpec(m.source, None, None, m.segments, page_size=m.page_size)


def _run(
    m: Migration,
    kind: str,
    spec: ScanSpec,
    kind_for: Any,
    pages: PageSource,
    *,
    here: bool,
) -> Operation[JobRecord | None]:
    """Run (or resume, or read back) one run of the verification in progress; None when the
    run was only opened (``detach``)."""
    verifying = m.state.verifying
    assert verifying is not None
    ledger = job_ledger(m)
    done = verifying["jobs"].get(kind)
    if done is not None:
        return (yield from ledger.job(done))
    run = JobRun(
        run_declaration(m, kind, verifying["epoch"]),
        m.options.units(spec),
        kind_for,
        pages,
        m.options.rate(),
    )
    runs: list[str] = verifying.setdefault("runs", [])
    if here:
        record, _ = yield from run_units(
            m.ctx, ledger, run, concurrency=m.options.concurrency, clock=m.options.clock
        )
    else:
        record, _ = yield from m.options.run(m.ctx, ledger, run, None)
    if record.id not in runs:  # every run of the epoch, to delete them with it
        runs.append(record.id)
        yield from m.store.save(m.state)
    if m.options.detach and record.state != "done":
        return None
    if record.state != "done":
        # Cancelled while it ran (`lsiorm jobs ... cancel`): the next call verifies afresh.
        m.state.verifying = None
        m.state.verify_jobs = list(runs)
        yield from m.store.save(m.state)
        raise JobError(
            "migrate.verify-cancelled",
            f"The verification's run {record.id} was {record.state}; run the migration again "
            "to verify afresh.",
            job=record.id,
        )
    verifying["jobs"][kind] = record.id
    yield from m.store.save(m.state)
    return record


def moved_keys(m: Migration, units: Sequence[Unit]) -> Operation[frozenset[str]]:
    """The digests of the derived keys of the source items (of ``units``) whose derivation
    changed their source key: the destination items the scan for extras cannot find in the
    source by the key they carry."""
    pages = scan_pages(_source_spec(m), skip=reserved_partition(m.source))
    moved: set[str] = set()
    for unit in units:
        position: Position = None
        while position != DONE:
            page = yield from pages(m.ctx, unit, position)
            for item in page.items:
                derived = derive_item(m.table, item).item
                if derived is not None and moved_from(m.source, item, derived):
                    moved.add(digest(key_of(m.table, derived)))
            position = page.position
    return frozenset(moved)


def _units(
    m: Migration,
) -> Operation[tuple[dict[str, Any], JobRecord, JobRecord] | None]:
    """Run the verification's two runs (or resume them); None when only opened."""
    verifying = yield from _epoch(m)
    spec = _source_spec(m)

    def verify_for(unit_ctx: Context, budget: RateBudget) -> JobKind[Any]:
        return VerifyKind(unit_ctx, m.source, m.table)

    pages = scan_pages(spec, skip=reserved_partition(m.source))
    sources = yield from _run(m, "migrate-verify", spec, verify_for, pages, here=False)
    if sources is None or m.options.detach:
        return None
    moved = frozenset[str]()
    if "migrate-extra" not in verifying["jobs"]:
        units = [u.unit for u in sources.units if u.counts.get("moved")]
        moved = yield from moved_keys(m, units)
    dest_spec = ScanSpec(m.table, None, None, m.segments, page_size=m.page_size)

    def extra_for(unit_ctx: Context, budget: RateBudget) -> JobKind[Any]:
        return ExtraKind(unit_ctx, m.source, m.table, moved)

    dest_pages = scan_pages(dest_spec, skip={"S": NAMESPACE})
    extras = yield from _run(m, "migrate-extra", dest_spec, extra_for, dest_pages, here=True)
    assert extras is not None
    return verifying, sources, extras


# -- the verification ---------------------------------------------------------------------------


def verify(m: Migration) -> Operation[VerifyReport | None]:
    """Compare the destination with the derived source, then re-check what differs after
    catching up (see the module docstring). None when ``detach`` only opened its run."""
    ran = yield from _units(m)
    if ran is None:
        return None
    verifying, sources, extras = ran
    found = findings_of(sources.units, extras.units)
    report = found.report
    differing = {**found.keys["missing"], **found.keys["different"]}
    extra = found.keys["extra"]
    for _ in range(RECHECKS):
        if not differing and not extra:
            break
        yield from drain(m)
        differing, extra = yield from _recheck(m, differing, extra, verifying["start"])
    report.missing, report.different = found.beyond["missing"], found.beyond["different"]
    for key in differing.values():
        outcome = yield from _compare(m, key)
        if outcome == "missing":
            report.missing += 1
        elif outcome == "different":
            report.different += 1
        else:
            continue
        report.examples.setdefault(outcome, [])
        if len(report.examples[outcome]) < EXAMPLES:
            report.examples[outcome].append(_plain(key))
    report.extra = len(extra) + found.beyond["extra"]
    if extra:
        report.examples["extra"] = [_plain(k) for k in list(extra.values())[:EXAMPLES]]
    report.matched = report.source - report.unmatched - report.missing - report.different
    m.state.verified_from = verifying["start"] if report.clean else None
    m.state.verifying = None
    m.state.verify_jobs = list(verifying.get("runs") or verifying["jobs"].values())
    yield from keep_verify(m, report)
    return report


def keep_verify(m: Migration, report: VerifyReport) -> Operation[None]:
    """Keep a verification's summary and examples in the state."""
    m.state.verify = {
        "clean": report.clean,
        "source": report.source,
        "matched": report.matched,
        "missing": report.missing,
        "different": report.different,
        "extra": report.extra,
        "examples": json_av(report.examples),
    }
    yield from m.store.save(m.state)


#: How many changed keys `verify_touched` remembers having checked, so that a key changed many
#: times is read once (past that, a key may be checked again: the counts say checks).
CHECKED_KEYS = 100_000


def _stream_pages(
    m: Migration, since: Mapping[str, str | None], on_page: Callable[[ShardPage], Operation[bool]]
) -> Operation[None]:
    """Hand every page of the stream after positions ``since`` to ``on_page``: each shard
    after its position there (a shard not there, one that split off since, from its oldest
    record), parents before children, to its newest record. Nothing is kept between pages."""
    _, shards = yield from describe_shards(m.ctx, m.state.stream_arn)
    for shard in shard_order(shards):
        yield from read_shard(
            m.ctx,
            m.state.stream_arn,
            shard.id,
            since.get(shard.id),
            on_page,
            closed=shard.closed,
            tables=(m.source,),
        )


def verify_touched(m: Migration, since: Mapping[str, str | None]) -> Operation[VerifyReport]:
    """Compare the items the stream changed after positions ``since`` (those of a clean
    verification's start): each source item now against the destination, and every
    destination key its changes derived must hold it or nothing.

    The stream is read a page at a time and each page's keys are checked then (a key is
    checked once while `CHECKED_KEYS` keys are remembered), so memory does not grow with the
    number of changed items. ``source`` counts the changed keys checked
    (``report.changed_only``)."""
    report = VerifyReport(changed_only=True)
    checked: OrderedDict[str, None] = OrderedDict()

    def on_page(page: ShardPage) -> Operation[bool]:
        keys: dict[str, WireItem] = {}  # source key digest -> source key, this page's
        derived: dict[str, dict[str, WireItem]] = {}  # ... -> destination keys it derived
        for record in page.records:
            name = digest(record.keys)
            keys[name] = record.keys
            for image in (record.old, record.new):
                item = derive_item(m.table, image).item if image is not None else None
                if item is not None:
                    key = key_of(m.table, item)
                    derived.setdefault(name, {})[digest(key)] = key
        for name, source_key in keys.items():
            if name in checked:
                checked.move_to_end(name)
                continue
            checked[name] = None
            if len(checked) > CHECKED_KEYS:
                checked.popitem(last=False)
            yield from _check_changed(m, report, source_key, derived.get(name, {}))
        return True

    yield from _stream_pages(m, since, on_page)
    report.examples = {k: v[:EXAMPLES] for k, v in report.examples.items()}
    return report


def _check_changed(
    m: Migration, report: VerifyReport, source_key: WireItem, derived: Mapping[str, WireItem]
) -> Operation[None]:
    """Check one changed source item: it now against the destination, and each destination key
    its changes derived (other than its current one) holds nothing."""
    report.source += 1
    outcome = yield from _compare(m, source_key)
    item = yield from _get(m, m.source, source_key)
    now = derive_item(m.table, item).item if item is not None else None
    current = digest(key_of(m.table, now)) if now is not None else None
    for other, key in derived.items():
        if other != current and (yield from _get(m, m.table, key)) is not None:
            report.extra += 1
            report.examples.setdefault("extra", []).append(_plain(key))
    if outcome == "matched":
        report.matched += 1
        return
    setattr(report, outcome, getattr(report, outcome) + 1)
    report.examples.setdefault(outcome, []).append(_plain(source_key))


def sources_deriving(
    m: Migration, since: Mapping[str, str | None], wanted: Mapping[str, WireItem]
) -> Operation[dict[str, list[WireItem]]]:
    """The source keys whose changes after positions ``since`` derived one of the destination
    keys ``wanted`` (by digest): read from the stream a page at a time, keeping only what
    matches (memory bounded by ``wanted``)."""
    found: dict[str, list[WireItem]] = {}

    def on_page(page: ShardPage) -> Operation[bool]:
        for record in page.records:
            for image in (record.old, record.new):
                item = derive_item(m.table, image).item if image is not None else None
                if item is None:
                    continue
                name = digest(key_of(m.table, item))
                if name in wanted:
                    mine = found.setdefault(name, [])
                    if record.keys not in mine:
                        mine.append(dict(record.keys))
        return True
        yield  # a generator: nothing to send

    yield from _stream_pages(m, since, on_page)
    return found


def _plain(key: Mapping[str, Any]) -> dict[str, Any]:
    return {k: from_wire(v) for k, v in key.items()}


def _get(m: Migration, table: Table, key: Mapping[str, Any]) -> Operation[WireItem | None]:
    params = {"TableName": table.name, "Key": dict(key), "ConsistentRead": True}
    response = yield from call(m.ctx, "GetItem", params, (table,))
    found: WireItem | None = response.get("Item")
    return found


def _compare(m: Migration, source_key: Mapping[str, Any]) -> Operation[str]:
    """``"matched"``, ``"missing"`` or ``"different"``: one source item (read now, consistently)
    against the destination; a source item gone counts as matched when its destination is."""
    item = yield from _get(m, m.source, source_key)
    if item is None:
        return "matched"
    derived = derive_item(m.table, item).item
    if derived is None:
        return "matched"
    there = yield from _get(m, m.table, key_of(m.table, derived))
    if there is None:
        return "missing"
    return "matched" if same_item(there, derived) else "different"


def _recheck(
    m: Migration,
    differing: dict[str, WireItem],
    extra: dict[str, WireItem],
    since: Mapping[str, str | None],
) -> Operation[tuple[dict[str, WireItem], dict[str, WireItem]]]:
    """The source keys that still differ, and the destination keys still extra.

    A destination item is not extra when a source item derives it now: the one at the source
    key the destination item carries, or, for a key no source item derived when the
    verification read the source (a change since, to a field the keys derive from), one the
    stream names after the verification's start (`sources_deriving`)."""
    still: dict[str, WireItem] = {}
    for name, key in differing.items():
        outcome = yield from _compare(m, key)
        if outcome != "matched":
            still[name] = key
    left: dict[str, WireItem] = {}
    for name, key in extra.items():
        there = yield from _get(m, m.table, key)
        if there is None:
            continue
        if (yield from _derives(m, key_of(m.source, there), name)):
            continue
        left[name] = key
    if left:
        named = yield from sources_deriving(m, since, left)
        for name, sources in named.items():
            for source_key in sources:
                if (yield from _derives(m, source_key, name)):
                    left.pop(name, None)
                    break
    return still, left


def _sort(table: Table) -> tuple[str, ...]:
    return (table.sort_key.name,) if table.sort_key else ()


def _derives(m: Migration, source_key: Mapping[str, Any], name: str) -> Operation[bool]:
    """Whether the source item at ``source_key`` (read now) derives the destination key whose
    digest is ``name``."""
    source = m.source
    if any(k not in source_key for k in (source.partition_key.name, *_sort(source))):
        return False
    item = yield from _get(m, m.source, source_key)
    derived = derive_item(m.table, item).item if item is not None else None
    return derived is not None and digest(key_of(m.table, derived)) == name
