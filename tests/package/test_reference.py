"""The API reference page documents every public name, and shows the session methods as users
call them."""

from __future__ import annotations

import inspect
import re
import sys
from pathlib import Path

import griffe

import lsiorm
from lsiorm import AsyncSession, Session, errors
from support.paths import DOCS

REFERENCE = DOCS / "reference.md"


def test_every_public_name_has_its_entry() -> None:
    text = REFERENCE.read_text()
    entries = re.findall(r"^::: lsiorm\.(\w+)$", text, re.M)
    assert len(entries) == len(set(entries))
    in_errors = {name for name in lsiorm.__all__ if hasattr(errors, name)}
    assert "errors" in entries
    assert set(lsiorm.__all__) - in_errors <= set(entries)


def test_the_sessions_come_first() -> None:
    entries = re.findall(r"^::: lsiorm\.(\w+)$", REFERENCE.read_text(), re.M)
    assert entries[:2] == ["Session", "AsyncSession"]


def test_the_reference_shows_each_session_method_with_its_signature() -> None:
    sys.path.insert(0, str(DOCS))
    try:
        import griffe_sessions
    finally:
        sys.path.pop(0)
    loader = griffe.GriffeLoader(
        search_paths=[str(Path(lsiorm.__file__).parent.parent)],
        extensions=griffe.load_extensions(griffe_sessions.SessionMethods),
    )
    package = loader.load("lsiorm")
    for facade in (Session, AsyncSession):
        documented = package["_session"][facade.__name__]
        for name in dir(facade):
            method = getattr(facade, name)
            if name.startswith("_") or not callable(method) or name not in documented.members:
                continue
            shown = documented.members[name]
            assert isinstance(shown, griffe.Function), f"{facade.__name__}.{name}"
            signature = inspect.signature(method)
            assert [p.name for p in shown.parameters] == list(signature.parameters), name
            assert str(shown.returns) == signature.return_annotation, name
            awaited = inspect.iscoroutinefunction(method) or inspect.isasyncgenfunction(method)
            assert ("async" in shown.labels) == awaited, name
