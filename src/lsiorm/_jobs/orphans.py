"""Collecting orphaned S3 objects: the offloaded values no item of a table references any more.

A write never deletes an object (another item may reference the same content, and a write whose
item failed cannot know whether it landed), so overwrites, deletes and failed writes leave
objects behind. `collect_orphans` finds and deletes them in two runs on the job engine, each
resumable from the ledger and paced by the rate budget like every key job:

1. **Mark**: a consistent scan of the table, in segments, reads every item as stored (the
   envelopes, not the values) and writes the digests its references name to S3, one small
   object per page, grouped by the digest's first hex digit (``<prefix><table>/.lsiorm-marks/
   <run>/<digit>/...``).
2. **Sweep**: sixteen units, one per first hex digit of the table's objects
   (``<prefix><table>/<digit>...``), list the objects page by page and delete each one that no
   mark names and that is older than the *cutoff*: the mark run's start minus the keyring's
   grace period. Then the marks are deleted.

Why no object still referenced is deleted, even with writers running (docs/security.md has the
whole argument): an item written before the mark scan reaches its place is marked; one written
after had its object put at most half the grace period (plus one request) before its item
(`lsiorm._ops.protection` seals a request again, putting its objects again, once its sealed
form is older than that), so the object is younger than the cutoff and kept. Moves (a re-key,
a migration) seal the moved value again, which puts its object again. A run that stops is taken
up by the next call: an unfinished sweep first, else the mark run, which resumes where it was.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final

from lsiorm._jobs.budget import RateBudget
from lsiorm._jobs.engine import JobRun, PageRead, PageSource
from lsiorm._jobs.ledger import RESUMABLE
from lsiorm._jobs.options import JobOptions
from lsiorm._jobs.resumable import DONE, JobProgress, Position, WireItem
from lsiorm._jobs.scans import ScanSpec
from lsiorm._jobs.units import ScanUnit, Unit
from lsiorm._model.protection import table_protection
from lsiorm._model.schema import Table
from lsiorm._model.sealing import Binding, is_envelope, parse_envelope
from lsiorm._ops.pipeline import Context
from lsiorm._ops.protection import S3, service_call
from lsiorm._ops.steps import Operation
from lsiorm.errors import ConfigurationError, ProtectionError, ValidationError

__all__ = ["OrphanReport", "collect_orphans"]

_DIGITS: Final = "0123456789abcdef"
_DIGEST: Final = re.compile(r"[0-9a-f]{64}")
#: The folder of a table's objects that holds the marks of its collections.
MARKS: Final = ".lsiorm-marks"


@dataclass
class OrphanReport:
    """What a collection of orphaned objects did.

    ``references``: references read in the table (one per item and offloaded value);
    ``objects``: objects listed; ``referenced``: those a reference names; ``young``: those no
    reference names, kept because they are younger than ``cutoff`` (seconds since the epoch:
    the mark run's start minus the grace period); ``deleted``: the orphans deleted (a dry run
    deletes none and counts them in ``orphans``). ``mark_job`` and ``sweep_job`` name the runs
    in the ledger.
    """

    table: str
    bucket: str
    prefix: str
    dry_run: bool = False
    references: int = 0
    objects: int = 0
    referenced: int = 0
    young: int = 0
    orphans: int = 0
    deleted: int = 0
    cutoff: float = 0.0
    mark_job: str | None = None
    sweep_job: str | None = None
    resumed: bool = False
    notes: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        verb = "would delete" if self.dry_run else "deleted"
        return (
            f"Orphaned objects of {self.table!r} in s3://{self.bucket}/{self.prefix}: "
            f"{self.objects} listed, {self.referenced} referenced, {self.young} too young to "
            f"tell, {verb} {self.orphans if self.dry_run else self.deleted} "
            f"({self.references} references in the table)"
        )


def _marks_prefix(table_prefix: str, run: str) -> str:
    return f"{table_prefix}{MARKS}/{run}/"


@dataclass
class _Part:
    counts: dict[str, int] = field(default_factory=dict)
    digests: set[str] = field(default_factory=set)

    def add(self, name: str, n: int = 1) -> None:
        self.counts[name] = self.counts.get(name, 0) + n


class MarkKind:
    """The mark run's kind: the digests an item's references name, written per page."""

    def __init__(
        self, ctx: Context, table: Table, bucket: str, marks: str, specs: Sequence[str]
    ) -> None:
        self.ctx = ctx
        self.table = table
        self.bucket = bucket
        self.marks = marks
        self.attributes = tuple(specs)
        self.token = uuid.uuid4().hex[:12]
        self.pages = 0

    def new_part(self) -> _Part:
        return _Part()

    def intent(self, items: Sequence[WireItem]) -> dict[str, Any]:
        return {}

    def visit(self, part: _Part, item: WireItem, recovered: dict[str, Any]) -> Operation[object]:
        for attr in self.attributes:
            av = item.get(attr)
            if av is None or not is_envelope(av):
                continue
            try:
                envelope = parse_envelope(av["B"], Binding(self.table.name, {}, attr))
            except ProtectionError:
                part.add("unreadable")
                continue
            if envelope.is_reference:
                part.digests.add(envelope.digest.hex())
                part.add("references")
        return None
        yield  # a generator, as every kind's visit is

    def end_page(self, part: _Part) -> Operation[None]:
        """Write the page's digests, one object per first digit, before the page is
        committed: a page read again writes its marks again, under another name."""
        self.pages += 1
        by_digit: dict[str, list[str]] = {}
        for digest in sorted(part.digests):
            by_digit.setdefault(digest[0], []).append(digest)
        for digit, digests in by_digit.items():
            params = {
                "Bucket": self.bucket,
                "Key": f"{self.marks}{digit}/{self.token}-{self.pages:08d}",
                "Body": "\n".join(digests).encode(),
            }
            yield from service_call(self.ctx.retry, S3, "PutObject", params)

    def settle(self, part: _Part, recovered: dict[str, Any]) -> Operation[None]:
        return
        yield

    def counts(self, part: _Part) -> dict[str, int]:
        return dict(part.counts)

    def notes(self, part: _Part) -> dict[str, list[Any]]:
        return {}

    def changed(self, counts: Mapping[str, int]) -> int:
        return 0

    def carry(self) -> dict[str, Any]:
        return {}

    def restore(self, carry: Mapping[str, Any]) -> None:
        return None


def _list(
    ctx: Context, bucket: str, prefix: str, after: str | None, page_size: int
) -> Operation[dict[str, Any]]:
    params: dict[str, Any] = {"Bucket": bucket, "Prefix": prefix, "MaxKeys": page_size}
    if after is not None:
        params["StartAfter"] = after
    return (yield from service_call(ctx.retry, S3, "ListObjectsV2", params))


def sweep_pages(bucket: str, prefix: str, page_size: int) -> PageSource:
    """The pages of a sweep unit: the objects whose digest starts with the unit's digit."""

    def page(ctx: Context, unit: Unit, position: Position) -> Operation[PageRead]:
        assert isinstance(unit, ScanUnit)
        found = position.get("after") if isinstance(position, Mapping) else None
        after = str(found["S"]) if isinstance(found, Mapping) else None
        digit_prefix = f"{prefix}{_DIGITS[unit.segment]}"
        response = yield from _list(ctx, bucket, digit_prefix, after, page_size)
        items: list[WireItem] = []
        for entry in response.get("Contents") or ():
            modified = entry.get("LastModified")
            stamp = modified.timestamp() if hasattr(modified, "timestamp") else float(modified)
            items.append({"key": {"S": entry["Key"]}, "modified": {"N": repr(stamp)}})
        last = items[-1]["key"]["S"] if items else after
        more = bool(response.get("IsTruncated")) and last is not None
        position_after: Position = {"after": {"S": str(last)}} if more else DONE
        return PageRead(items, position_after, len(items))

    return page


