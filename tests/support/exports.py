"""DynamoDB exports to S3 made by hand from a table, for the key jobs that read them.

`take_export` scans a table and writes what "Export to S3" writes (DYNAMODB_JSON, gzip):
``AWSDynamoDB/<ExportId>/manifest-summary.json``, ``manifest-files.json`` (one line per data
file, its ``dataFileS3Key`` from the bucket's root) and ``data/<name>.json.gz`` with one
``{"Item": {...}}`` a line, binary values in base64. It writes to a local folder, or to a
bucket through an S3 client (moto's, in the tests).
"""

from __future__ import annotations

import base64
import gzip
import json
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from lsiorm import Session
from support.jobs import everything

__all__ = ["dynamodb_json", "take_export"]


def dynamodb_json(value: Any) -> Any:
    """A wire value as an export writes it: bytes as base64 text."""
    if isinstance(value, Mapping):
        return {k: dynamodb_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [dynamodb_json(v) for v in value]
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode()
    return value


def _data_file(items: Sequence[Mapping[str, Any]]) -> bytes:
    lines = "".join(json.dumps({"Item": dynamodb_json(item)}) + "\n" for item in items)
    return gzip.compress(lines.encode())


def take_export(
    session: Session,
    table_name: str,
    *,
    files: int,
    folder: Path | None = None,
    s3: Any = None,
    bucket: str = "",
    prefix: str = "exports",
) -> str:
    """Export ``table_name`` (live name) in ``files`` data files; return the export's location:
    a folder under ``folder``, or ``s3://bucket/prefix/AWSDynamoDB/<id>`` written with ``s3``.

    The items are dealt round-robin to the files; an empty file is written when there are
    fewer items than files, as DynamoDB does for an empty partition.
    """
    items = everything(session, table_name)
    export_id = f"{uuid.uuid4().int % 10**14:014d}-{uuid.uuid4().hex[:8]}"
    root = f"{prefix}/AWSDynamoDB/{export_id}"
    written: dict[str, bytes] = {}
    entries = []
    for number in range(files):
        chunk = items[number::files]
        key = f"{root}/data/{uuid.uuid4().hex[:26]}.json.gz"
        written[key] = _data_file(chunk)
        entries.append({"itemCount": len(chunk), "md5Checksum": "", "dataFileS3Key": key})
    written[f"{root}/manifest-files.json"] = "".join(json.dumps(e) + "\n" for e in entries).encode()
    summary = {
        "version": "2020-06-30",
        "exportArn": f"arn:aws:dynamodb:us-east-1:123456789012:table/{table_name}/export/x",
        "tableArn": f"arn:aws:dynamodb:us-east-1:123456789012:table/{table_name}",
        "s3Bucket": bucket or None,
        "s3Prefix": prefix,
        "manifestFilesS3Key": f"{root}/manifest-files.json",
        "itemCount": len(items),
        "outputFormat": "DYNAMODB_JSON",
    }
    written[f"{root}/manifest-summary.json"] = json.dumps(summary).encode()
    if s3 is not None:
        for key, body in written.items():
            s3.put_object(Bucket=bucket, Key=key, Body=body)
        return f"s3://{bucket}/{root}"
    assert folder is not None
    for key, body in written.items():
        path = folder / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(body)
    return str(folder / root)
