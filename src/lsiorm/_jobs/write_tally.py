"""What a key job that writes keeps of each page: its counts, failed keys and priced writes.

The ledger keeps whole numbers only, so a page's priced writes go into its counts as thousandths
of a unit: ``units:`` for the table, ``units:<index>`` for each index. A run's report reads the
counts and notes of all its units back with `written_estimate` and `failed_keys`; the
reports of these jobs share what such a run says in `WriteJobReport`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lsiorm._model.capacity import WriteEstimate

if TYPE_CHECKING:
    from lsiorm._jobs.ledger import JobRecord

__all__ = [
    "TallyingKind",
    "WriteJobReport",
    "WriteTally",
    "closing_lines",
    "failed_keys",
    "take_run",
    "written_estimate",
]

#: Capacity units go to the ledger as whole thousandths.
MILLI = 1000


@dataclass
class WriteTally:
    """One page's counts, failures (stored key and why) and priced writes."""

    counts: dict[str, int] = field(default_factory=dict)
    failed: list[list[Any]] = field(default_factory=list)
    estimate: WriteEstimate | None = None

    def add(self, name: str, value: int = 1) -> None:
        self.counts[name] = self.counts.get(name, 0) + value


class TallyingKind:
    """The counts and notes of a job kind whose pages are `WriteTally`s, as the ledger keeps
    them (the rest of the `JobKind` protocol is the kind's own)."""

    def counts(self, part: WriteTally) -> dict[str, int]:
        counts = dict(part.counts)
        if part.estimate is not None and part.estimate.total:
            counts["units:"] = round(part.estimate.table_units * MILLI)
            for name, units in part.estimate.per_index.items():
                counts[f"units:{name}"] = round(units * MILLI)
        return counts

    def notes(self, part: WriteTally) -> dict[str, list[Any]]:
        return {"failed": part.failed} if part.failed else {}


def written_estimate(table: str, counts: Mapping[str, int]) -> WriteEstimate:
    """The priced writes of a run, from its counts added up over its units."""
    per_index = {
        name[len("units:") :]: value / MILLI
        for name, value in counts.items()
        if name.startswith("units:") and name != "units:"
    }
    return WriteEstimate(
        table, counts.get("units:", 0) / MILLI, {k: v for k, v in per_index.items() if v}
    )


def failed_keys(notes: Iterable[Mapping[str, Any]]) -> list[tuple[dict[str, Any], str]]:
    """The failed keys (and why) that a run's units noted, in order."""
    return [(dict(key), str(why)) for note in notes for key, why in note.get("failed", ())]


@dataclass(kw_only=True)
class WriteJobReport:
    """What every key job that writes reports of its run, besides its own counts. Its counts
    are those of the whole run, across workers and resumes."""

    #: Nothing was written (the counts say what would have been).
    dry_run: bool = False
    #: Items read.
    scanned: int = 0
    #: Writes skipped because the item changed since it was read; each was read again and
    #: tried again.
    retried: int = 0
    #: Items another writer deleted (or moved) before this job could write them.
    gone: int = 0
    #: The stored keys of the items given up on, and why.
    failed: list[tuple[dict[str, Any], str]] = field(default_factory=list)
    #: Seconds the run took.
    elapsed: float = 0.0
    #: The run in the ledger.
    job: str | None = None
    #: Whether this call resumed a run that had stopped.
    resumed: bool = False


def take_run(
    report: WriteJobReport, record: JobRecord, resumed: bool, counters: Sequence[str]
) -> dict[str, int]:
    """Fill in a report's ``counters`` (added up over the run's units), failures, job and
    time from the run's ledger ``record``; return all the run's counts."""
    counts = record.counts()
    for name in counters:
        setattr(report, name, int(counts.get(name, 0)))
    report.failed.extend(failed_keys(u.notes for u in record.units))
    report.job, report.resumed, report.elapsed = record.id, resumed, record.elapsed
    return counts


def closing_lines(report: WriteJobReport) -> list[str]:
    """The last lines of a report's text: its first failed keys, then its job."""
    lines = [f"    {key}: {why}" for key, why in report.failed[:10]]
    if report.job is not None and not report.dry_run:
        lines.append(f"  job: {report.job}")
    return lines
