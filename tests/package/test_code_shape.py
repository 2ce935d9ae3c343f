"""The shape of the source: small modules, simple functions, private names kept private.

These are the limits a reader can find their way in by; each test names what went over.
"""

from __future__ import annotations

import ast
from pathlib import Path

from radon.complexity import cc_visit

import lsiorm
from support.paths import TESTS

PACKAGE = Path(lsiorm.__file__).parent
#: Cyclomatic complexity (as radon counts it: branches, loops, boolean operators, comprehensions).
MAX_COMPLEXITY = 30
MAX_MODULE_LINES = 900


def _sources(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)


def test_no_function_is_over_the_complexity_limit() -> None:
    over = [
        f"{path.relative_to(PACKAGE.parent)}:{block.lineno} {block.fullname} ({block.complexity})"
        for path in _sources(PACKAGE)
        for block in cc_visit(path.read_text())
        if block.complexity > MAX_COMPLEXITY
    ]
    assert not over, f"functions over complexity {MAX_COMPLEXITY}: {over}"


def test_no_module_is_over_the_size_limit() -> None:
    over = [
        f"{path.relative_to(PACKAGE.parent)} ({n} lines)"
        for path in _sources(PACKAGE)
        if (n := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    ]
    assert not over, f"modules over {MAX_MODULE_LINES} lines: {over}"


def _private_imports(root: Path) -> list[str]:
    found = []
    for path in _sources(root):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom) or not (node.module or "").startswith("lsiorm"):
                continue
            for alias in node.names:
                name = alias.name
                module = f"{node.module}.{name}"
                if name.startswith("_") and not name.startswith("__"):
                    if (PACKAGE.parent / module.replace(".", "/")).with_suffix(".py").exists():
                        continue  # a private module of the package, not a private name
                    found.append(f"{path.name}:{node.lineno} {module}")
    return found


def test_no_private_name_is_imported_across_modules() -> None:
    found = _private_imports(PACKAGE) + _private_imports(TESTS)
    assert not found, f"names private to their module, imported elsewhere: {found}"


def test_the_private_import_check_sees_private_names(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("from lsiorm._model.wire import _secret, public\n")
    (tmp_path / "n.py").write_text("from lsiorm import _compat\n")
    assert _private_imports(tmp_path) == ["m.py:1 lsiorm._model.wire._secret"]
