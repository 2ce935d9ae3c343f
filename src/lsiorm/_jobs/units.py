"""Work units: the pieces a key job (or a table copy) is cut into, as plain values.

A job reads its items in units that any worker can run, in any order, on any machine:

* `ScanUnit`: one segment of a parallel Scan (``segment`` of ``total_segments``), or the one
  Query of a partition (``partition``, a wire value);
* `ExportUnit`: one data file of a DynamoDB export to S3 (``file``, a local path or an
  ``s3://`` URL, and the item count its manifest gives).

A unit says *what* to read, never how far it got: the position it resumes from lives in the
ledger (`lsiorm._jobs.ledger`), so a unit handed to a worker a second time, or taken over from
a dead one, resumes where the last commit left it. Units are frozen, picklable (process pools,
Dask) and turn into JSON and back (`unit_to_json`, `unit_from_json`: a Step Functions map
state passes JSON).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lsiorm.errors import ValidationError

__all__ = ["ExportUnit", "ScanUnit", "Unit", "scan_units", "unit_from_json", "unit_to_json"]


@dataclass(frozen=True)
class ScanUnit:
    """One segment of a parallel scan, or (with ``partition``) the query of one partition."""

    segment: int = 0
    total_segments: int = 1
    partition: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if not 0 <= self.segment < self.total_segments <= 1_000_000:
            raise ValidationError(
                "jobs.unit",
                f"Segment {self.segment} of {self.total_segments}: a scan has 1 to 1,000,000 "
                "segments, numbered from 0.",
            )

    @property
    def id(self) -> str:
        """The unit's name in the ledger: ``scan-00003-of-00040`` (``query`` for a partition)."""
        if self.partition is not None:
            return "query"
        width = max(5, len(str(self.total_segments)))
        return f"scan-{self.segment:0{width}d}-of-{self.total_segments:0{width}d}"

    def __hash__(self) -> int:
        return hash(self.id)


@dataclass(frozen=True)
class ExportUnit:
    """One data file of a DynamoDB export (DYNAMODB_JSON, gzip): a local path or an S3 URL."""

    file: str
    items: int | None = None

    @property
    def id(self) -> str:
        """The unit's name in the ledger: the file's name and a digest of its whole path."""
        digest = hashlib.sha256(self.file.encode()).hexdigest()[:12]
        return f"export-{self.file.rsplit('/', 1)[-1].split('.')[0]}-{digest}"


Unit = ScanUnit | ExportUnit


def scan_units(segments: int, partition: Mapping[str, Any] | None = None) -> tuple[ScanUnit, ...]:
    """The units of a scan in ``segments`` segments, or the one unit of a partition."""
    if partition is not None:
        return (ScanUnit(0, 1, dict(partition)),)
    return tuple(ScanUnit(n, segments) for n in range(segments))


def unit_to_json(unit: Unit) -> dict[str, Any]:
    """A unit as JSON-able data (`unit_from_json` reads it back)."""
    if isinstance(unit, ScanUnit):
        data: dict[str, Any] = {"kind": "scan", "segment": unit.segment}
        data["total_segments"] = unit.total_segments
        if unit.partition is not None:
            data["partition"] = json.loads(json.dumps(unit.partition))
        return data
    return {"kind": "export", "file": unit.file, "items": unit.items}


def unit_from_json(data: Mapping[str, Any]) -> Unit:
    """Read a unit written by `unit_to_json`; a ValidationError(``jobs.unit``) otherwise."""
    try:
        if data["kind"] == "scan":
            partition = data.get("partition")
            return ScanUnit(int(data["segment"]), int(data["total_segments"]), partition)
        if data["kind"] == "export":
            items = data.get("items")
            return ExportUnit(str(data["file"]), None if items is None else int(items))
    except (KeyError, TypeError, ValueError) as exc:
        raise ValidationError("jobs.unit", f"Not a work unit: {dict(data)!r} ({exc}).") from exc
    raise ValidationError("jobs.unit", f"Not a work unit: {dict(data)!r}.")
