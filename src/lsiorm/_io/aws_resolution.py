"""Where a session's first requests go, and with which credentials, worked out without botocore's
client: the common cases of botocore's own resolution, and a declared fallback for the rest.

Building a botocore client reads its loaders, the service model, the endpoint rules and every
credential provider's setup; a cold start (a Lambda's first call) pays for all of it. For the
cases below `resolve` gives the same region, endpoint and credentials botocore would, from the
same sources and in the same order, using botocore's own parsers and providers
(``botocore.configloader``, ``botocore.credentials``: no ``botocore.client``):

* credentials, in botocore's order: the environment (``AWS_ACCESS_KEY_ID``,
  ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``, ``AWS_ACCOUNT_ID``), the shared credentials
  file, the config file (static keys and session tokens of the profile), then the container
  credential endpoint (``AWS_CONTAINER_CREDENTIALS_RELATIVE_URI`` or ``_FULL_URI``, with
  ``AWS_CONTAINER_AUTHORIZATION_TOKEN`` or ``_TOKEN_FILE``: ECS, EKS Pod Identity, Lambda's
  SnapStart), refreshed as botocore refreshes them;
* the profile: ``AWS_DEFAULT_PROFILE``, then ``AWS_PROFILE``, else ``default``, from
  ``AWS_CONFIG_FILE`` and ``AWS_SHARED_CREDENTIALS_FILE`` (or ``~/.aws/config`` and
  ``~/.aws/credentials``), merged as botocore merges them;
* the region: the session's ``region_name``, else ``AWS_DEFAULT_REGION``, else the profile's
  ``region`` (botocore does not read ``AWS_REGION``);
* TLS verification: ``AWS_CA_BUNDLE``, the profile's ``ca_bundle``, else ``REQUESTS_CA_BUNDLE``;
* the endpoint: the session's ``endpoint_url``, else ``AWS_ENDPOINT_URL_DYNAMODB``,
  ``AWS_ENDPOINT_URL``, the profile's ``endpoint_url`` (unless
  ``AWS_IGNORE_CONFIGURED_ENDPOINT_URLS``/``ignore_configured_endpoint_urls``), else DynamoDB's
  endpoint rules for a region of the ``aws`` partition: FIPS, dual-stack, and the account-based
  endpoint ``https://{account}.ddb.{region}.amazonaws.com`` for credentials that carry an account
  id, as ``account_id_endpoint_mode`` (``preferred``, ``required``, ``disabled``) decides.

Everything else is `Fallback`, decided before anything is sent, for the whole resolution (never
part of it): an environment variable or profile key this module does not know (SSO, process
credentials, assume-role and web-identity profiles, ``credential_source``, ``services``
sections, retry, defaults or proxy settings, ...), a region outside the ``aws``
partition, a combination botocore refuses, a profile that does not exist, files that do not
parse, or no credentials before the instance metadata service would be asked. The session then
builds its botocore client as before, and botocore resolves everything itself.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping
from typing import Any, Final

from lsiorm.errors import ConfigurationError

__all__ = [
    "Fallback",
    "Resolved",
    "account_endpoint",
    "check_endpoint_url",
    "resolve",
    "rules_endpoint",
]

#: The environment variables this module reads, or knows to change nothing it resolves.
_KNOWN_ENV: Final = frozenset(
    {
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_SECURITY_TOKEN",
        "AWS_ACCOUNT_ID",
        "AWS_DEFAULT_REGION",
        "AWS_REGION",  # set by Lambda beside AWS_DEFAULT_REGION; botocore does not read it
        "AWS_PROFILE",
        "AWS_DEFAULT_PROFILE",
        "AWS_CONFIG_FILE",
        "AWS_SHARED_CREDENTIALS_FILE",
        "AWS_ENDPOINT_URL",
        "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS",
        "AWS_USE_FIPS_ENDPOINT",
        "AWS_USE_DUALSTACK_ENDPOINT",
        "AWS_ACCOUNT_ID_ENDPOINT_MODE",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_CONTAINER_AUTHORIZATION_TOKEN",
        "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
        "AWS_CA_BUNDLE",
        "AWS_EXECUTION_ENV",  # only in the user agent
        "AWS_EC2_METADATA_DISABLED",  # only for the instance metadata service, never reached
    }
)
#: Prefixes of variables that change nothing resolved here (Lambda's own, X-Ray's, the
#: endpoints of other services: ``AWS_ENDPOINT_URL_DYNAMODB`` is read by name).
_KNOWN_ENV_PREFIXES: Final = ("AWS_LAMBDA_", "AWS_XRAY_", "AWS_ENDPOINT_URL_")
#: The profile keys resolved here (``output`` and the CLI's own keys change nothing).
_KNOWN_PROFILE_KEYS: Final = frozenset(
    {
        "aws_access_key_id",
        "aws_secret_access_key",
        "aws_session_token",
        "aws_security_token",
        "aws_account_id",
        "region",
        "endpoint_url",
        "ignore_configured_endpoint_urls",
        "use_fips_endpoint",
        "use_dualstack_endpoint",
        "account_id_endpoint_mode",
        "ca_bundle",
        "output",
    }
)
#: Where botocore reads the profile's name, in its order (an empty value names a profile too).
_PROFILE_ENV: Final = ("AWS_DEFAULT_PROFILE", "AWS_PROFILE")
_ACCOUNT_MODES: Final = frozenset({"preferred", "required", "disabled"})
#: The regions of the ``aws`` partition, as botocore's partition data matches them.
_AWS_REGION: Final = re.compile(r"^(us|eu|ap|sa|ca|me|af|il|mx)\-\w+\-\d+$")
#: A region name botocore accepts (its ``validate_region_name``).
_REGION_NAME: Final = re.compile(r"^[a-zA-Z0-9](?:[a-zA-Z0-9\-]{0,61}[a-zA-Z0-9])?$")
#: The endpoint rules' ``isValidHostLabel`` (not allowing dots).
_HOST_LABEL: Final = re.compile(r"^(?!-)[a-zA-Z\d-]{1,63}(?<!-)$")
#: botocore's pre-2.0 credential files, read before the container endpoint is asked.
_BOTO_FILES: Final = ("/etc/boto.cfg", "~/.boto")


@dataclasses.dataclass(frozen=True)
class Fallback:
    """Botocore must resolve this session's client itself; ``reason`` says why."""

    reason: str


