"""The clientless resolution against botocore's own: generated environments and shared files,
resolved by `aws_resolution.resolve` and by a botocore client sending one GetItem. Either both
give the same credentials, region, signing region and endpoint URL, or the resolution declared
its fallback (and botocore resolves everything itself)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

import botocore.session
import pytest
from botocore.awsrequest import AWSResponse
from botocore.config import Config
from hypothesis import event, example, given, settings
from hypothesis import strategies as st

from lsiorm import ConfigurationError, Session
from lsiorm._io import aws_resolution
from lsiorm._io.aws_resolution import Fallback, Resolved, resolve

# Values botocore takes, more often than those it refuses or the resolution leaves to it.
REGIONS = ["us-east-1", "eu-west-2", "ap-southeast-3", "us-west-2", "sa-east-1", "local",
           "cn-north-1", "us-gov-west-1", "fips-us-east-1", "aws-global", "bad region"]  # fmt: skip
ENDPOINTS = ["http://localhost:8000", "https://ddb.example.com:8443", "http://127.0.0.1:9/x",
             "not a url", "https://dynamodb.us-east-1.api.aws"]  # fmt: skip
BOOLS = ["true", "false", "false", "TRUE", "yes"]
MODES = ["preferred", "disabled", "preferred", "required", "bogus"]
ACCOUNTS = ["111122223333", "444455556666", "bad.account", ""]

_ENV_VALUES: dict[str, list[str]] = {
    "AWS_ACCESS_KEY_ID": ["AKIDENV", ""],
    "AWS_SECRET_ACCESS_KEY": ["env-secret"],
    "AWS_SESSION_TOKEN": ["env-token"],
    "AWS_SECURITY_TOKEN": ["env-old-token"],
    "AWS_ACCOUNT_ID": ACCOUNTS,
    "AWS_DEFAULT_REGION": REGIONS,
    "AWS_REGION": REGIONS,
    "AWS_PROFILE": ["default", "dev", "dev", "missing"],
    "AWS_DEFAULT_PROFILE": ["dev"],
    "AWS_ENDPOINT_URL": ENDPOINTS,
    "AWS_ENDPOINT_URL_DYNAMODB": ENDPOINTS,
    "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": BOOLS,
    "AWS_USE_FIPS_ENDPOINT": BOOLS,
    "AWS_USE_DUALSTACK_ENDPOINT": BOOLS,
    "AWS_ACCOUNT_ID_ENDPOINT_MODE": MODES,
    "AWS_LAMBDA_FUNCTION_NAME": ["fn"],
}
_PROFILE_VALUES: dict[str, list[str]] = {
    "region": REGIONS,
    "aws_access_key_id": ["AKIDFILE", ""],
    "aws_secret_access_key": ["file-secret"],
    "aws_session_token": ["file-token"],
    "aws_account_id": ACCOUNTS,
    "endpoint_url": ENDPOINTS,
    "ignore_configured_endpoint_urls": BOOLS,
    "use_fips_endpoint": BOOLS,
    "use_dualstack_endpoint": BOOLS,
    "account_id_endpoint_mode": MODES,
    "output": ["json"],
}
#: Keys botocore reads and the resolution does not handle: one of them, now and then.
_UNHANDLED_PROFILE = {
    "credential_process": "false",
    "sso_start_url": "https://example.awsapps.com/start",
    "role_arn": "arn:aws:iam::111122223333:role/r",
    "web_identity_token_file": "/nonexistent",
    "tcp_keepalive": "true",
}
_UNHANDLED_ENV = {"AWS_RETRY_MODE": "standard", "AWS_MAX_ATTEMPTS": "2"}
_CREDENTIAL_KEYS = ["aws_access_key_id", "aws_secret_access_key", "aws_session_token",
                    "aws_account_id", "region"]  # fmt: skip


def _mapping(
    values: dict[str, list[str]],
    keys: list[str] | None = None,
    unhandled: dict[str, str] | None = None,
) -> Any:
    """Some of ``keys``, each with one of its values; one ``unhandled`` key a fifth of the time."""
    names = keys if keys is not None else sorted(values)
    known = st.fixed_dictionaries(
        {}, optional={name: st.sampled_from(values[name]) for name in names}
    )
    if not unhandled:
        return known
    extra = st.sampled_from([None, None, None, None, *sorted(unhandled)])
    return st.tuples(known, extra).map(
        lambda pair: pair[0] if pair[1] is None else {**pair[0], pair[1]: unhandled[pair[1]]}
    )


PROFILE = _mapping(_PROFILE_VALUES, unhandled=_UNHANDLED_PROFILE)
CREDENTIAL_PROFILE = _mapping(_PROFILE_VALUES, _CREDENTIAL_KEYS)
FILES = st.fixed_dictionaries(
    {},
    optional={
        "config": st.dictionaries(st.sampled_from(["default", "dev"]), PROFILE, max_size=2),
        "credentials": st.dictionaries(
            st.sampled_from(["default", "dev"]), CREDENTIAL_PROFILE, max_size=2
        ),
    },
)
ENV = _mapping(_ENV_VALUES, unhandled=_UNHANDLED_ENV)
ARGS = st.fixed_dictionaries(
    {
        "region_name": st.sampled_from([None, "us-west-2", "eu-central-1"]),
        "endpoint_url": st.sampled_from([None, "http://127.0.0.1:8000"]),
    }
)


def _ini(profiles: Mapping[str, Mapping[str, str]], *, config: bool) -> str:
    lines = []
    for name, values in profiles.items():
        header = name if not config or name == "default" else f"profile {name}"
        lines.append(f"[{header}]")
        lines.extend(f"{key} = {value}" for key, value in values.items())
    return "\n".join(lines) + "\n"


@contextmanager
def _world(env: Mapping[str, str], files: Mapping[str, Any]) -> Iterator[dict[str, str]]:
    """A home of its own with the shared files, and the process environment set to ``env``."""
    with tempfile.TemporaryDirectory(prefix="lsiorm-res-") as home:
        full = {"HOME": home, "AWS_EC2_METADATA_DISABLED": "true", **env}
        aws = Path(home, ".aws")
        aws.mkdir()
        for kind in ("config", "credentials"):
            if kind in files:
                Path(aws, kind).write_text(_ini(files[kind], config=kind == "config"))
        with mock.patch.dict(os.environ, full, clear=True):
            yield full


class _Raw:
    def stream(self, *_: Any, **__: Any) -> Iterator[bytes]:
        yield b"{}"


def _botocore_sends(
    region_name: str | None = None, endpoint_url: str | None = None
) -> dict[str, Any]:
    """What a botocore client built as a session builds it does for one GetItem."""
    session = botocore.session.Session()
    client = session.create_client(
        "dynamodb",
        region_name=region_name,
        endpoint_url=endpoint_url,
        config=Config(retries={"total_max_attempts": 1}),
    )
    seen: dict[str, Any] = {}

    def answer(request: Any, **_: Any) -> AWSResponse:
        seen["url"] = request.url
        seen["authorization"] = request.headers["Authorization"].decode()
        return AWSResponse(request.url, 200, {}, _Raw())

    client.meta.events.register("before-send.dynamodb.GetItem", answer)
    client.get_item(TableName="t", Key={"k": {"S": "v"}})
    frozen = client._request_signer._credentials.get_frozen_credentials()
    seen["credentials"] = (
        frozen.access_key,
        frozen.secret_key,
        frozen.token,
        getattr(frozen, "account_id", None),
    )
    seen["region"] = client.meta.region_name
    client.close()
    return seen


def _ours(resolved: Resolved) -> dict[str, Any]:
    frozen = resolved.credentials.get_frozen_credentials()
    return {
        "credentials": (
            frozen.access_key,
            frozen.secret_key,
            frozen.token,
            getattr(frozen, "account_id", None),
        ),
        "region": resolved.region,
        "url": resolved.endpoint_url,
    }


def _compare(env: Mapping[str, str], files: Mapping[str, Any], args: Mapping[str, Any]) -> bool:
    """Resolve in the world of ``env`` and ``files``; assert it is botocore's resolution.
    True when it resolved (False: it declared the fallback)."""
    with _world(env, files) as full:
        resolved = resolve(full, **args)
        if isinstance(resolved, Fallback):
            return False
        ours = _ours(resolved)
        theirs = _botocore_sends(**args)
    assert ours["credentials"] == theirs["credentials"]
    assert ours["region"] == theirs["region"]
    assert ours["url"].rstrip("/") == theirs["url"].rstrip("/")
    assert f"/{resolved.region}/dynamodb/aws4_request" in theirs["authorization"]
    return True


_CREDS = {"AWS_ACCESS_KEY_ID": "AKIDENV", "AWS_SECRET_ACCESS_KEY": "env-secret"}


@settings(max_examples=150, deadline=None)
@given(env=ENV, files=FILES, args=ARGS)
# Cases the generation found once, kept: an explicit profile that does not exist, an empty
# account id (set, and invalid), the "local" region (its rule signs for us-east-1), a FIPS
# pseudo region with an endpoint, a dual-stack endpoint given as the endpoint.
@example(env={**_CREDS, "AWS_PROFILE": "default"}, files={}, args={"region_name": "us-west-2"})
@example(
    env={},
    files={"credentials": {"default": {"aws_access_key_id": "A", "aws_secret_access_key": "S",
                                       "aws_account_id": "", "region": "us-east-1"}}},
    args={},
)  # fmt: skip
@example(env={**_CREDS, "AWS_DEFAULT_REGION": "local"}, files={}, args={})
@example(
    env=_CREDS,
    files={},
    args={"region_name": "fips-us-east-1", "endpoint_url": "http://127.0.0.1:8000"},
)
@example(
    env={**_CREDS, "AWS_ENDPOINT_URL": "https://dynamodb.us-east-1.api.aws"},
    files={},
    args={"region_name": "us-east-1"},
)
def test_the_resolution_is_botocores_or_a_declared_fallback(
    env: dict[str, str], files: dict[str, Any], args: dict[str, Any]
) -> None:
    resolved = _compare(env, files, args)
    event("resolved" if resolved else "fallback")


HANDLED_ENV = st.fixed_dictionaries(
    {
        "AWS_ACCESS_KEY_ID": st.just("AKIDENV"),
        "AWS_SECRET_ACCESS_KEY": st.just("env-secret"),
    },
    optional={
        "AWS_SESSION_TOKEN": st.just("env-token"),
        "AWS_ACCOUNT_ID": st.sampled_from(ACCOUNTS),
        "AWS_DEFAULT_REGION": st.sampled_from(["us-east-1", "eu-west-2", "local"]),
        "AWS_PROFILE": st.sampled_from(["default", "dev"]),
        "AWS_ENDPOINT_URL_DYNAMODB": st.sampled_from(ENDPOINTS[:3]),
        "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": st.sampled_from(BOOLS),
        "AWS_USE_FIPS_ENDPOINT": st.sampled_from(BOOLS),
        "AWS_USE_DUALSTACK_ENDPOINT": st.sampled_from(BOOLS),
        "AWS_ACCOUNT_ID_ENDPOINT_MODE": st.sampled_from(MODES[:4]),
    },
)
HANDLED_PROFILE = st.fixed_dictionaries(
    {"region": st.sampled_from(["us-west-1", "ap-south-1"])},
    optional={
        name: st.sampled_from(_PROFILE_VALUES[name])
        for name in ("endpoint_url", "use_fips_endpoint", "use_dualstack_endpoint",
                     "account_id_endpoint_mode", "aws_account_id")
    },
)  # fmt: skip


@settings(max_examples=100, deadline=None)
@given(
    env=HANDLED_ENV,
    profiles=st.fixed_dictionaries({"default": HANDLED_PROFILE, "dev": HANDLED_PROFILE}),
    use_credentials_file=st.booleans(),
)
def test_environments_of_the_handled_cases_resolve_as_botocore(
    env: dict[str, str], profiles: dict[str, Any], use_credentials_file: bool
) -> None:
    """Environment or shared-file credentials with endpoint, FIPS, dual-stack and account
    settings: the resolution is botocore's whenever it resolves (most of the time)."""
    if use_credentials_file:
        del env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"]
        files: dict[str, Any] = {
            "config": profiles,
            "credentials": {
                name: {"aws_access_key_id": f"AKID{name}", "aws_secret_access_key": "s"}
                for name in profiles
            },
        }
    else:
        files = {"config": profiles}
    event("resolved" if _compare(env, files, {}) else "fallback")


