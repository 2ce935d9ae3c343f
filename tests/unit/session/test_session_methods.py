"""Every session method is declared once and wrapped by both facades with the same signature."""

from __future__ import annotations

import dataclasses
import inspect
import typing
from typing import Any

import lsiorm._session_methods as methods
from lsiorm import AsyncSession, RetryPolicy, Session, SessionConfig, Table
from lsiorm._jobs.relief import Relief
from lsiorm._session_core import SessionSettings
from lsiorm._session_methods import JobKeywords


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


#: What each facade takes besides the shared settings: the client, the boto3 or aioboto3
#: session it builds one from, and the client's own keywords.
FACADE_OWN = {
    Session: {"self", "client", "boto3_session", "client_kwargs"},
    AsyncSession: {"self", "client", "aioboto3_session", "client_kwargs"},
}


def test_both_sessions_take_every_setting_as_declared_once() -> None:
    declared = {f.name: f for f in dataclasses.fields(SessionSettings)}
    hints = typing.get_type_hints(SessionSettings)
    for facade, own in FACADE_OWN.items():
        parameters = inspect.signature(facade.__init__).parameters
        init_hints = typing.get_type_hints(facade.__init__)
        assert set(parameters) - own == set(declared), facade
        for name, spec in declared.items():
            parameter = parameters[name]
            assert parameter.kind is inspect.Parameter.KEYWORD_ONLY, (facade, name)
            assert parameter.default == spec.default, (facade, name)
            assert init_hints[name] == hints[name], (facade, name)


def test_a_session_hands_its_settings_on_as_given() -> None:
    policy = RetryPolicy(max_attempts=2)
    session = Session(
        client=object(), retry=policy, table_prefix="dev-", watch_collections=False, lean=False
    )
    assert session.ctx.retry is policy
    assert session.collections is None
    assert session.ctx.live_name(Table("Things", "PK")) == "dev-Things"
    assert session.config is None  # built from a client: no worker can build one like it
    built = Session(region_name="eu-west-1", table_prefix="dev-", fast_json=False)
    assert built.config == SessionConfig(
        region_name="eu-west-1", table_prefix="dev-", fast_json=False
    )
    assert SessionSettings.given({"lean": False, "client": 1}) == SessionSettings(lean=False)


#: The session methods that start a key job, with the job keywords each takes.
JOB_METHODS = {
    "audit_keys": {"executor", "ledger", "read_budget", "export", "lease_seconds", "detach"},
    "backfill": {f.name for f in dataclasses.fields(JobKeywords)},
    "relieve_collection": {"ledger", "write_budget"},
    "migrate_table": {f.name for f in dataclasses.fields(JobKeywords)} - {"export"},
    "dual_writes": {"ledger"},
}


def _declared_keywords(declaration: Any, method: Any, names: set[str]) -> None:
    """Each of ``names`` is a keyword of ``method`` with the declaration's default and type."""
    fields = {f.name: f for f in dataclasses.fields(declaration)}
    parameters = inspect.signature(method).parameters
    for name in names:
        assert parameters[name].kind is inspect.Parameter.KEYWORD_ONLY, (method, name)
        assert parameters[name].default == fields[name].default, (method, name)
        # Both modules postpone annotations: the texts are compared, as written.
        assert parameters[name].annotation == fields[name].type, (method, name)


def test_every_job_method_takes_the_job_keywords_as_declared_once() -> None:
    for name, keywords in JOB_METHODS.items():
        declared = getattr(methods, name)
        taken = set(inspect.signature(declared).parameters) & set(JOB_METHODS["backfill"])
        assert taken == keywords, name
        _declared_keywords(JobKeywords, declared, keywords)


def test_a_job_method_hands_on_the_job_keywords_it_was_given() -> None:
    given = {"ledger": "Jobs", "write_budget": 5.0, "lease_seconds": 9.0, "entity": object()}
    assert JobKeywords.given(given) == JobKeywords(
        ledger="Jobs", write_budget=5.0, lease_seconds=9.0
    )
    options = JobKeywords(ledger="Jobs", concurrency=3).options(Session(client=object()))
    assert (options.ledger, options.concurrency, options.in_memory) == ("Jobs", 3, False)


def test_relief_takes_what_to_move_as_declared_once() -> None:
    said = {f.name for f in dataclasses.fields(Relief)} - {"max_attempts", "to_file"}
    _declared_keywords(Relief, methods.relieve_collection, said)
    to_file = inspect.signature(methods.relieve_collection).parameters["to_file"]
    assert to_file.default is None  # a path here, the file it names in the job
    assert set(inspect.signature(methods.relieve_collection).parameters) >= said | {"to_file"}
