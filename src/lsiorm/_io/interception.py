"""Where a test may step into the requests the drivers send: the slot fault injection uses.

`lsiorm.testing.FaultInjector` installs itself here while it is active. Then the drivers ask it,
for each request, for a `Plan`: it may fail the request before sending it (throttling, a 5xx, a
dropped connection), send other params (part of a batch), or fail or change the answer after
the request was applied (a lost answer). It sits between the driver and both request lanes, so
an injected failure is typed exactly as a real one, traced and logged as one. Without an
interceptor installed, a request costs one attribute lookup here.
"""

from __future__ import annotations

import threading
from typing import Any, Protocol

from lsiorm._ops.steps import Call

__all__ = ["Interceptor", "Plan", "install", "plan_for", "uninstall"]


class Plan(Protocol):
    """What to do with one request: what to send (or what to raise instead), then the answer."""

    def before(self) -> dict[str, Any] | None:
        """The params to send, or None to send nothing; raises the failure to report instead."""

    def after(self, response: dict[str, Any]) -> dict[str, Any]:
        """The answer to hand back for ``response`` (``{}`` when nothing was sent); raises the
        failure to report instead."""


class Interceptor(Protocol):
    """Something that plans requests (see `lsiorm.testing.FaultInjector`)."""

    def plan(self, call: Call, client: Any) -> Plan | None:
        """The plan of one request sent with ``client``, or None to send it untouched."""


_installed: list[Interceptor] = []
_lock = threading.Lock()
#: The interceptor in force (the last installed), or None.
active: Interceptor | None = None


def install(interceptor: Interceptor) -> None:
    """Put ``interceptor`` in force until `uninstall` (the last installed wins)."""
    global active
    with _lock:
        _installed.append(interceptor)
        active = interceptor


def uninstall(interceptor: Interceptor) -> None:
    """Take ``interceptor`` out; the one installed before it, if any, is in force again."""
    global active
    with _lock:
        if interceptor in _installed:
            _installed.remove(interceptor)
        active = _installed[-1] if _installed else None


def plan_for(call: Call, client: Any) -> Plan | None:
    """The plan of the interceptor in force for this request, or None."""
    interceptor = active
    return interceptor.plan(call, client) if interceptor is not None else None
