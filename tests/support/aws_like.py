"""The AWS-like engine in front of each backend, for lsiorm's own integration tests.

A test that takes ``aws_like`` runs behind the engine on both backends with one line::

    def test_splits(aws_like):
        engine = aws_like(streams=StreamShards(shards=8, split_every=50))
        client = engine_client(engine)

Every engine a test starts is stopped after it. `Clock` is a clock the test moves itself
(``clock=`` of the engine), so the timing rules (iterator expiry, retention, refills, the GSI
lag, transaction holds) are exact and take no time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from botocore.config import Config

from lsiorm.testing import AwsLikeEngine

__all__ = ["Clock", "aws_like", "engine_client", "streams_client"]

START = 1_750_000_000.0


class Clock:
    """Seconds since the epoch, standing still until the test moves them."""

    def __init__(self, now: float = START) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def _config() -> Config:
    # No retries: each test sees the engine's first answer, as DynamoDB sends it.
    return Config(retries={"total_max_attempts": 1, "mode": "standard"}, connect_timeout=5)


def engine_client(engine: AwsLikeEngine) -> Any:
    """A boto3 DynamoDB client on the engine that never retries."""
    return boto3.client("dynamodb", endpoint_url=engine.endpoint_url, config=_config())


def streams_client(engine: AwsLikeEngine) -> Any:
    """A boto3 DynamoDB Streams client on the engine that never retries."""
    return boto3.client("dynamodbstreams", endpoint_url=engine.endpoint_url, config=_config())


@pytest.fixture
def aws_like(endpoint_url: str) -> Iterator[Callable[..., AwsLikeEngine]]:
    """Start an `AwsLikeEngine` in front of this test's backend: ``aws_like(**options)``."""
    started: list[AwsLikeEngine] = []

    def start(**options: Any) -> AwsLikeEngine:
        options.setdefault("idle_timeout", 120)
        engine = AwsLikeEngine(endpoint_url, **options)
        engine.start()
        started.append(engine)
        return engine

    try:
        yield start
    finally:
        for engine in started:
            engine.stop()