@pytest.mark.parametrize(
    ("env", "files", "args", "url"),
    [
        (  # Lambda: environment credentials and region
            {"AWS_ACCESS_KEY_ID": "A", "AWS_SECRET_ACCESS_KEY": "S", "AWS_SESSION_TOKEN": "T",
             "AWS_REGION": "eu-west-1", "AWS_DEFAULT_REGION": "eu-west-1",
             "AWS_LAMBDA_FUNCTION_NAME": "f"},
            {}, {}, "https://dynamodb.eu-west-1.amazonaws.com",
        ),
        (  # a named profile of the shared files, its region in the config file
            {"AWS_PROFILE": "dev"},
            {"config": {"dev": {"region": "ap-southeast-2"}},
             "credentials": {"dev": {"aws_access_key_id": "A", "aws_secret_access_key": "S"}}},
            {}, "https://dynamodb.ap-southeast-2.amazonaws.com",
        ),
        (  # the account-based endpoint, preferred by default
            {"AWS_ACCESS_KEY_ID": "A", "AWS_SECRET_ACCESS_KEY": "S",
             "AWS_ACCOUNT_ID": "111122223333"},
            {}, {"region_name": "us-east-2"}, "https://111122223333.ddb.us-east-2.amazonaws.com",
        ),
        (  # account-based and dual-stack
            {"AWS_ACCESS_KEY_ID": "A", "AWS_SECRET_ACCESS_KEY": "S",
             "AWS_ACCOUNT_ID": "111122223333", "AWS_USE_DUALSTACK_ENDPOINT": "true"},
            {}, {"region_name": "us-east-2"}, "https://111122223333.ddb.us-east-2.api.aws",
        ),
        (  # FIPS: no account-based endpoint
            {"AWS_ACCESS_KEY_ID": "A", "AWS_SECRET_ACCESS_KEY": "S",
             "AWS_ACCOUNT_ID": "111122223333", "AWS_USE_FIPS_ENDPOINT": "true"},
            {}, {"region_name": "us-east-2"}, "https://dynamodb-fips.us-east-2.amazonaws.com",
        ),
        (  # the config file's endpoint_url and static keys
            {},
            {"config": {"default": {"region": "us-west-1", "endpoint_url": "http://localhost:8000",
                                    "aws_access_key_id": "A", "aws_secret_access_key": "S"}}},
            {}, "http://localhost:8000",
        ),
    ],
)  # fmt: skip
def test_common_cases_resolve_without_botocore(
    env: dict[str, str], files: dict[str, Any], args: dict[str, Any], url: str
) -> None:
    assert _compare(env, files, args)
    with _world(env, files) as full:
        resolved = resolve(full, **args)
    assert isinstance(resolved, Resolved)
    assert resolved.endpoint_url == url


