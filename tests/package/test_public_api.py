"""The public surface: exactly the names exported at the top level, and the 0.1 module paths.

(Sync/async parity of the two sessions is pinned by tests/unit/session/test_session_methods.py
and tests/integration/test_parity.py.)
"""

from __future__ import annotations

import ast
import builtins
import functools
import importlib
import inspect
import pkgutil
import sys
import types
import typing
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import lsiorm
from lsiorm._compat import MOVED

#: Modules that are public besides the package itself.
PUBLIC_MODULES = {"errors", "testing", "pytest_plugin"}

#: The names of lsiorm.testing (a package: its modules say which part owns each name).
TESTING_NAMES = {
    "DYNAMODB_LOCAL_DIR_ENV",
    "ENDPOINT_URL_ENV",
    "ENGINES",
    "AwsLikeEngine",
    "DynamoDBLocal",
    "EngineNotInstalledError",
    "EngineRegistry",
    "Fault",
    "FaultInjector",
    "FaultKind",
    "FaultTiming",
    "GsiLag",
    "ItemCollectionProxy",
    "MotoServer",
    "OnDemandMaximum",
    "PartitionLimits",
    "SentRequest",
    "StreamShards",
    "TransactionConflicts",
    "created_tables",
    "default_engine",
    "dynamodb_local_cache",
    "dynamodb_local_install_command",
    "engine_endpoint",
    "example_endpoint",
    "free_port",
    "local_credentials",
    "table_fixture",
}


def test_every_exported_name_exists_and_is_listed_once() -> None:
    assert len(lsiorm.__all__) == len(set(lsiorm.__all__))
    for name in lsiorm.__all__:
        assert hasattr(lsiorm, name), name
    assert sorted(lsiorm.__all__) == lsiorm.__all__


def test_all_equals_the_public_names_of_the_package() -> None:
    # dir(), not vars(): some names are only looked up (and their modules imported) on use.
    public = {
        name
        for name in dir(lsiorm)
        if not name.startswith("_") and not inspect.ismodule(getattr(lsiorm, name))
    }
    assert public == set(lsiorm.__all__) - {"__version__"}


def test_only_the_public_modules_have_public_names() -> None:
    modules = {
        name
        for name, value in vars(lsiorm).items()
        # pytest rewrites the asserts of plugin packages, adding "@py_builtins" and the like.
        if not name.startswith("_") and name.isidentifier() and inspect.ismodule(value)
    }
    # Deprecated 0.1 paths imported by other tests in this process are attached too; they are
    # aliases of private modules and are covered below.
    old = {path.rsplit(".", 1)[1] for path in MOVED}
    assert modules - old <= PUBLIC_MODULES


def test_the_testing_package_exports_its_names() -> None:
    import lsiorm.testing

    assert len(lsiorm.testing.__all__) == len(TESTING_NAMES)
    assert set(lsiorm.testing.__all__) == TESTING_NAMES
    for name in TESTING_NAMES:
        assert hasattr(lsiorm.testing, name), name


def test_every_error_class_is_importable_from_the_top() -> None:
    from lsiorm import errors

    classes = {
        name
        for name, value in vars(errors).items()
        if inspect.isclass(value) and issubclass(value, BaseException)
    }
    assert classes <= set(lsiorm.__all__), classes - set(lsiorm.__all__)


def test_query_is_the_function_not_a_module() -> None:
    importlib.import_module("lsiorm._query.values")
    assert callable(lsiorm.query)
    assert not inspect.ismodule(lsiorm.query)


@pytest.mark.parametrize("old", sorted(MOVED))
def test_old_module_paths_warn_and_give_the_new_module(old: str) -> None:
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match="import the names you need from lsiorm"):
        module = importlib.import_module(old)
    assert module is importlib.import_module(MOVED[old])
    # The module keeps its own identity: its spec still names its new place.
    assert module.__spec__ is not None
    assert module.__spec__.name == MOVED[old]


def test_new_paths_do_not_warn() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for new in MOVED.values():
            importlib.import_module(new)


#: Names lsiorm 0.1 exported from module paths whose code has since been split into modules.
OLD_NAMES = {
    "lsiorm.entity": [
        "Entity",
        "EntityMeta",
        "Shard",
        "decode_item",
        "meta_of",
        "shard_of",
        "shard_value",
    ],
    "lsiorm.schema": [
        "BillingMode",
        "Drift",
        "DriftReport",
        "GlobalIndex",
        "KeyAttribute",
        "KeyType",
        "LocalIndex",
        "Projection",
        "ProjectionType",
        "Table",
    ],
    "lsiorm.encoding": [
        "MAX_CHAR",
        "BoolCodec",
        "DateCodec",
        "DatetimeCodec",
        "DecimalCodec",
        "EnumCodec",
        "FloatCodec",
        "IntCodec",
        "KeyCodec",
        "KeyFormat",
        "StrCodec",
        "UUIDCodec",
        "codec_for",
    ],
    "lsiorm.wire": [
        "MAX_ITEM_BYTES",
        "AttributeValue",
        "WireItem",
        "attribute_value_size",
        "from_wire",
        "item_from_wire",
        "item_size",
        "item_to_wire",
        "number_to_wire",
        "to_wire",
    ],
}


