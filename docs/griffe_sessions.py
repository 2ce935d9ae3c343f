"""A griffe extension for the API reference: show each session method as its declaration.

`Session.update = blocking(methods.update)` is one line in `_session.py`; its signature and
docstring are in `_session_methods.update`. Read statically, the line is an attribute, so the
reference would show no method. This extension replaces each such attribute of `Session` and
`AsyncSession` with a copy of the declared function as the facade exposes it: `self` instead of
the session parameter, the operation's result (`E` for `Operation[E]`) as return annotation, and
`async` on `AsyncSession`.
"""

from __future__ import annotations

from typing import Any

import griffe

FACADES = {"Session": "blocking", "AsyncSession": "awaiting"}


class SessionMethods(griffe.Extension):
    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        if pkg.path != "lsiorm":
            return
        declared = pkg["_session_methods"]
        for facade, maker in FACADES.items():
            cls = pkg["_session"][facade]
            for name, member in list(cls.members.items()):
                value = getattr(member, "value", None)
                if isinstance(value, griffe.ExprCall) and str(value.function) == maker:
                    cls.set_member(
                        name, _method(declared[name], cls, asynchronous=maker == "awaiting")
                    )


def _method(function: griffe.Function, cls: griffe.Class, *, asynchronous: bool) -> griffe.Function:
    _, *parameters = function.parameters
    this = griffe.Parameter("self", kind=griffe.ParameterKind.positional_or_keyword)
    returns = function.returns
    if isinstance(returns, griffe.ExprSubscript) and str(returns.left) == "Operation":
        returns = returns.slice
    method = griffe.Function(
        function.name,
        lineno=function.lineno,
        endlineno=function.endlineno,
        parameters=griffe.Parameters(this, *parameters),
        returns=returns,
        docstring=function.docstring,
        parent=cls,
    )
    method.labels = {"async"} if asynchronous else set()
    return method