@dataclasses.dataclass(frozen=True)
class Resolved:
    """What botocore would resolve: the region, the endpoint, the credentials.

    ``credentials`` is botocore's own credentials object (``get_frozen_credentials``);
    ``endpoint_url`` the endpoint for the credentials' account id when resolved (an
    account-based endpoint is decided per account id: `endpoint_for`).
    """

    region: str
    endpoint_url: str
    credentials: Any
    custom_endpoint: bool
    fips: bool
    dualstack: bool
    account_mode: str
    method: str
    #: TLS verification as botocore's endpoint takes it: the CA bundle's path, or True.
    verify: str | bool = True

    def endpoint_for(self, account_id: str | None) -> str | None:
        """The endpoint botocore would send to with credentials of ``account_id`` (None: one
        botocore would refuse or that is not resolved here)."""
        if self.custom_endpoint:
            return self.endpoint_url
        return rules_endpoint(self.region, self.fips, self.dualstack, self.account_mode, account_id)


def account_endpoint(region: str, account_id: str, dualstack: bool) -> str:
    """The account-based endpoint of ``account_id`` in an ``aws`` partition region."""
    suffix = "api.aws" if dualstack else "amazonaws.com"
    return f"https://{account_id}.ddb.{region}.{suffix}"


def rules_endpoint(
    region: str, fips: bool, dualstack: bool, account_mode: str, account_id: str | None
) -> str | None:
    """DynamoDB's endpoint rules for a region of the ``aws`` partition without a custom
    endpoint; None where the rules give an error (botocore refuses) or another partition."""
    if not _AWS_REGION.match(region):  # "local" too: its rule signs for another region
        return None
    suffix = "api.aws" if dualstack else "amazonaws.com"
    if fips:
        return None if account_mode == "required" else f"https://dynamodb-fips.{region}.{suffix}"
    if account_mode != "disabled" and account_id is not None:  # an empty one is set too
        if not _HOST_LABEL.match(account_id):
            return None
        return account_endpoint(region, account_id, dualstack)
    if account_mode == "required":
        return None
    return f"https://dynamodb.{region}.{suffix}"