@pytest.mark.parametrize("old", sorted(OLD_NAMES))
def test_old_module_paths_keep_their_names(old: str) -> None:
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match="import the names you need from lsiorm"):
        module = importlib.import_module(old)
    assert [name for name in OLD_NAMES[old] if not hasattr(module, name)] == []
    assert set(OLD_NAMES[old]) <= set(module.__all__)


# -- every type in a public signature is exported ---------------------------------------------


def _is_type(value: object) -> bool:
    """A class or a type alias (a union, a Literal, a generic alias); not a TypeVar or a value."""
    return isinstance(value, (type, types.UnionType)) or typing.get_origin(value) is not None


def _types_defined_in_lsiorm() -> dict[int, str]:
    """Every class and type alias that a module of lsiorm defines at its top level, by id."""
    defined: dict[int, str] = {}
    for info in pkgutil.walk_packages(lsiorm.__path__, "lsiorm."):
        module = importlib.import_module(info.name)
        for node in ast.parse(Path(str(module.__file__)).read_text()).body:
            if isinstance(node, ast.ClassDef):
                names = [node.name]
            elif isinstance(node, ast.Assign):
                names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names = [node.target.id]
            else:
                continue
            for name in names:
                value = getattr(module, name, None)
                if _is_type(value):
                    defined.setdefault(id(value), f"{info.name}.{name}")
    return defined


def _signatures(name: str, value: object) -> Iterator[tuple[str, Any]]:
    """The public functions of an exported name: itself, or a class's constructor, methods
    and properties (its own and those it inherits from lsiorm classes)."""
    if not inspect.isclass(value):
        if _ours(value):
            yield name, value
        return
    for cls in value.__mro__:
        for attr, member in vars(cls).items():
            if attr.startswith("_") and attr != "__init__":
                continue
            if isinstance(member, property):
                member = member.fget
            elif isinstance(member, (staticmethod, classmethod)):
                member = member.__func__
            if _ours(member):
                yield f"{name}.{attr}", member


def _ours(value: object) -> bool:
    """A function written in lsiorm (not a type alias, nor one inherited from elsewhere)."""
    function = inspect.unwrap(value) if callable(value) else value
    return inspect.isfunction(function) and function.__module__.startswith("lsiorm")


def _annotations(function: Any) -> Iterator[Any]:
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):  # a builtin without a signature
        return
    for parameter in signature.parameters.values():
        yield parameter.annotation
    yield signature.return_annotation


def _referenced(annotation: Any, namespace: dict[str, Any]) -> Iterator[Any]:
    """What an annotation names, as written: an alias stays itself (`Condition`, not the union
    it stands for), so that exporting the alias is enough."""
    if annotation is inspect.Parameter.empty:
        return
    if not isinstance(annotation, str):  # an evaluated annotation: resolve it, then recurse
        yield annotation
        for argument in typing.get_args(annotation):
            yield from _referenced(argument, namespace)
        return
    for node in ast.walk(ast.parse(annotation, mode="eval")):
        if isinstance(node, ast.Name):
            value = namespace.get(node.id, getattr(builtins, node.id, None))
            assert value is not None, f"cannot resolve {node.id!r} in {annotation!r}"
            yield value


@functools.cache
def _namespace(module_name: str) -> dict[str, Any]:
    """The names a module's annotations may use: its globals and its `TYPE_CHECKING` imports."""
    module = sys.modules[module_name]
    namespace = dict(vars(module))
    for node in ast.parse(Path(str(module.__file__)).read_text()).body:
        if isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING"):
            exec(compile(ast.Module(node.body, []), module_name, "exec"), namespace)
    return namespace


def _unexported_types() -> dict[str, set[str]]:
    """Each type defined in lsiorm that a public signature names but lsiorm does not export,
    with the signatures that name it."""
    defined = _types_defined_in_lsiorm()
    exported = {id(getattr(lsiorm, name)) for name in lsiorm.__all__}
    missing: dict[str, set[str]] = {}
    for name in lsiorm.__all__:
        for where, function in _signatures(name, getattr(lsiorm, name)):
            namespace = _namespace(inspect.unwrap(function).__module__)
            for annotation in _annotations(function):
                for value in _referenced(annotation, namespace):
                    if id(value) in defined and id(value) not in exported:
                        missing.setdefault(defined[id(value)], set()).add(where)
    return missing


def test_every_type_in_a_public_signature_is_exported() -> None:
    missing = _unexported_types()
    assert not missing, "\n".join(
        f"{name} (in {', '.join(sorted(where)[:3])})" for name, where in sorted(missing.items())
    )
