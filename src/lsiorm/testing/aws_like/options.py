"""The AWS-like engine's options: one frozen value per behaviour, each with its scale.

Every behaviour of `AwsLikeEngine` is off unless its option is given, and each option says how
far to scale AWS's numbers down, so that a test of a few thousand items meets what a table of a
billion items meets on AWS:

* `StreamShards`: a stream of many shards that split and roll over (AWS does not say how many
  shards a stream has; a busy table has hundreds, and they split as partitions split);
* `PartitionLimits`: per partition key value at most 1,000 write units and 3,000 read units a
  second, AWS's documented per-partition limits;
* `OnDemandMaximum`: the maximum an on-demand table or index may consume a second
  (``OnDemandThroughput``), as declared on the table, or set here;
* `GsiLag`: global secondary indexes updated after a delay (AWS propagates them
  asynchronously: within a fraction of a second in normal conditions, further behind under load);
* `TransactionConflicts`: two transactions that touch one item at once conflict.

AWS's fixed durations (a stream's 24-hour retention, a shard iterator's 15 minutes) are scaled
by the engine's ``time_scale``; every other duration and rate here is in real seconds.
"""

from __future__ import annotations

from dataclasses import dataclass

from lsiorm.errors import ValidationError

__all__ = [
    "GsiLag",
    "OnDemandMaximum",
    "PartitionLimits",
    "StreamShards",
    "TransactionConflicts",
]

#: GetRecords answers at most this many bytes of records (AWS: 1 MB).
PAGE_BYTES = 1024 * 1024


def _positive(rule: str, name: str, value: float | None, *, zero: bool = False) -> None:
    if value is None:
        return
    if value < 0 or (value == 0 and not zero):
        least = "0 or more" if zero else "more than 0"
        raise ValidationError(rule, f"{name} must be {least}, not {value!r}")


@dataclass(frozen=True)
class StreamShards:
    """A DynamoDB stream served from many virtual shards that split while you read them.

    Args:
        shards: Open shards when the engine first sees the stream, each owning an equal part
            of the 128-bit hash space of partition key values.
        split_every: A shard that has received this many records splits (None: never by
            count).
        split_at: Seconds after the engine first saw the stream (on the engine's clock) at
            which every open shard splits.
        rollover_every: Every this many seconds each open shard is closed and continued by one
            child owning the same keys, as AWS rolls shards over every few hours (None: never).
        get_records_per_second: GetRecords calls a shard answers in any one second; past them
            it refuses with ``LimitExceededException`` (AWS asks for no more than two readers
            of a shard at once and throttles past its limit).
        page_bytes: The most bytes of records one GetRecords answers (AWS: 1 MB); a smaller
            value makes the limit reachable with small items.
        poll_interval: How often, in seconds, the engine reads the upstream engine's stream
            into the virtual shards (it also reads it before answering any Streams call).
    """

    shards: int = 4
    split_every: int | None = None
    split_at: tuple[float, ...] = ()
    rollover_every: float | None = None
    get_records_per_second: int = 5
    page_bytes: int = PAGE_BYTES
    poll_interval: float = 0.03

    def __post_init__(self) -> None:
        rule = "aws_like.streams"
        if self.shards < 1:
            raise ValidationError(rule, f"shards must be 1 or more, not {self.shards!r}")
        if self.split_every is not None and self.split_every < 1:
            raise ValidationError(rule, f"split_every must be 1 or more, not {self.split_every}")
        for at in self.split_at:
            _positive(rule, "every time of split_at", at, zero=True)
        _positive(rule, "rollover_every", self.rollover_every)
        _positive(rule, "get_records_per_second", self.get_records_per_second)
        _positive(rule, "page_bytes", self.page_bytes)
        _positive(rule, "poll_interval", self.poll_interval)
        object.__setattr__(self, "split_at", tuple(sorted(self.split_at)))


