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

from lsiorm._jobs.pacing import hot_partitions, throttled_resources
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
    "throttle_lines",
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
    #: Items moved whose delete of the original lost its answer (the connection dropped
    #: after DynamoDB applied it): the copy is the item as the job read it, and an attribute
    #: no model declares that a writer added to the original in the instant before the
    #: delete is not in it. DynamoDB cannot say whether there was one. Moves only.
    unverified: int = 0
    #: The stored keys of the items given up on, and why.
    failed: list[tuple[dict[str, Any], str]] = field(default_factory=list)
    #: Seconds the run took.
    elapsed: float = 0.0
    #: The run in the ledger.
    job: str | None = None
    #: Whether this call resumed a run that had stopped.
    resumed: bool = False
    #: The throttles the run met, by resource and DynamoDB's reason, most first:
    #: ``{"Orders TableWriteKeyRangeThroughputExceeded": 12}`` (a cancelled transaction's
    #: throttled action by its code, ``ThrottlingError``; a throttle without reasons by its
    #: error code).
    throttled: dict[str, int] = field(default_factory=dict)
    #: The partition keys DynamoDB throttled as hot (key-range throttles), with how many
    #: throttles each met, most first: ``{"Orders PK=USER#1": 12}``. Keys as stored in the
    #: table; never anything else of an item. At most 20 keys per unit are named.
    hot_partitions: dict[str, int] = field(default_factory=dict)


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
    report.throttled = throttled_resources(counts)
    report.hot_partitions = hot_partitions(counts)
    return counts


def throttle_lines(
    throttled: Mapping[str, int], hot: Mapping[str, int], most: int = 5
) -> list[str]:
    """A run's throttles in words: the throttled resources, then the hot partition keys."""
    lines = []
    if throttled:
        listed = ", ".join(f"{what} x{n}" for what, n in list(throttled.items())[:most])
        more = f" and {len(throttled) - most} more" if len(throttled) > most else ""
        lines.append(f"  throttled: {listed}{more}")
    if hot:
        listed = ", ".join(f"{key} ({n})" for key, n in list(hot.items())[:most])
        more = f" and {len(hot) - most} more" if len(hot) > most else ""
        lines.append(f"  hot partitions (throttles): {listed}{more}")
    return lines


def closing_lines(report: WriteJobReport) -> list[str]:
    """The last lines of a report's text: its first failed keys, its throttles, then its
    job."""
    lines = [f"    {key}: {why}" for key, why in report.failed[:10]]
    if report.unverified:
        lines.append(
            f"  moved, the original's delete unconfirmed (its answer lost): {report.unverified}"
        )
    lines += throttle_lines(report.throttled, report.hot_partitions)
    if report.job is not None and not report.dry_run:
        lines.append(f"  job: {report.job}")
    return lines
