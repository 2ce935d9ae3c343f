"""What the engine knows of each table: keys, indexes, ARN, stream and on-demand maxima.

Read once per table from the upstream engine's ``DescribeTable`` and kept until a CreateTable,
UpdateTable or DeleteTable of that table goes through the engine. Partition identities live here
too: a partition key value (one attribute, or several for a multi-attribute global index key)
as canonical JSON, and its place in the 128-bit hash space that stream shards divide (the md5
of that JSON, as AWS places items by a hash of the partition key value).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lsiorm.testing.aws_like.upstream import Upstream, UpstreamError

__all__ = ["Catalog", "IndexShape", "TableShape", "hash_of", "key_id", "partition_id"]


def partition_id(values: tuple[Any, ...]) -> str:
    """The canonical JSON of a partition key value (its attribute values, in key order)."""
    return json.dumps(values, sort_keys=True, separators=(",", ":"))


def hash_of(partition: str) -> int:
    """The place of a partition key value in the 128-bit hash space (md5 of its JSON)."""
    return int.from_bytes(hashlib.md5(partition.encode()).digest(), "big")


def key_id(table: str, key: Mapping[str, Any]) -> str:
    """The identity of one item: its table and primary key, as canonical JSON."""
    return json.dumps([table, key], sort_keys=True, separators=(",", ":"))


def _names(schema: Any, kind: str) -> tuple[str, ...]:
    return tuple(str(k["AttributeName"]) for k in schema or () if k.get("KeyType") == kind)


def _maximum(raw: Any) -> tuple[float | None, float | None]:
    """(read, write) request units per second of an ``OnDemandThroughput``; None: no maximum."""
    raw = raw or {}
    read, write = raw.get("MaxReadRequestUnits"), raw.get("MaxWriteRequestUnits")
    return (
        float(read) if isinstance(read, (int, float)) and read > 0 else None,
        float(write) if isinstance(write, (int, float)) and write > 0 else None,
    )


@dataclass(frozen=True)
class IndexShape:
    """A secondary index: its partition and sort key attributes, and its on-demand maxima."""

    name: str
    partition: tuple[str, ...]
    sort: tuple[str, ...]
    max_read: float | None = None
    max_write: float | None = None

    def partition_of(self, item: Mapping[str, Any] | None) -> str | None:
        """The partition identity of an item's entry in this index (None: it has none)."""
        if item is None or any(name not in item for name in self.partition):
            return None
        return partition_id(tuple(item[name] for name in self.partition))

    def entry_key(self, item: Mapping[str, Any] | None) -> str | None:
        """The full index key of an item's entry (None: not in the index)."""
        if item is None or any(name not in item for name in (*self.partition, *self.sort)):
            return None
        return partition_id(tuple(item[name] for name in (*self.partition, *self.sort)))


@dataclass(frozen=True)
class TableShape:
    """One table as the engine needs it (from its ``DescribeTable``)."""

    name: str
    arn: str
    partition: str
    sort: str | None
    global_indexes: Mapping[str, IndexShape] = field(default_factory=dict)
    local_indexes: Mapping[str, IndexShape] = field(default_factory=dict)
    stream_arn: str | None = None
    max_read: float | None = None
    max_write: float | None = None
    description: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, description: Mapping[str, Any]) -> TableShape:
        """The shape of a ``TableDescription``."""
        name = str(description["TableName"])
        keys = description["KeySchema"]
        sort = _names(keys, "RANGE")
        globals_: dict[str, IndexShape] = {}
        for raw in description.get("GlobalSecondaryIndexes") or ():
            read, write = _maximum(raw.get("OnDemandThroughput"))
            index = str(raw["IndexName"])
            schema = raw["KeySchema"]
            globals_[index] = IndexShape(
                index, _names(schema, "HASH"), _names(schema, "RANGE"), read, write
            )
        locals_ = {
            str(raw["IndexName"]): IndexShape(
                str(raw["IndexName"]), _names(keys, "HASH"), _names(raw["KeySchema"], "RANGE")
            )
            for raw in description.get("LocalSecondaryIndexes") or ()
        }
        stream = description.get("StreamSpecification") or {}
        read, write = _maximum(description.get("OnDemandThroughput"))
        return cls(
            name=name,
            arn=str(description.get("TableArn") or f"arn:aws:dynamodb:::table/{name}"),
            partition=_names(keys, "HASH")[0],
            sort=sort[0] if sort else None,
            global_indexes=globals_,
            local_indexes=locals_,
            stream_arn=description.get("LatestStreamArn") if stream.get("StreamEnabled") else None,
            max_read=read,
            max_write=write,
            description=dict(description),
        )

    @property
    def key_names(self) -> tuple[str, ...]:
        """The primary key attributes."""
        return (self.partition, self.sort) if self.sort else (self.partition,)

    def key_of(self, item: Mapping[str, Any]) -> dict[str, Any]:
        """The primary key of an item (or of a key); KeyError when an attribute is missing."""
        return {name: item[name] for name in self.key_names}

    def partition_of(self, item: Mapping[str, Any]) -> str:
        """The partition identity of an item or key."""
        return partition_id((item[self.partition],))

    def index_arn(self, index: str | None) -> str:
        """The ARN of the table, or of one of its indexes (``<table ARN>/index/<name>``)."""
        return self.arn if index is None else f"{self.arn}/index/{index}"


class Catalog:
    """Table shapes read from the upstream engine, kept until the table changes."""

    def __init__(self, upstream: Upstream) -> None:
        self._upstream = upstream
        self._shapes: dict[str, TableShape | None] = {}
        self._lock = threading.Lock()

    def shape(self, name: str) -> TableShape | None:
        """The shape of table ``name``; None when the upstream engine has no such table."""
        with self._lock:
            if name in self._shapes:
                return self._shapes[name]
        try:
            answer = self._upstream.call("DescribeTable", {"TableName": name})
        except UpstreamError as exc:
            if exc.code != "ResourceNotFoundException":
                raise
            return None  # not remembered: the table may be created next
        shape = TableShape.of(answer["Table"])
        with self._lock:
            self._shapes[name] = shape
        return shape

    def learn(self, description: Mapping[str, Any]) -> TableShape:
        """Keep the shape of a ``TableDescription`` an answer carried."""
        shape = TableShape.of(description)
        with self._lock:
            self._shapes[shape.name] = shape
        return shape

    def forget(self, name: str) -> None:
        """Drop what is known of table ``name`` (it was created, changed or deleted)."""
        with self._lock:
            self._shapes.pop(name, None)
