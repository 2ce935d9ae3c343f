"""What a key job that writes keeps of each page: its counts, failed keys and priced writes.

The ledger keeps whole numbers only, so a page's priced writes go into its counts as thousandths
of a unit: ``units:`` for the table, ``units:<index>`` for each index. A run's report reads the
counts and notes of all its units back with `written_estimate` and `failed_keys`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from lsiorm._model.capacity import WriteEstimate

__all__ = ["TallyingKind", "WriteTally", "failed_keys", "written_estimate"]

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
