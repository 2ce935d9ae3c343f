"""The package's layers: pure layers never reach I/O, imports point to earlier layers, no cycles.

Imports are read from the source (module level and inside functions). The layering rules
leave out imports under ``if TYPE_CHECKING:`` (annotations only); the cycle rule counts them
too, since a cycle of annotations is still two modules that cannot be read apart.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

import lsiorm

PACKAGE = Path(lsiorm.__file__).parent

#: Layers from the foundation up. A module may import its own layer and earlier ones only.
LAYERS: list[tuple[str, ...]] = [
    ("lsiorm.errors",),
    ("lsiorm._model",),
    ("lsiorm._conditions",),
    ("lsiorm._requests",),
    ("lsiorm._query",),
    ("lsiorm._ops",),
    ("lsiorm._jobs",),
    ("lsiorm._migration",),
    ("lsiorm._io",),
    ("lsiorm._session_core", "lsiorm._session_jobs", "lsiorm._session_methods"),
    ("lsiorm._session", "lsiorm._stream_handler", "lsiorm.testing", "lsiorm.pytest_plugin"),
    ("lsiorm._cli", "lsiorm._cli_text", "lsiorm._compat", "lsiorm"),
]
PURE = ("lsiorm.errors", "lsiorm._model", "lsiorm._conditions", "lsiorm._requests", "lsiorm._query")


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST, module: str, *, type_only: bool) -> set[str]:
    """Return the lsiorm modules imported; ``type_only`` counts ``if TYPE_CHECKING:`` ones too."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node) and not type_only:
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("lsiorm"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.rsplit(".", node.level)[0]
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            if target.startswith("lsiorm"):
                found.add(target)
                # `from lsiorm._ops import reads` imports the submodule.
                found.update(f"{target}.{a.name}" for a in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def _graph(*, type_only: bool = False) -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        imports = _imports(ast.parse(path.read_text()), name, type_only=type_only)
        graph[name] = {i for i in imports if i in modules and i != name}
    return graph


def _layer_of(module: str) -> int:
    matches = [
        (len(prefix), number)
        for number, prefixes in enumerate(LAYERS)
        for prefix in prefixes
        if module == prefix or module.startswith(prefix + ".")
    ]
    assert matches, f"{module} belongs to no layer; add it to LAYERS"
    return max(matches)[1]


GRAPH = _graph()
#: The same graph with the imports under ``if TYPE_CHECKING:`` added.
TYPED_GRAPH = _graph(type_only=True)


def test_every_module_belongs_to_a_layer() -> None:
    for module in GRAPH:
        _layer_of(module)


@pytest.mark.parametrize("module", sorted(GRAPH))
def test_imports_point_to_the_same_or_an_earlier_layer(module: str) -> None:
    mine = _layer_of(module)
    upward = sorted(i for i in GRAPH[module] if _layer_of(i) > mine)
    assert not upward, f"{module} (layer {mine}) imports later layers: {upward}"


def test_pure_layers_import_no_io() -> None:
    for module, imports in GRAPH.items():
        if module.startswith(PURE):
            bad = sorted(i for i in imports if not i.startswith(PURE))
            assert not bad, f"pure module {module} imports {bad}"


def _first_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = 1
        stack.append(module)
        for dep in sorted(graph[module]):
            if dep == "lsiorm" or module == "lsiorm":
                continue  # the package re-exports everything; it is the top, not a cycle member
            if state.get(dep) == 1:
                return [*stack[stack.index(dep) :], dep]
            if state.get(dep) is None and (cycle := visit(dep)) is not None:
                return cycle
        stack.pop()
        state[module] = 2
        return None

    for module in sorted(graph):
        if state.get(module) is None and (cycle := visit(module)) is not None:
            return cycle
    return None


def test_no_import_cycles() -> None:
    cycle = _first_cycle(GRAPH)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or ())


def test_no_import_cycles_counting_type_only_imports() -> None:
    cycle = _first_cycle(TYPED_GRAPH)
    assert cycle is None, "import cycle (with TYPE_CHECKING imports): " + " -> ".join(cycle or ())


def test_the_cycle_check_finds_a_cycle() -> None:
    graph = {"lsiorm.a": {"lsiorm.b"}, "lsiorm.b": {"lsiorm.c"}, "lsiorm.c": {"lsiorm.a"}}
    assert _first_cycle(graph) == ["lsiorm.a", "lsiorm.b", "lsiorm.c", "lsiorm.a"]
    assert _first_cycle({"lsiorm.a": {"lsiorm.b"}, "lsiorm.b": set()}) is None


def test_operations_jobs_and_migration_are_three_layers() -> None:
    # A plain write never reaches a job: the key check it runs is pure, in _model.
    assert "lsiorm._model.key_check" in GRAPH["lsiorm._ops.rekeying"]
    assert _layer_of("lsiorm._ops.items") < _layer_of("lsiorm._jobs.engine")
    assert _layer_of("lsiorm._jobs.catalog") < _layer_of("lsiorm._migration.catalog")
    # The jobs' catalog runs migration units only through what its caller hands it.
    assert not any(i.startswith("lsiorm._migration") for i in TYPED_GRAPH["lsiorm._jobs.catalog"])


def test_every_package_says_what_it_holds_and_which_way_imports_go() -> None:
    for layer in ("_query", "_ops", "_jobs", "_migration"):
        init = PACKAGE / layer / "__init__.py"
        doc = ast.get_docstring(ast.parse(init.read_text())) or ""
        modules = sorted(p.stem for p in (PACKAGE / layer).glob("*.py") if p.stem != "__init__")
        unnamed = [m for m in modules if f"``{m}``" not in doc]
        assert not unnamed, f"{layer}/__init__.py does not name {unnamed}"
        assert "Imports point" in doc, f"{layer}/__init__.py does not say which way imports go"


def test_the_layer_test_sees_imports() -> None:
    # Guard against a walker that finds nothing: the session must import the drivers.
    assert "lsiorm._io.drivers" in GRAPH["lsiorm._session"]
    assert "lsiorm._query.plan" in GRAPH["lsiorm._ops.reads"]
    # The modules of a package belong to its layer: lsiorm.testing's are test tooling, above I/O.
    assert "lsiorm.testing.loopback" in GRAPH["lsiorm.testing.collection_proxy"]
    assert _layer_of("lsiorm.testing.collection_proxy") == _layer_of("lsiorm.testing")
    assert _layer_of("lsiorm.testing.engines") > _layer_of("lsiorm._io")
    assert all(GRAPH[m] <= TYPED_GRAPH[m] for m in GRAPH)


def test_only_the_typed_graph_sees_type_checking_imports() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "from lsiorm._model import wire\n"
        "if TYPE_CHECKING:\n"
        "    from lsiorm._query.plan import QueryPlan\n"
    )
    tree = ast.parse(source)
    runtime = _imports(tree, "lsiorm._query.x", type_only=False)
    typed = _imports(tree, "lsiorm._query.x", type_only=True)
    assert "lsiorm._query.plan" not in runtime
    assert "lsiorm._query.plan" in typed
    assert "lsiorm._model.wire" in runtime & typed


