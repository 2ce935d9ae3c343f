"""A DynamoDB stream read as values: its shards listed page by page, and a shard's records read
page by page.

A stream pages in two ways of its own, unlike a Query or a Scan (`lsiorm._requests.pages`):

* DescribeStream lists the stream's shards a page at a time; each answer names the shard to
  list after (``LastEvaluatedShardId``), none when the list is complete.
  `shard_listing_request` and `shard_listing_of` are one page's parameters and what it says.
* A shard's records are read with iterators: GetShardIterator hands out the first (at the
  shard's oldest record, ``TRIM_HORIZON``, or after a sequence number), and each GetRecords
  answer the next (``NextShardIterator``), none once a closed shard is read to its end. An
  iterator expires 15 minutes after it was handed out, so where a read stands is the sequence
  number of the last record read (its *position*), never an iterator. `ShardRead` is such a
  read (the stream, the shard, the records per page) and gives each request's parameters;
  `record_page_of` is what one GetRecords answer says.

Both are sent by one reader (`lsiorm._ops.stream_pages`), which both drivers run. Nothing here
sends anything, so the tests compare dictionaries.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lsiorm.errors import ValidationError

if TYPE_CHECKING:
    from lsiorm._model.schema import Table

__all__ = [
    "PAGE_LIMIT",
    "RecordPage",
    "Shard",
    "ShardListing",
    "ShardRead",
    "record_page_of",
    "sequence_of",
    "shard_listing_of",
    "shard_listing_request",
]

#: Records per GetRecords request (DynamoDB's most).
PAGE_LIMIT = 1000


@dataclass(frozen=True)
class Shard:
    """One shard of a stream: its id, its parent's id, and whether it is closed (split or
    ended: it has an ending sequence number, so reading it reaches an end)."""

    id: str
    parent: str | None = None
    closed: bool = False


@dataclass(frozen=True)
class ShardListing:
    """One page of DescribeStream: the stream's view type, the shards of the page, and the
    shard to list after (None: the list is complete)."""

    view: str
    shards: tuple[Shard, ...]
    next: str | None


def shard_listing_request(stream_arn: str, after: str | None = None) -> dict[str, Any]:
    """DescribeStream parameters of the page of shards after shard ``after`` (None: the
    first)."""
    params: dict[str, Any] = {"StreamArn": stream_arn}
    if after:
        params["ExclusiveStartShardId"] = after
    return params


def shard_listing_of(response: Mapping[str, Any]) -> ShardListing:
    """The page of shards a DescribeStream ``response`` holds."""
    description = response.get("StreamDescription") or {}
    shards = []
    for raw in description.get("Shards") or ():
        ending = (raw.get("SequenceNumberRange") or {}).get("EndingSequenceNumber")
        shards.append(Shard(raw["ShardId"], raw.get("ParentShardId"), ending is not None))
    last = description.get("LastEvaluatedShardId")
    return ShardListing(
        str(description.get("StreamViewType", "")), tuple(shards), str(last) if last else None
    )


@dataclass(frozen=True)
class ShardRead:
    """The records of one shard of stream ``stream_arn``, read page by page.

    ``limit`` is the most records of a page (DynamoDB's most, 1,000, by default; a page also
    stops at 1 MB). ``tables`` are the declared tables whose items the records hold (the
    session opens their protected values).
    """

    stream_arn: str
    shard: str
    limit: int = PAGE_LIMIT
    tables: tuple[Table, ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        if not 1 <= self.limit <= PAGE_LIMIT:
            raise ValidationError(
                "stream.limit",
                f"A stream read's limit is {self.limit}; GetRecords reads 1 to "
                f"{PAGE_LIMIT} records a page.",
            )

    def iterator_request(self, after: str | None) -> dict[str, Any]:
        """GetShardIterator parameters of an iterator after sequence number ``after`` (None:
        at the shard's oldest record)."""
        params: dict[str, Any] = {"StreamArn": self.stream_arn, "ShardId": self.shard}
        if after is None:
            params["ShardIteratorType"] = "TRIM_HORIZON"
        else:
            params["ShardIteratorType"] = "AFTER_SEQUENCE_NUMBER"
            params["SequenceNumber"] = after
        return params

    def request(self, iterator: str) -> dict[str, Any]:
        """GetRecords parameters of the page ``iterator`` points at."""
        return {"ShardIterator": iterator, "Limit": self.limit}


def sequence_of(record: Mapping[str, Any]) -> str:
    """The sequence number of a record of a GetRecords answer."""
    return str((record.get("dynamodb") or {}).get("SequenceNumber"))


@dataclass(frozen=True)
class RecordPage:
    """One GetRecords page of a shard, as DynamoDB answered it.

    ``records`` are the records as the answer holds them; ``position`` is where the read stands
    after the page: its last record's sequence number, or, for a page without records, where
    it stood before. ``next`` is the iterator of the next page, None when the shard is closed
    and read to its end.
    """

    records: tuple[dict[str, Any], ...]
    position: str | None
    next: str | None
    #: The whole answer, for what only some readers look at.
    response: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def last(self) -> bool:
        """True when the shard is closed and this page is its end: no page follows."""
        return self.next is None


def record_page_of(response: Mapping[str, Any], after: str | None) -> RecordPage:
    """The page a GetRecords ``response`` holds, read after sequence number ``after``."""
    records: tuple[dict[str, Any], ...] = tuple(response.get("Records") or ())
    following = response.get("NextShardIterator")
    return RecordPage(
        records,
        sequence_of(records[-1]) if records else after,
        str(following) if following else None,
        response,
    )
