"""The engine's options refuse values that cannot mean anything, naming the rule."""

from __future__ import annotations

from typing import Any

import pytest

from lsiorm.errors import ValidationError
from lsiorm.testing import (
    AwsLikeEngine,
    GsiLag,
    OnDemandMaximum,
    PartitionLimits,
    StreamShards,
    TransactionConflicts,
)


@pytest.mark.parametrize(
    ("option", "values", "rule"),
    [
        (StreamShards, {"shards": 0}, "aws_like.streams"),
        (StreamShards, {"split_every": 0}, "aws_like.streams"),
        (StreamShards, {"split_at": (1.0, -1.0)}, "aws_like.streams"),
        (StreamShards, {"rollover_every": 0}, "aws_like.streams"),
        (StreamShards, {"get_records_per_second": 0}, "aws_like.streams"),
        (StreamShards, {"page_bytes": -1}, "aws_like.streams"),
        (PartitionLimits, {"write_units": 0}, "aws_like.partition-limits"),
        (PartitionLimits, {"read_units": -5}, "aws_like.partition-limits"),
        (PartitionLimits, {"units": "guessed"}, "aws_like.partition-limits"),
        (OnDemandMaximum, {"write_units": 0}, "aws_like.on-demand"),
        (GsiLag, {"seconds": -0.1}, "aws_like.gsi-lag"),
        (TransactionConflicts, {"rate": 1.5}, "aws_like.conflicts"),
        (TransactionConflicts, {"hold": -1}, "aws_like.conflicts"),
    ],
)
def test_a_meaningless_option_is_refused(option: Any, values: dict[str, Any], rule: str) -> None:
    with pytest.raises(ValidationError) as refused:
        option(**values)
    assert refused.value.rule == rule
    assert next(iter(values)) in str(refused.value)


def test_defaults_are_awss_numbers() -> None:
    limits = PartitionLimits()
    assert (limits.write_units, limits.read_units) == (1000.0, 3000.0)
    streams = StreamShards()
    assert (streams.get_records_per_second, streams.page_bytes) == (5, 1024 * 1024)
    assert StreamShards(split_at=(5.0, 2.0)).split_at == (2.0, 5.0)
    assert GsiLag(seconds=0).seconds == 0


def test_the_engine_refuses_a_time_scale_that_is_not_positive() -> None:
    with pytest.raises(ValidationError) as refused:
        AwsLikeEngine("http://127.0.0.1:1", time_scale=0)
    assert refused.value.rule == "aws_like.time-scale"
