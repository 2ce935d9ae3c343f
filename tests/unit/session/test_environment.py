"""Session() and the command line read the same environment: endpoint and table prefix."""

from __future__ import annotations

import asyncio
from typing import Any

import boto3
import pytest

from lsiorm import AsyncSession, Session, Table
from lsiorm._cli import cli_session
from lsiorm._cli_text import build_parser

shop = Table("Shop", "PK", "SK")

VARIABLES = (
    "AWS_ENDPOINT_URL_DYNAMODB",
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_DYNAMODB_STREAMS",
    "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS",
    "LSIORM_ENDPOINT_URL",
    "LSIORM_TABLE_PREFIX",
)


@pytest.fixture(autouse=True)
def clean(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)


def seen(session: Any) -> tuple[str, str]:
    """What a session talks to: its endpoint and the live name of the Shop table."""
    with session:
        return session.client.meta.endpoint_url, session.table_name(shop)


def both() -> tuple[tuple[str, str], tuple[str, str]]:
    """What Session() and the command line (no options) each talk to."""
    args = build_parser().parse_args(["check", "app:shop"])
    return seen(Session(region_name="us-east-1")), seen(cli_session(args))


@pytest.mark.parametrize(
    ("environ", "endpoint", "name"),
    [
        ({}, "https://dynamodb.us-east-1.amazonaws.com", "Shop"),
        ({"LSIORM_ENDPOINT_URL": "http://lsiorm:8000"}, "http://lsiorm:8000", "Shop"),
        (
            {"AWS_ENDPOINT_URL_DYNAMODB": "http://ddb:1", "LSIORM_ENDPOINT_URL": "http://no:2"},
            "http://ddb:1",
            "Shop",
        ),
        (
            {"AWS_ENDPOINT_URL": "http://all:3", "LSIORM_ENDPOINT_URL": "http://no:2"},
            "http://all:3",
            "Shop",
        ),
        ({"LSIORM_TABLE_PREFIX": "dev-"}, "https://dynamodb.us-east-1.amazonaws.com", "dev-Shop"),
    ],
)
def test_session_and_cli_read_the_same_environment(
    monkeypatch: pytest.MonkeyPatch, environ: dict[str, str], endpoint: str, name: str
) -> None:
    for variable, value in environ.items():
        monkeypatch.setenv(variable, value)
    session, cli = both()
    assert session == cli == (endpoint, name)


def test_ignoring_configured_endpoints_ignores_the_alias_too(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LSIORM_ENDPOINT_URL", "http://lsiorm:8000")
    monkeypatch.setenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "true")
    session, cli = both()
    assert session == cli == ("https://dynamodb.us-east-1.amazonaws.com", "Shop")


def test_arguments_win_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LSIORM_ENDPOINT_URL", "http://lsiorm:8000")
    monkeypatch.setenv("LSIORM_TABLE_PREFIX", "dev-")
    given = Session(region_name="us-east-1", endpoint_url="http://given:1", table_prefix="")
    assert seen(given) == ("http://given:1", "Shop")
    named = Session(region_name="us-east-1", table_names=lambda n: f"{n}.prod")
    assert seen(named) == ("http://lsiorm:8000", "Shop.prod")
    args = build_parser().parse_args(
        ["check", "app:shop", "--endpoint-url", "http://given:1", "--table-prefix", "x-"]
    )
    assert seen(cli_session(args)) == ("http://given:1", "x-Shop")


AWS_STREAMS = "https://streams.dynamodb.us-east-1.amazonaws.com"


def streams_of(session: Any) -> str:
    """The endpoint of the DynamoDB Streams client a sync session builds for a migration."""
    with session:
        endpoint: str = session.driver.inner.streams().meta.endpoint_url
        return endpoint


async def async_streams_of() -> str:
    async with AsyncSession(region_name="us-east-1") as session:
        endpoint: str = session.driver.inner.streams.meta.endpoint_url
        return endpoint


@pytest.mark.parametrize(
    ("environ", "streams"),
    [
        ({}, AWS_STREAMS),
        ({"AWS_ENDPOINT_URL_DYNAMODB": "http://ddb:1"}, "http://ddb:1"),
        ({"AWS_ENDPOINT_URL": "http://all:3"}, "http://all:3"),
        ({"LSIORM_ENDPOINT_URL": "http://lsiorm:8000"}, "http://lsiorm:8000"),
        (
            {
                "AWS_ENDPOINT_URL_DYNAMODB": "http://ddb:1",
                "AWS_ENDPOINT_URL_DYNAMODB_STREAMS": "http://s:4",
            },
            "http://s:4",
        ),
        (
            {"AWS_ENDPOINT_URL_DYNAMODB": "https://vpce-1.dynamodb.us-east-1.vpce.amazonaws.com"},
            AWS_STREAMS,
        ),
    ],
)
def test_the_streams_client_talks_to_the_endpoint_of_a_local_engine_however_it_is_named(
    monkeypatch: pytest.MonkeyPatch, environ: dict[str, str], streams: str
) -> None:
    for variable, value in environ.items():
        monkeypatch.setenv(variable, value)
    assert streams_of(Session(region_name="us-east-1")) == streams
    assert streams_of(cli_session(build_parser().parse_args(["check", "app:shop"]))) == streams
    assert asyncio.run(async_streams_of()) == streams


@pytest.mark.parametrize(
    ("dynamodb", "streams"),
    [("http://local:8000", "http://local:8000"), (None, AWS_STREAMS)],
)
def test_a_session_given_a_client_reads_streams_beside_it(
    dynamodb: str | None, streams: str
) -> None:
    client = boto3.client("dynamodb", region_name="us-east-1", endpoint_url=dynamodb)
    assert streams_of(Session(client)) == streams
