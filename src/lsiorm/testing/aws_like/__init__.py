"""The AWS-like engine: DynamoDB as AWS behaves at scale, in front of a local engine.

DynamoDB Local and moto hide what decides whether code that works in a test holds on a busy
table in production: their streams have one shard that never splits, their global indexes are
updated at once, they have no per-partition throughput limit and no on-demand maximum, and they
never cancel a transaction for a conflict with another. `AwsLikeEngine` is a loopback proxy in
front of either that adds each of these, switched on and scaled by its own option.

The modules, in reading order:

* ``options``: one option value per behaviour (`StreamShards`, `PartitionLimits`,
  `OnDemandMaximum`, `GsiLag`, `TransactionConflicts`);
* ``protocol``: targets, error answers and consumed capacity in DynamoDB's JSON protocol;
* ``stats``: what the engine counts, from many threads;
* ``upstream``: the upstream engine as the engine talks to it;
* ``tables``: what the engine knows of each table, and partition identities and hashes;
* ``touches``: what a request touches (items, positions, the partition a Query reads);
* ``streams``: virtual shards, their splits, iterators, records and retention;
* ``stream_feed``: reading the upstream streams into virtual ones, and the Streams API;
* ``throughput``: token buckets, the units charged, throttle reasons;
* ``images``: item images around a write, under per-item locks;
* ``gsi_lag``: global indexes that lag, through shadow tables;
* ``conflicts``: items held by transactions, and what meets them;
* ``proxy``: `AwsLikeEngine`, the server and how each request is routed.
"""

from lsiorm.testing.aws_like.options import (
    GsiLag,
    OnDemandMaximum,
    PartitionLimits,
    StreamShards,
    TransactionConflicts,
)
from lsiorm.testing.aws_like.proxy import AwsLikeEngine

__all__ = [
    "AwsLikeEngine",
    "GsiLag",
    "OnDemandMaximum",
    "PartitionLimits",
    "StreamShards",
    "TransactionConflicts",
]