@pytest.mark.parametrize(
    ("env", "profile"),
    [
        ({"AWS_ROLE_ARN": "arn:aws:iam::1:role/r", "AWS_WEB_IDENTITY_TOKEN_FILE": "/t"}, {}),
        ({}, {"credential_process": "false"}),
        ({}, {"sso_session": "s", "sso_account_id": "1"}),
        ({}, {"role_arn": "arn:aws:iam::1:role/r", "credential_source": "Environment"}),
        ({"AWS_ACCESS_KEY_ID": "A", "AWS_SECRET_ACCESS_KEY": "S"}, {"services": "mine"}),
        ({"AWS_ACCESS_KEY_ID": "A", "AWS_SECRET_ACCESS_KEY": "S", "AWS_RETRY_MODE": "standard"},
         {}),
        ({"AWS_ACCESS_KEY_ID": "A", "AWS_SECRET_ACCESS_KEY": "S", "HTTPS_PROXY": "http://p:1"},
         {}),
        ({}, {}),  # nothing before the instance metadata service
        ({"AWS_ACCESS_KEY_ID": "A"}, {}),  # botocore refuses partial credentials
        ({"AWS_ACCESS_KEY_ID": "A", "AWS_SECRET_ACCESS_KEY": "S",
          "AWS_ACCOUNT_ID_ENDPOINT_MODE": "required"}, {}),  # required without an account id
    ],
)  # fmt: skip
def test_cases_not_handled_fall_back_whole(env: dict[str, str], profile: dict[str, str]) -> None:
    files = {"config": {"default": {"region": "us-east-1", **profile}}}
    with _world(env, files) as full:
        assert isinstance(resolve(full), Fallback)