#: Names whose use means touching files or sockets; operations leave that to the drivers (_io).
FILE_AND_NETWORK = frozenset({"open", "os", "pathlib", "socket", "shutil", "tempfile"})


#: The layers of operations: they yield steps and leave every I/O to the drivers.
OPERATION_LAYERS = ("_ops", "_jobs", "_migration")


@pytest.mark.parametrize(
    "path",
    sorted(p for layer in OPERATION_LAYERS for p in (PACKAGE / layer).glob("*.py")),
    ids=lambda p: f"{p.parent.name}/{p.name}",
)
def test_operations_touch_no_files_or_sockets(path: Path) -> None:
    """An operation yields steps; files (exports, relief files) are given to it by _io."""
    tree = ast.parse(path.read_text())
    used = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            used |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            used.add(node.module.split(".")[0])
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            used.add(node.func.id)
    assert not used & FILE_AND_NETWORK, f"{path.name} uses {sorted(used & FILE_AND_NETWORK)}"


# -- requests come from _requests/ ---------------------------------------------------------------

#: Where request parameters are built: the builders, the query compiler and the condition
#: compiler. The one page reader (``_ops/pages.py``) and the stream reader
#: (``_ops/stream_pages.py``) need no such name: the reads they are given say them.
REQUEST_BUILDERS = ("lsiorm._requests", "lsiorm._query.compile", "lsiorm._conditions")
#: Modules that read such names from a request without building one: the capacity model prices
#: a request's projection from its ExpressionAttributeNames; the AWS-like engine reads the
#: attributes a request it answers touches, as DynamoDB does; a throttle's error names the
#: partition key the request targeted; protected fields seal the values a request names; the
#: AWS-like engine's virtual streams answer the Streams API, positions included.
REQUEST_READERS = {
    "lsiorm._model.capacity",
    "lsiorm.testing.aws_like.touches",
    "lsiorm.testing.aws_like.streams",
    "lsiorm._ops.service_errors",
    "lsiorm._ops.request_sealing",
}
#: Modules still to move to the builders (none now). Each must still hold what the rule forbids
#: (so this list only shrinks).
NOT_YET: set[str] = set()
#: What only a builder writes: a page's position (a Query's or Scan's, a stream's shard list's,
#: a shard's next iterator), expression names, and condition or update text.
REQUEST_NAMES = frozenset(
    {
        "LastEvaluatedKey",
        "ExclusiveStartKey",
        "ExpressionAttributeNames",
        "LastEvaluatedShardId",
        "ExclusiveStartShardId",
        "NextShardIterator",
    }
)
EXPRESSION_TEXT = re.compile(
    r"\b(attribute_(not_)?exists|attribute_type|begins_with|if_not_exists|list_append)\("
    r"|#\w+ = :\w+|^(SET|REMOVE|ADD|DELETE) #"
)