def _unknown_env(env: Mapping[str, str]) -> str | None:
    for name in env:
        upper = name.upper()
        if upper.endswith("_PROXY") or upper in ("BOTO_CONFIG", "AWS_DATA_PATH"):
            return name
        if not name.startswith("AWS_") or name in _KNOWN_ENV:
            continue
        if name.startswith(_KNOWN_ENV_PREFIXES):
            continue
        return name
    return None


def _profiles(env: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    """The profiles of the config and credentials files, merged as botocore's session merges
    them (a credentials file's keys win). Raises botocore's parse errors."""
    from botocore.configloader import load_config, raw_config_parse
    from botocore.exceptions import ConfigNotFound

    config_file = env.get("AWS_CONFIG_FILE", "~/.aws/config")
    try:
        profiles: dict[str, dict[str, Any]] = load_config(config_file)["profiles"]
    except ConfigNotFound:
        profiles = {}
    credentials_file = env.get("AWS_SHARED_CREDENTIALS_FILE", "~/.aws/credentials")
    try:
        for name, values in raw_config_parse(credentials_file).items():
            profiles.setdefault(name, {}).update(values)
    except ConfigNotFound:
        pass
    return profiles


def _flag(env: Mapping[str, str], env_name: str, profile: Mapping[str, Any], key: str) -> bool:
    from botocore.utils import ensure_boolean

    value = env.get(env_name)
    if value is None:
        value = profile.get(key)
    return bool(ensure_boolean(value)) if value is not None else False


def _endpoint_override(env: Mapping[str, str], profile: Mapping[str, Any]) -> str | None:
    ignore = "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"
    if _flag(env, ignore, profile, "ignore_configured_endpoint_urls"):
        return None
    for value in (
        env.get("AWS_ENDPOINT_URL_DYNAMODB"),
        env.get("AWS_ENDPOINT_URL"),
        profile.get("endpoint_url"),
    ):
        if value:
            return str(value)
    return None


def _custom_endpoint(
    env: Mapping[str, str], profile: Mapping[str, Any], given: str | None
) -> str | None:
    """The endpoint given or configured (None: the endpoint rules decide), refused by
    `check_endpoint_url` when no request can reach it."""
    custom = given or _endpoint_override(env, profile)
    if custom is not None:
        check_endpoint_url(custom)
    return custom


def _credentials(env: Mapping[str, str], profile_name: str) -> tuple[Any, str] | Fallback:
    """botocore's chain up to the container endpoint: the credentials and the method that
    found them, or the fallback (any provider raising: botocore raises the same)."""
    from botocore import credentials as providers
    from botocore.configloader import load_config

    config_file = env.get("AWS_CONFIG_FILE", "~/.aws/config")
    credentials_file = env.get("AWS_SHARED_CREDENTIALS_FILE", "~/.aws/credentials")
    chain = (
        providers.EnvProvider(environ=dict(env)),
        providers.SharedCredentialProvider(credentials_file, profile_name),
        providers.ConfigProvider(config_file, profile_name, load_config),
    )
    for provider in chain:
        found = provider.load()
        if found is not None:
            return found, str(provider.METHOD)
    if any(os.path.isfile(os.path.expanduser(path)) for path in _BOTO_FILES):
        return Fallback("a boto 2 credentials file (/etc/boto.cfg or ~/.boto)")
    container = providers.ContainerProvider(environ=dict(env)).load()
    if container is None:
        return Fallback("no credentials before the instance metadata service")
    return container, str(providers.ContainerProvider.METHOD)


def resolve(
    env: Mapping[str, str],
    *,
    region_name: str | None = None,
    endpoint_url: str | None = None,
) -> Resolved | Fallback:
    """Resolve the region, endpoint and credentials of a DynamoDB client built by a default
    boto3 session with only ``region_name`` and ``endpoint_url`` given, as botocore would, or
    declare the fallback (see the module). May ask the container credential endpoint."""
    unknown = _unknown_env(env)
    if unknown is not None:
        return Fallback(f"the environment sets {unknown}")
    try:
        return _resolve(env, region_name, endpoint_url)
    except ConfigurationError:
        raise  # an endpoint URL no request can be sent to (`check_endpoint_url`)
    except Exception as exc:  # whatever botocore's pieces raise, botocore decides
        return Fallback(f"{type(exc).__name__}: {exc}")


def _resolve(
    env: Mapping[str, str], region_name: str | None, endpoint_url: str | None
) -> Resolved | Fallback:
    named = next((env[name] for name in _PROFILE_ENV if name in env), None)
    profiles = _profiles(env)
    if named is not None and named not in profiles:
        return Fallback(f"the profile {named!r} does not exist")  # botocore raises
    profile_name = named or "default"
    profile = profiles.get(profile_name, {})
    for key in profile:
        if key not in _KNOWN_PROFILE_KEYS:
            return Fallback(f"the profile sets {key}")
    region = region_name or env.get("AWS_DEFAULT_REGION") or profile.get("region")
    if not region:
        return Fallback("no region")
    mode = str(
        env.get("AWS_ACCOUNT_ID_ENDPOINT_MODE")
        or profile.get("account_id_endpoint_mode")
        or "preferred"
    )
    if mode not in _ACCOUNT_MODES:
        return Fallback(f"account_id_endpoint_mode {mode!r}")
    fips = _flag(env, "AWS_USE_FIPS_ENDPOINT", profile, "use_fips_endpoint")
    dualstack = _flag(env, "AWS_USE_DUALSTACK_ENDPOINT", profile, "use_dualstack_endpoint")
    custom = _custom_endpoint(env, profile, endpoint_url)
    if custom is not None and (fips or dualstack or not _plain_url(custom)):
        return Fallback("a custom endpoint with FIPS or dual-stack, or not a plain URL")
    if custom is not None and _dualstack_like(custom):
        return Fallback("a custom endpoint like a dual-stack one (botocore refuses it)")
    if "fips" in region or not _REGION_NAME.match(region):
        return Fallback(f"the region {region!r}")  # botocore rewrites FIPS pseudo regions
    if custom is None and not _AWS_REGION.match(region):
        return Fallback(f"the region {region!r} is not one of the aws partition")
    found = _credentials(env, profile_name)
    if isinstance(found, Fallback):
        return found
    credentials, method = found
    account_id = getattr(credentials, "account_id", None)
    bundle = env.get("AWS_CA_BUNDLE") or profile.get("ca_bundle")
    resolved = Resolved(
        region=str(region),
        endpoint_url=custom or "",
        credentials=credentials,
        custom_endpoint=custom is not None,
        fips=fips,
        dualstack=dualstack,
        account_mode=mode,
        method=method,
        verify=str(bundle) if bundle else env.get("REQUESTS_CA_BUNDLE", True),
    )
    url = resolved.endpoint_for(account_id)
    if url is None:
        return Fallback("the endpoint rules refuse this configuration, or it is not resolved here")
    return dataclasses.replace(resolved, endpoint_url=url)


def check_endpoint_url(url: str) -> int | None:
    """The port of an endpoint URL (None: its scheme's), after refusing a URL no request can be
    sent to: a port that is not a number from 0 to 65535, or a broken IPv6 host (botocore
    takes such a URL, and fails every request with a ``ValueError``). Raises
    `ConfigurationError`, rule ``config.endpoint-url``.
    """
    from urllib.parse import urlsplit

    try:
        return urlsplit(url).port
    except ValueError as exc:
        raise ConfigurationError(
            "config.endpoint-url", f"The endpoint URL {url!r} cannot be used: {exc}."
        ) from exc


def _plain_url(url: str) -> bool:
    """An http(s) URL with a host, no user info, query or fragment (as botocore takes it); its
    port was checked by `check_endpoint_url`."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return (
        parts.scheme in ("http", "https")
        and bool(parts.hostname)
        and not parts.username
        and not parts.query
        and not parts.fragment
        and url == url.strip()
    )


def _dualstack_like(url: str) -> bool:
    """A DynamoDB endpoint of AWS that is not on ``amazonaws.com``: the rules refuse a
    dual-stack endpoint given as the endpoint (left to botocore, with every such host)."""
    from urllib.parse import urlsplit

    host = (urlsplit(url).hostname or "").lower()
    return host.startswith("dynamodb.") and not host.endswith(".amazonaws.com")
