"""The stream reader: a DynamoDB stream's shards and a shard's records, page by page, as
operations.

A stream read is described by values (`lsiorm._requests.stream_pages`); this module sends them,
as the page reader (`lsiorm._ops.pages`) sends a Query or a Scan. Both are operations, so the
sync and async drivers run the same code, and every request goes through the pipeline's hooks
and retries.

* `describe_shards` lists a stream's shards, every page of DescribeStream.
* `shard_iterator` asks for an iterator at a position (None when the stream no longer holds
  the shard: it was trimmed away with its records, 24 hours after it closed).
* `read_records` reads the one page of a shard at a position, with the iterator the page
  before handed on (or a new one). What a shard read meets on the way is handled here, the
  same for every reader: an iterator that expired (15 minutes after it was handed out) is
  replaced by a new one at the position, and a read refused for going too fast (more than five
  GetRecords a second on a shard, ``LimitExceededException``) waits and reads again, the wait
  doubling up to `THROTTLE_MAX` seconds.

A position that the stream trimmed (its records are gone) is not handled here: its
``TrimmedDataAccessException`` reaches the caller, who knows what was lost.
"""

from __future__ import annotations

from lsiorm._ops.pipeline import Context, call
from lsiorm._ops.steps import Operation, Sleep
from lsiorm._requests.stream_pages import (
    RecordPage,
    Shard,
    ShardRead,
    record_page_of,
    shard_listing_of,
    shard_listing_request,
)
from lsiorm.errors import DynamoError, ResourceNotFoundError

__all__ = ["THROTTLE_FIRST", "THROTTLE_MAX", "describe_shards", "read_records", "shard_iterator"]

#: GetRecords answered ``LimitExceededException``: wait this long (seconds), doubling up to
#: `THROTTLE_MAX`, and read again (the same iterator still works).
THROTTLE_FIRST = 0.2
THROTTLE_MAX = 5.0


def describe_shards(ctx: Context, stream_arn: str) -> Operation[tuple[str, list[Shard]]]:
    """The stream's view type and its shards (every page of DescribeStream)."""
    shards: list[Shard] = []
    view = ""
    after: str | None = None
    while True:
        response = yield from call(ctx, "DescribeStream", shard_listing_request(stream_arn, after))
        listing = shard_listing_of(response)
        view = listing.view or view
        shards.extend(listing.shards)
        if listing.next is None:
            return view, shards
        after = listing.next


def shard_iterator(ctx: Context, read: ShardRead, after: str | None) -> Operation[str | None]:
    """An iterator of ``read``'s shard after sequence number ``after`` (None: at its oldest
    record); None when the stream no longer holds the shard."""
    try:
        response = yield from call(ctx, "GetShardIterator", read.iterator_request(after))
    except ResourceNotFoundError:
        return None
    found = response.get("ShardIterator")
    return str(found) if found else None


def read_records(
    ctx: Context, read: ShardRead, after: str | None, iterator: str | None = None
) -> Operation[RecordPage | None]:
    """The page of ``read``'s shard after sequence number ``after`` (None: from its oldest
    record), read with ``iterator`` (the one the page before handed on; None: a new one is
    asked for); None when the stream no longer holds the shard."""
    wait = THROTTLE_FIRST
    while True:
        if iterator is None:
            iterator = yield from shard_iterator(ctx, read, after)
            if iterator is None:
                return None
        try:
            response = yield from call(ctx, "GetRecords", read.request(iterator), read.tables)
        except DynamoError as exc:
            if exc.code == "ExpiredIteratorException":
                iterator = None  # 15 minutes old: a new one at the position
                continue
            if exc.code == "LimitExceededException":
                yield Sleep(wait)  # more than 5 reads a second on this shard
                wait = min(2 * wait, THROTTLE_MAX)
                continue
            raise
        return record_page_of(response, after)