def _request_text(tree: ast.AST) -> list[str]:
    """The string constants (and f-string parts) of a module that name a request's position or
    expression names, or are expression text; docstrings are left out."""
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            text = "".join(str(p.value) for p in node.values if isinstance(p, ast.Constant))
            if EXPRESSION_TEXT.search(text):
                found.append(text)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) in docstrings:
                continue
            if node.value in REQUEST_NAMES or EXPRESSION_TEXT.search(node.value):
                found.append(node.value)
    return found


@functools.cache
def _request_texts() -> dict[str, list[str]]:
    return {
        _module_name(path): _request_text(ast.parse(path.read_text()))
        for path in PACKAGE.rglob("*.py")
    }


def test_request_parameters_are_built_in_requests_only() -> None:
    texts = _request_texts()
    offenders = {
        module: found
        for module, found in texts.items()
        if found
        and not module.startswith(REQUEST_BUILDERS)
        and module not in REQUEST_READERS | NOT_YET
    }
    assert not offenders, f"build these requests in lsiorm._requests: {offenders}"


def test_the_modules_still_to_move_still_need_to() -> None:
    texts = _request_texts()
    moved = sorted(module for module in NOT_YET if not texts[module])
    assert not moved, f"take {moved} out of NOT_YET: they build no request text any more"


def test_the_request_rule_sees_request_text() -> None:
    built = '"#n0 = :v0"\nparams["ExclusiveStartKey"] = last\nf"attribute_exists({name})"\n'
    assert len(_request_text(ast.parse(built))) == 3
    assert _request_text(ast.parse('"""attribute_exists(#a) in a docstring"""')) == []