@dataclass(frozen=True)
class PartitionLimits:
    """Per partition key value, at most so many units a second; past them a request is refused.

    A table's partition key value has a write bucket and a read bucket, and so has each global
    secondary index's partition key value. Buckets refill continuously and hold
    ``burst_seconds`` of their rate; a request that finds a bucket empty is refused without
    being applied, with ``ProvisionedThroughputExceededException`` and ``ThrottlingReasons``
    (``TableWriteKeyRangeThroughputExceeded``, ...). A request that is let in is charged the
    units it really consumed, so a bucket may go below zero and stay shut longer.

    Args:
        write_units: Write units per second per partition key value (AWS: 1,000).
        read_units: Read units per second per partition key value (AWS: 3,000).
        burst_seconds: Seconds of the rate a full bucket holds.
        units: Where the units charged come from: ``"reported"`` (the ConsumedCapacity the
            upstream engine answers; right on DynamoDB Local), ``"estimated"`` (lsiorm's size
            model over the items written and read; what moto needs, whose ConsumedCapacity is
            made up) or ``"auto"`` (estimated when the upstream engine is moto).
    """

    write_units: float = 1000.0
    read_units: float = 3000.0
    burst_seconds: float = 1.0
    units: str = "auto"

    def __post_init__(self) -> None:
        rule = "aws_like.partition-limits"
        _positive(rule, "write_units", self.write_units)
        _positive(rule, "read_units", self.read_units)
        _positive(rule, "burst_seconds", self.burst_seconds)
        if self.units not in ("auto", "reported", "estimated"):
            raise ValidationError(
                rule, f"units must be 'auto', 'reported' or 'estimated', not {self.units!r}"
            )


@dataclass(frozen=True)
class OnDemandMaximum:
    """The most an on-demand table or index may consume a second; past it, ``ThrottlingException``.

    The maxima a table and its global indexes declare (``OnDemandThroughput``,
    ``MaxReadRequestUnits`` and ``MaxWriteRequestUnits`` in CreateTable and UpdateTable) are
    enforced: DynamoDB Local keeps and describes them but never enforces them; moto drops them.
    ``read_units`` and ``write_units`` set a maximum for every table that declares none.

    Args:
        read_units: Read request units per second of a table that declares no maximum.
        write_units: Write request units per second of a table that declares no maximum.
        burst_seconds: Seconds of the rate a full bucket holds.
    """

    read_units: float | None = None
    write_units: float | None = None
    burst_seconds: float = 1.0

    def __post_init__(self) -> None:
        rule = "aws_like.on-demand"
        _positive(rule, "read_units", self.read_units)
        _positive(rule, "write_units", self.write_units)
        _positive(rule, "burst_seconds", self.burst_seconds)


@dataclass(frozen=True)
class GsiLag:
    """A Query or Scan of a global secondary index sees a write only ``seconds`` after it.

    Until then it sees the item as it was before (an item deleted, or moved out of the index,
    a moment ago is still found there). Local secondary indexes and the table itself stay
    strongly consistent, as on AWS.
    """

    seconds: float = 1.0

    def __post_init__(self) -> None:
        _positive("aws_like.gsi-lag", "seconds", self.seconds, zero=True)


@dataclass(frozen=True)
class TransactionConflicts:
    """Transactions that touch one item at once conflict, as on AWS.

    Args:
        hold: Seconds a transaction's items stay held after it is applied, so that overlaps
            happen in a test (0: only while it is in flight).
        rate: A share of transactions (0 to 1) cancelled for a conflict at random.
        seed: Seeds the random draw of ``rate``.
    """

    hold: float = 0.0
    rate: float = 0.0
    seed: int | None = None

    def __post_init__(self) -> None:
        rule = "aws_like.conflicts"
        _positive(rule, "hold", self.hold, zero=True)
        if not 0.0 <= self.rate <= 1.0:
            raise ValidationError(rule, f"rate must be between 0 and 1, not {self.rate!r}")
