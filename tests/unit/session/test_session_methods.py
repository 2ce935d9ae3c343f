"""Every session method is declared once and wrapped by both facades with the same signature."""

from __future__ import annotations

import inspect
from typing import Any

from lsiorm import AsyncSession, Session


def public_methods(cls: type) -> dict[str, Any]:
    return {
        name: getattr(cls, name)
        for name in dir(cls)
        if not name.startswith("_") and callable(getattr(cls, name))
    }


def test_every_session_method_has_an_async_twin_with_the_same_parameters() -> None:
    sync, asynchronous = public_methods(Session), public_methods(AsyncSession)
    assert set(sync) == set(asynchronous)
    for name, method in sync.items():
        twin = asynchronous[name]
        if twin is method:
            continue  # written once, shared by both facades
        ours = list(inspect.signature(method).parameters.values())
        theirs = list(inspect.signature(twin).parameters.values())
        assert [(p.name, p.kind, p.default, p.annotation) for p in ours] == [
            (p.name, p.kind, p.default, p.annotation) for p in theirs
        ], name
        returns = str(inspect.signature(twin).return_annotation)
        assert (
            inspect.iscoroutinefunction(twin)
            or inspect.isasyncgenfunction(twin)
            or returns.startswith("Async")
        ), f"AsyncSession.{name} must be awaitable or return an async iterable"


#: Methods each facade writes itself: they handle the client, iterate, or return a session
#: (`using` builds or opens a client for another place).
WRITTEN_PER_FACADE = {"close", "run", "pages", "iterate", "dual_writes", "using"}


def test_every_other_method_wraps_one_shared_declaration() -> None:
    sync, asynchronous = public_methods(Session), public_methods(AsyncSession)
    shared = {name for name, method in sync.items() if asynchronous[name] is method}
    assert shared == {"add_hook", "table_name"}
    for name in set(sync) - shared - WRITTEN_PER_FACADE:
        declared = sync[name].__wrapped__
        assert asynchronous[name].__wrapped__ is declared, name
        assert declared.__module__ == "lsiorm._session_methods", name
        assert declared.__doc__ == sync[name].__doc__ == asynchronous[name].__doc__, name
        session, *parameters = inspect.signature(declared).parameters.values()
        assert session.kind is inspect.Parameter.POSITIONAL_ONLY, name
        for facade in (sync[name], asynchronous[name]):
            this, *theirs = inspect.signature(facade).parameters.values()
            assert this.name == "self", name
            assert theirs == parameters, name
