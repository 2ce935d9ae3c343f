"""What a session reads from the environment when its arguments leave a setting open.

`Session()`, `AsyncSession()` and the `lsiorm` command read the same variables, here:

* the endpoint: botocore's own ``AWS_ENDPOINT_URL_DYNAMODB``, then ``AWS_ENDPOINT_URL`` (both
  read by botocore itself, with its config file), then ``LSIORM_ENDPOINT_URL``, kept as an
  alias of them;
* the table prefix: ``LSIORM_TABLE_PREFIX``, for a session given neither ``table_prefix`` nor
  ``table_names``;
* the DynamoDB Streams endpoint (a table migration reads the source's stream): botocore's
  ``AWS_ENDPOINT_URL_DYNAMODB_STREAMS`` (and ``AWS_ENDPOINT_URL``, its config file), else the
  DynamoDB client's own endpoint when that is not one of AWS's (a local engine serves both
  APIs on one endpoint), else AWS's.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from urllib.parse import urlsplit

__all__ = [
    "ENDPOINT_ENV",
    "TABLE_PREFIX_ENV",
    "endpoint_alias",
    "streams_endpoint",
    "table_prefix",
]

#: lsiorm's own endpoint variable, used when neither of botocore's is set.
ENDPOINT_ENV = "LSIORM_ENDPOINT_URL"
#: The variable of the table prefix of a session that names none.
TABLE_PREFIX_ENV = "LSIORM_TABLE_PREFIX"

# botocore's endpoint variables (it reads them itself) and its switch that ignores them.
_BOTOCORE_ENDPOINTS = ("AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL")
_IGNORE = "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"
_STREAMS_ENDPOINT = "AWS_ENDPOINT_URL_DYNAMODB_STREAMS"
# The DNS suffixes of AWS's own endpoints: there the Streams API has endpoints of its own.
_AWS_SUFFIXES = (".amazonaws.com", ".amazonaws.com.cn", ".api.aws")


def endpoint_alias(environ: Mapping[str, str] | None = None) -> str | None:
    """The endpoint a client must be given from ``LSIORM_ENDPOINT_URL``, or None.

    None when it is unset, when botocore finds one of its own variables (which then win), or
    when ``AWS_IGNORE_CONFIGURED_ENDPOINT_URLS`` is true.
    """
    env = os.environ if environ is None else environ
    if env.get(_IGNORE, "").strip().lower() == "true":
        return None
    if any(env.get(name) for name in _BOTOCORE_ENDPOINTS):
        return None
    return env.get(ENDPOINT_ENV) or None


def table_prefix(environ: Mapping[str, str] | None = None) -> str:
    """The table prefix of a session that names none (``LSIORM_TABLE_PREFIX``, else none)."""
    env = os.environ if environ is None else environ
    return env.get(TABLE_PREFIX_ENV, "")


def streams_endpoint(
    dynamodb_endpoint: str | None, environ: Mapping[str, str] | None = None
) -> str | None:
    """The endpoint to give a DynamoDB Streams client built next to a DynamoDB client that talks
    to ``dynamodb_endpoint``, or None to let botocore resolve it.

    botocore gives the Streams client an endpoint of its own from ``AWS_ENDPOINT_URL_DYNAMODB_
    STREAMS`` or ``AWS_ENDPOINT_URL`` (or its config file), else AWS's; it never reads
    ``AWS_ENDPOINT_URL_DYNAMODB`` for it. A DynamoDB endpoint that is not AWS's (DynamoDB Local,
    moto, a proxy) serves the Streams API too, so that one is given unless the environment
    names a Streams endpoint.
    """
    env = os.environ if environ is None else environ
    if dynamodb_endpoint is None or env.get(_STREAMS_ENDPOINT) or env.get("AWS_ENDPOINT_URL"):
        return None
    host = (urlsplit(dynamodb_endpoint).hostname or "").lower()
    if host.endswith(_AWS_SUFFIXES):
        return None
    return dynamodb_endpoint
