"""Compiling generated functions so that tracebacks, pdb and profilers show their source."""

from __future__ import annotations

import itertools
import linecache
from typing import Any, Final

__all__ = ["ABSENT", "compile_function", "indent"]

#: Stands for a missing key in generated code, where None is a value like any other.
ABSENT: Final = object()

_SERIAL: Final = itertools.count(1)


def compile_function(source: str, name: str, label: str, namespace: dict[str, Any]) -> Any:
    """Run ``source`` in ``namespace`` and return the function it defines as ``name``.

    The source is registered in `linecache` under a file name of its own, such as
    ``<lsiorm generated encode Thread-1>``, so that tracebacks, pdb and profilers show the
    generated lines instead of nothing.
    """
    filename = f"<lsiorm generated {name} {label}-{next(_SERIAL)}>"
    # mtime None: linecache.checkcache keeps the entry, as there is no file to compare it with.
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), namespace)
    return namespace[name]


def indent(text: str, levels: int = 1) -> str:
    """Indent every line of ``text`` by four spaces per level."""
    return "\n".join("    " * levels + line for line in text.split("\n"))
