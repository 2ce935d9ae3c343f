"""The lean lane signs requests exactly as botocore's SigV4Auth does."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import botocore.auth
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import ReadOnlyCredentials
from hypothesis import given
from hypothesis import strategies as st

from lsiorm._io.lean import SigV4Signer

urls = st.sampled_from(
    [
        "https://dynamodb.us-east-1.amazonaws.com",
        "https://dynamodb.eu-west-3.amazonaws.com:443",
        "http://127.0.0.1:8000",
        "http://localhost",
        "https://Example.COM:8443/prefix/path",
        "http://[::1]:4566",
        "https://host.example/a%20b/?x=1&a=2",
    ]
)
secrets = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456789/+", min_size=1)
credentials = st.builds(
    ReadOnlyCredentials,
    st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", min_size=1, max_size=20),
    secrets,
    st.none() | st.just("") | st.text(alphabet="abc XYZ/+=", max_size=30),
)
moments = st.datetimes(min_value=dt.datetime(2000, 1, 1), max_value=dt.datetime(2099, 1, 1))


@contextmanager
def botocore_clock(now: dt.datetime) -> Iterator[None]:
    saved = botocore.auth.get_current_datetime
    botocore.auth.get_current_datetime = lambda *args, **kwargs: now
    try:
        yield
    finally:
        botocore.auth.get_current_datetime = saved


def botocore_headers(
    url: str, region: str, headers: dict[str, str], body: bytes, creds: Any, now: dt.datetime
) -> dict[str, str]:
    request = AWSRequest(method="POST", url=url, data=body, headers=dict(headers))
    with botocore_clock(now):
        SigV4Auth(creds, "dynamodb", region).add_auth(request)
    return {k.lower(): v for k, v in request.prepare().headers.items()}


@given(
    urls,
    st.sampled_from(["us-east-1", "eu-west-3", "local"]),
    st.sampled_from(["PutItem", "GetItem", "BatchWriteItem", "Query"]),
    st.binary(max_size=200),
    credentials,
    moments,
    st.booleans(),
)
def test_lean_signature_is_botocores(
    url: str,
    region: str,
    operation: str,
    body: bytes,
    creds: Any,
    now: dt.datetime,
    traced: bool,
) -> None:
    headers = {
        "X-Amz-Target": f"DynamoDB_20120810.{operation}",
        "Content-Type": "application/x-amz-json-1.0",
        "User-Agent": "Boto3/1 md/test  lsiorm",
    }
    if traced:
        headers["X-Amzn-Trace-Id"] = "Root=1-5759e988-bd862e3fe1be46a994272793"
    expected = botocore_headers(url, region, headers, body, creds, now)
    signer = SigV4Signer(url, region, "dynamodb")
    for _ in range(2):  # the second time with the signing key kept from the first
        got = dict(headers)
        signer.sign(got, body, creds, now)
        got["Content-Length"] = str(len(body))
        assert {k.lower(): v for k, v in got.items()} == expected


def test_signing_key_follows_the_day_and_the_secret() -> None:
    signer = SigV4Signer("https://dynamodb.us-east-1.amazonaws.com", "us-east-1", "dynamodb")
    body = b"{}"
    base = {"X-Amz-Target": "DynamoDB_20120810.GetItem"}
    for creds, now in [
        (ReadOnlyCredentials("AK", "one", None), dt.datetime(2024, 1, 1, 23, 59, 59)),
        (ReadOnlyCredentials("AK", "one", None), dt.datetime(2024, 1, 2, 0, 0, 1)),
        (ReadOnlyCredentials("AK", "two", "token"), dt.datetime(2024, 1, 2, 0, 0, 2)),
    ]:
        got = dict(base)
        signer.sign(got, body, creds, now)
        got["Content-Length"] = "2"
        expected = botocore_headers(
            "https://dynamodb.us-east-1.amazonaws.com", "us-east-1", base, body, creds, now
        )
        assert {k.lower(): v for k, v in got.items()} == expected
