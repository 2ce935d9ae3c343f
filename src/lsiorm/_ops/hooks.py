"""Hooks around every request and response, run once in the shared core for sync and async.

A hook is any object; each of its methods is optional. ``before(request)`` may change
``request.params`` in place. ``after(request, response)`` sees every successful response (each
retry of a request is a separate request/response pair). ``error(request, error)`` sees every
failed attempt. A hook must not change the response; an exception raised by a hook is logged
and otherwise ignored, so a broken hook never breaks the caller's request.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lsiorm._model.schema import Table

__all__ = ["HookRequest", "apply_after", "apply_before", "apply_error"]

log = logging.getLogger("lsiorm.middleware")


@dataclass
class HookRequest:
    """A request about to be sent: the API operation, its params and the tables it touches."""

    operation: str
    params: dict[str, Any]
    tables: tuple[Table, ...] = field(default=())

    def table(self, name: str) -> Table | None:
        """Return the declared Table of that name among those the request touches."""
        for t in self.tables:
            if t.name == name:
                return t
        return None


def _each(hooks: Sequence[object], method: str, *args: Any) -> None:
    for hook in hooks:
        fn = getattr(hook, method, None)
        if fn is None:
            continue
        try:
            fn(*args)
        except Exception:  # a hook must never break the request it observes
            log.exception("lsiorm hook %r failed in %s()", hook, method)


def apply_before(hooks: Sequence[object], request: HookRequest) -> None:
    """Run every hook's ``before(request)``."""
    _each(hooks, "before", request)


def apply_after(hooks: Sequence[object], request: HookRequest, response: dict[str, Any]) -> None:
    """Run every hook's ``after(request, response)``."""
    _each(hooks, "after", request, response)


def apply_error(hooks: Sequence[object], request: HookRequest, error: BaseException) -> None:
    """Run every hook's ``error(request, error)``."""
    _each(hooks, "error", request, error)