class SweepKind:
    """The sweep run's kind: delete each listed object no mark names and older than the
    cutoff (or count it, in a dry run)."""

    def __init__(
        self,
        ctx: Context,
        budget: RateBudget | None,
        bucket: str,
        marks: str,
        cutoff: float,
        dry_run: bool,
    ) -> None:
        self.ctx = ctx
        self.budget = budget
        self.bucket = bucket
        self.marks = marks
        self.cutoff = cutoff
        self.dry_run = dry_run
        self.marked: dict[str, set[str]] = {}

    def new_part(self) -> _Part:
        return _Part()

    def intent(self, items: Sequence[WireItem]) -> dict[str, Any]:
        return {}

    def _marks(self, digit: str) -> Operation[set[str]]:
        found = self.marked.get(digit)
        if found is not None:
            return found
        digests: set[str] = set()
        after: str | None = None
        while True:
            listed = yield from _list(self.ctx, self.bucket, f"{self.marks}{digit}/", after, 1000)
            entries = listed.get("Contents") or ()
            for entry in entries:
                got = yield from service_call(
                    self.ctx.retry, S3, "GetObject", {"Bucket": self.bucket, "Key": entry["Key"]}
                )
                digests.update(bytes(got.get("Body", b"")).decode().split())
            if not listed.get("IsTruncated") or not entries:
                break
            after = entries[-1]["Key"]
        self.marked[digit] = digests
        return digests

    def visit(self, part: _Part, item: WireItem, recovered: dict[str, Any]) -> Operation[object]:
        key = item["key"]["S"]
        digest = key.rsplit("/", 1)[-1]
        if not _DIGEST.fullmatch(digest):
            part.add("foreign")
            return None
        part.add("objects")
        marked = yield from self._marks(digest[0])
        if digest in marked:
            part.add("referenced")
            return None
        if float(item["modified"]["N"]) >= self.cutoff:
            part.add("young")
            return None
        part.add("orphans")
        if self.dry_run:
            return None
        if self.budget is not None:
            yield from self.budget.take_write(1.0)
        yield from service_call(
            self.ctx.retry, S3, "DeleteObject", {"Bucket": self.bucket, "Key": key}
        )
        part.add("deleted")
        return None

    def end_page(self, part: _Part) -> Operation[None]:
        return
        yield

    def settle(self, part: _Part, recovered: dict[str, Any]) -> Operation[None]:
        return
        yield

    def counts(self, part: _Part) -> dict[str, int]:
        return dict(part.counts)

    def notes(self, part: _Part) -> dict[str, list[Any]]:
        return {}

    def changed(self, counts: Mapping[str, int]) -> int:
        return counts.get("deleted", 0)

    def carry(self) -> dict[str, Any]:
        return {}

    def restore(self, carry: Mapping[str, Any]) -> None:
        return None


