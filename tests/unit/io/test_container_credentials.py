"""Container credentials (ECS, EKS Pod Identity, Lambda) resolved without a botocore client,
from a local credential endpoint: the same credentials botocore gets, its authorization token
sent, and refreshed as botocore refreshes them."""

from __future__ import annotations

import datetime as dt
import json
import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from unittest import mock

import botocore.session
import pytest

from lsiorm._io.aws_resolution import Fallback, Resolved, resolve


class _Endpoint:
    """A container credential endpoint: each answer's keys are numbered, valid for ``life``."""

    def __init__(self) -> None:
        self.asked: list[str | None] = []
        self.life = dt.timedelta(hours=6)
        self.account_id: str | None = None
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                endpoint.asked.append(self.headers.get("Authorization"))
                n = len(endpoint.asked)
                expires = dt.datetime.now(dt.timezone.utc) + endpoint.life
                body: dict[str, Any] = {
                    "AccessKeyId": f"AKID{n}",
                    "SecretAccessKey": f"secret{n}",
                    "Token": f"token{n}",
                    "Expiration": expires.strftime("%Y-%m-%dT%H:%M:%SZ"),
                }
                if endpoint.account_id is not None:
                    body["AccountId"] = endpoint.account_id
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *_: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v2/credentials"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def endpoint(tmp_path: Path) -> Iterator[tuple[_Endpoint, dict[str, str]]]:
    served = _Endpoint()
    env = {
        "HOME": str(tmp_path),
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_DEFAULT_REGION": "eu-west-1",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI": served.url,
        "AWS_CONTAINER_AUTHORIZATION_TOKEN": "the-token",
    }
    try:
        with mock.patch.dict(os.environ, env, clear=True):
            yield served, env
    finally:
        served.close()


def _keys(credentials: Any) -> tuple[Any, ...]:
    frozen = credentials.get_frozen_credentials()
    return (frozen.access_key, frozen.secret_key, frozen.token, frozen.account_id)


def test_container_credentials_are_botocores(endpoint: tuple[_Endpoint, dict[str, str]]) -> None:
    served, env = endpoint
    served.account_id = "111122223333"
    resolved = resolve(env)
    assert isinstance(resolved, Resolved)
    assert resolved.method == "container-role"
    assert _keys(resolved.credentials) == ("AKID1", "secret1", "token1", "111122223333")
    assert served.asked == ["the-token"]
    # The account id carried by the credentials picks the account-based endpoint.
    assert resolved.endpoint_url == "https://111122223333.ddb.eu-west-1.amazonaws.com"
    theirs = botocore.session.Session().get_credentials()
    assert _keys(theirs) == ("AKID2", "secret2", "token2", "111122223333")


def test_the_token_file_wins_over_the_token(
    endpoint: tuple[_Endpoint, dict[str, str]], tmp_path: Path
) -> None:
    served, env = endpoint
    token_file = tmp_path / "token"
    token_file.write_text("from-the-file")
    resolved = resolve({**env, "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE": str(token_file)})
    assert isinstance(resolved, Resolved)
    assert served.asked == ["from-the-file"]


def test_container_credentials_refresh_as_botocores(
    endpoint: tuple[_Endpoint, dict[str, str]],
) -> None:
    served, env = endpoint
    served.life = dt.timedelta(minutes=5)  # inside botocore's mandatory refresh window
    resolved = resolve(env)
    assert isinstance(resolved, Resolved)
    # Reading the account id of credentials about to expire refreshed them already.
    fetched = len(served.asked)
    # Each read of credentials about to expire fetches fresh ones, as botocore's do.
    assert _keys(resolved.credentials)[0] == f"AKID{fetched + 1}"
    assert _keys(resolved.credentials)[0] == f"AKID{fetched + 2}"
    served.life = dt.timedelta(hours=6)
    assert _keys(resolved.credentials)[0] == f"AKID{fetched + 3}"
    assert _keys(resolved.credentials)[0] == f"AKID{fetched + 3}"  # fresh for hours: kept
    assert len(served.asked) == fetched + 3


def test_a_relative_uri_is_asked_of_the_container_host_only_by_botocore(
    endpoint: tuple[_Endpoint, dict[str, str]],
) -> None:
    _, env = endpoint
    env = {k: v for k, v in env.items() if k != "AWS_CONTAINER_CREDENTIALS_FULL_URI"}
    env["AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"] = "/v2/credentials/x"
    # 169.254.170.2 does not answer here: botocore's provider raises, so the resolution
    # falls back and botocore raises the same when the client is built.
    with mock.patch(
        "botocore.utils.ContainerMetadataFetcher.retrieve_full_uri",
        side_effect=botocore.exceptions.MetadataRetrievalError(error_msg="unreachable"),
    ):
        assert isinstance(resolve(env), Fallback)
