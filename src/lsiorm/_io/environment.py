"""What a session reads from the environment when its arguments leave a setting open.

`Session()`, `AsyncSession()` and the `lsiorm` command read the same variables, here:

* the endpoint: botocore's own ``AWS_ENDPOINT_URL_DYNAMODB``, then ``AWS_ENDPOINT_URL`` (both
  read by botocore itself, with its config file), then ``LSIORM_ENDPOINT_URL``, kept as an
  alias of them;
* the table prefix: ``LSIORM_TABLE_PREFIX``, for a session given neither ``table_prefix`` nor
  ``table_names``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

__all__ = ["ENDPOINT_ENV", "TABLE_PREFIX_ENV", "endpoint_alias", "table_prefix"]

#: lsiorm's own endpoint variable, used when neither of botocore's is set.
ENDPOINT_ENV = "LSIORM_ENDPOINT_URL"
#: The variable of the table prefix of a session that names none.
TABLE_PREFIX_ENV = "LSIORM_TABLE_PREFIX"

# botocore's endpoint variables (it reads them itself) and its switch that ignores them.
_BOTOCORE_ENDPOINTS = ("AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL")
_IGNORE = "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"


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