def test_account_endpoint_follows_the_credentials_account() -> None:
    resolved = Resolved(
        region="eu-west-1",
        endpoint_url="",
        credentials=None,
        custom_endpoint=False,
        fips=False,
        dualstack=False,
        account_mode="preferred",
        method="env",
    )
    assert resolved.endpoint_for("123456789012") == aws_resolution.account_endpoint(
        "eu-west-1", "123456789012", False
    )
    assert resolved.endpoint_for(None) == "https://dynamodb.eu-west-1.amazonaws.com"
    disabled = Resolved(**{**resolved.__dict__, "account_mode": "disabled"})
    assert disabled.endpoint_for("123456789012") == "https://dynamodb.eu-west-1.amazonaws.com"


BAD_ENDPOINTS = ["http://localhost:99999", "http://localhost:port", "http://[::1:8000"]


@pytest.mark.parametrize("url", BAD_ENDPOINTS)
def test_an_endpoint_no_request_can_reach_is_refused_by_its_rule(url: str) -> None:
    """botocore takes such a URL and fails every request with a ValueError; the resolution
    refuses it with the typed error, whether it is given or set in the environment."""
    with _world(_CREDS, {}) as full, pytest.raises(ConfigurationError) as given:
        resolve(full, region_name="us-east-1", endpoint_url=url)
    assert given.value.rule == "config.endpoint-url"
    env = {**_CREDS, "AWS_ENDPOINT_URL": url}
    with _world(env, {}) as full, pytest.raises(ConfigurationError) as configured:
        resolve(full, region_name="us-east-1")
    assert configured.value.rule == "config.endpoint-url"


@pytest.mark.parametrize("clientless", ["1", "0"])
@pytest.mark.parametrize("url", BAD_ENDPOINTS)
def test_a_session_refuses_an_endpoint_no_request_can_reach(
    url: str, clientless: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LSIORM_CLIENTLESS", clientless)
    for name, value in _CREDS.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ConfigurationError) as refused:
        Session(endpoint_url=url, region_name="us-east-1")
    assert refused.value.rule == "config.endpoint-url"


def test_an_endpoint_with_a_port_is_taken_as_it_is() -> None:
    assert aws_resolution.check_endpoint_url("http://localhost:8000") == 8000
    assert aws_resolution.check_endpoint_url("https://dynamodb.us-east-1.amazonaws.com") is None