def _drop_marks(ctx: Context, bucket: str, marks: str) -> Operation[int]:
    """Delete a mark run's marks (once its sweep is done); return how many."""
    dropped = 0
    while True:
        listed = yield from _list(ctx, bucket, marks, None, 1000)
        entries = listed.get("Contents") or ()
        if not entries:
            return dropped
        keys = [{"Key": entry["Key"]} for entry in entries]
        params = {"Bucket": bucket, "Delete": {"Objects": keys, "Quiet": True}}
        yield from service_call(ctx.retry, S3, "DeleteObjects", params)
        dropped += len(keys)


def collect_orphans(
    ctx: Context,
    table: Table,
    options: JobOptions,
    *,
    segments: int = 4,
    dry_run: bool = False,
    page_size: int | None = None,
    progress: Callable[[JobProgress], object] | None = None,
) -> Operation[OrphanReport]:
    """Find the objects of ``table``'s offloaded values that no item references, and delete
    those older than the cutoff (see the module). A dry run deletes none."""
    protection = ctx.protection
    if protection is None or protection.keyring.bucket is None:
        raise ConfigurationError(
            "orphans.no-bucket",
            "Collecting orphaned objects needs a session whose keyring names the bucket.",
        )
    if options.executor is not None or options.detach:
        raise ValidationError(
            "orphans.executor",
            "collect_orphans runs its units in this process (threads); it takes no executor= "
            "or detach=.",
            table=table.name,
        )
    attributes = [a for a, spec in table_protection(table).items() if spec.offloaded]
    keyring = protection.keyring
    bucket = keyring.bucket
    assert bucket is not None
    objects = f"{keyring.prefix}{table.name}/"
    report = OrphanReport(table.name, bucket, objects, dry_run=dry_run)
    raw = replace(ctx, protection=None)  # the mark scan reads references, not the values
    ledger = options.ledger_for(ctx, table, writes=not dry_run)
    live = ctx.live_name(table)
    sweep: Mapping[str, Any] | None = None
    for job in (yield from ledger.jobs()):
        declared = job.declaration
        if job.kind == "offload-sweep" and job.state in RESUMABLE and declared.get("table") == live:
            sweep, report.resumed = declared, True
            break
    if sweep is None:
        spec = ScanSpec(table, segments=segments, consistent=True, page_size=page_size)
        declaration = {
            "kind": "offload-mark",
            "table": live,
            "bucket": bucket,
            "objects": objects,
            "attributes": sorted(attributes),
            "segments": segments,
            "dry_run": dry_run,
        }
        token: dict[str, str] = {}

        def mark_kind(ctx: Context, budget: RateBudget) -> MarkKind:
            return MarkKind(ctx, table, bucket, token["marks"], attributes)

        run = JobRun(
            declaration, options.units(spec), mark_kind, options.pages(spec), options.rate()
        )
        job, resumed = yield from ledger.open(run.declaration, run.units, run.rate)
        token["marks"] = _marks_prefix(objects, job.id)
        report.resumed = resumed
        record, _ = yield from options.run(raw, ledger, run, progress)
        report.mark_job = record.id
        report.references = record.counts().get("references", 0)
        sweep = {
            "kind": "offload-sweep",
            "table": live,
            "bucket": bucket,
            "objects": objects,
            "marks": token["marks"],
            "mark_job": record.id,
            "cutoff": record.created - keyring.grace_seconds,
            "dry_run": dry_run,
        }
    marks, cutoff = str(sweep["marks"]), float(sweep["cutoff"])
    report.cutoff, report.mark_job = cutoff, str(sweep["mark_job"])

    def sweep_kind(ctx: Context, budget: RateBudget) -> SweepKind:
        return SweepKind(ctx, budget, bucket, marks, cutoff, dry_run)

    units = tuple(ScanUnit(n, len(_DIGITS)) for n in range(len(_DIGITS)))
    pages = sweep_pages(bucket, objects, page_size or 1000)
    sweeping = JobRun(sweep, units, sweep_kind, pages, options.rate())
    record, _ = yield from options.run(raw, ledger, sweeping, progress)
    counts = record.counts()
    report.sweep_job = record.id
    report.objects = counts.get("objects", 0)
    report.referenced = counts.get("referenced", 0)
    report.young = counts.get("young", 0)
    report.orphans = counts.get("orphans", 0)
    report.deleted = counts.get("deleted", 0)
    if record.state == "done":
        yield from _drop_marks(raw, bucket, marks)
    return report
