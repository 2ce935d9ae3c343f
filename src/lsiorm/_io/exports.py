"""A DynamoDB export to S3 (DYNAMODB_JSON, gzip) as the input of a key job, instead of a scan.

An export folder (``<prefix>/AWSDynamoDB/<ExportId>/``, in S3 or copied to a local folder)
holds ``manifest-summary.json`` (its item count and where the file manifest is),
``manifest-files.json`` (one JSON object a line, one per data file: ``dataFileS3Key``,
``itemCount``) and the data files, gzipped, one ``{"Item": {...}}`` a line in DynamoDB's JSON
form. Each data file is one work unit (`lsiorm._jobs.units.ExportUnit`); its position is the
number of lines done, so a unit resumes at the next line.

Reading an export uses no read capacity. An exported item may be older than the table's: the
jobs write each item on the condition that it is exactly as exported, so a stale export never
overwrites newer data (the job reads the item again and works on what is there now).
"""

from __future__ import annotations

import base64
import gzip
import io
import json
from collections.abc import Iterator, Mapping
from itertools import islice
from pathlib import Path
from typing import Any

from lsiorm._jobs.engine import PageRead
from lsiorm._jobs.options import ExportInput
from lsiorm._jobs.resumable import DONE, Position, WireItem
from lsiorm._jobs.units import ExportUnit, Unit
from lsiorm._ops.pipeline import Context
from lsiorm._ops.steps import Operation
from lsiorm.errors import ValidationError

__all__ = ["ExportFolder", "open_export"]

#: Items handed to the job per page of a data file.
PAGE_LINES = 500


def _bad(location: str, why: str) -> ValidationError:
    return ValidationError("export.invalid", f"{location} is not a DynamoDB export: {why}.")


def _binary(value: Any) -> Any:
    """DynamoDB JSON keeps binary values as base64 text; the wire form has bytes."""
    if isinstance(value, Mapping):
        if len(value) == 1:
            ((tag, inner),) = value.items()
            if tag == "B" and isinstance(inner, str):
                return {"B": base64.b64decode(inner)}
            if tag == "BS" and isinstance(inner, list):
                return {"BS": [base64.b64decode(v) for v in inner]}
            if tag in ("M", "L"):
                return {tag: _binary(inner)}
        return {k: _binary(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_binary(v) for v in value]
    return value


class ExportFolder:
    """An export in a local folder or under an ``s3://bucket/prefix`` URL."""

    def __init__(self, location: str, s3: Any = None) -> None:
        self.location = location.rstrip("/")
        self._s3 = s3
        #: The open data file of each unit being read, and the line it is at.
        self._reading: dict[str, tuple[int, Iterator[WireItem]]] = {}
        self.bucket = ""
        if self.location.startswith("s3://"):
            self.bucket, _, self.prefix = self.location[5:].partition("/")
        else:
            self.prefix = self.location

    def _client(self) -> Any:
        if self._s3 is None:
            import boto3  # its own endpoint: AWS_ENDPOINT_URL_S3 is honoured by boto3

            self._s3 = boto3.client("s3")
        return self._s3

    def read(self, name: str) -> bytes:
        """The bytes of a file of the export, by its path inside the export's folder."""
        if not self.bucket:
            try:
                return (Path(self.prefix) / name).read_bytes()
            except OSError as exc:
                raise _bad(self.location, f"cannot read {name} ({exc})") from exc
        key = f"{self.prefix}/{name}" if self.prefix else name
        return self.read_key(key)

    def read_key(self, key: str) -> bytes:
        """The bytes of an object of the export's bucket (a data file named by the manifest)."""
        if not self.bucket:
            # A local copy keeps the export's layout from its folder on: the data folder.
            return self.read("data/" + key.rsplit("/data/", 1)[-1])
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            body: bytes = self._client().get_object(Bucket=self.bucket, Key=key)["Body"].read()
        except (ClientError, BotoCoreError) as exc:
            raise _bad(self.location, f"cannot read s3://{self.bucket}/{key} ({exc})") from exc
        return body

    def manifest(self) -> tuple[list[ExportUnit], int | None]:
        """The data files (as units) and the export's item count."""
        try:
            summary = json.loads(self.read("manifest-summary.json"))
        except ValueError as exc:
            raise _bad(self.location, "manifest-summary.json is not JSON") from exc
        if summary.get("outputFormat", "DYNAMODB_JSON") != "DYNAMODB_JSON":
            raise _bad(self.location, f"its format is {summary.get('outputFormat')}")
        files_key = str(summary.get("manifestFilesS3Key") or "manifest-files.json")
        text = self.read_key(files_key) if self.bucket else self.read("manifest-files.json")
        units = []
        for line in text.decode().splitlines():
            if not line.strip():
                continue
            entry = json.loads(line)
            key = str(entry["dataFileS3Key"])
            where = f"s3://{self.bucket}/{key}" if self.bucket else key
            units.append(ExportUnit(where, int(entry.get("itemCount", 0))))
        count = summary.get("itemCount")
        return units, None if count is None else int(count)

    def lines(self, unit: ExportUnit) -> Iterator[WireItem]:
        """The items of one data file, in order."""
        key = unit.file[len(f"s3://{self.bucket}/") :] if self.bucket else unit.file
        raw = self.read_key(key)
        with gzip.GzipFile(fileobj=io.BytesIO(raw)) as data:
            for line in data:
                if line.strip():
                    yield _binary(json.loads(line)["Item"])

    def page(self, ctx: Context, unit: Unit, position: Position) -> Operation[PageRead]:
        """A page of a data file from line ``position`` (no request: the file is read)."""
        assert isinstance(unit, ExportUnit)
        start = position if isinstance(position, int) else 0
        reading = self._reading.pop(unit.id, None)
        if reading is not None and reading[0] == start:
            lines = reading[1]
        else:  # the first page, a resume, or a page read again: open the file
            lines = self.lines(unit)
            for _ in islice(lines, start):  # skip the lines done
                pass
        items: list[WireItem] = []
        for item in lines:
            items.append(item)
            if len(items) == PAGE_LINES:
                break
        if len(items) < PAGE_LINES:
            return PageRead(items, DONE, len(items))
        self._reading[unit.id] = (start + len(items), lines)
        return PageRead(items, start + len(items), len(items))
        yield  # a generator: reading a file sends no request


def open_export(location: str, s3: Any = None) -> ExportInput:
    """Read an export's manifests; return it as a job's input."""
    folder = ExportFolder(location, s3)
    units, count = folder.manifest()
    return ExportInput(folder.location, tuple(units), folder.page, count)
