"""The public surface: exactly the names exported at the top level, and the 0.1 module paths.

(Sync/async parity of the two sessions is pinned by test_parity.)
"""

from __future__ import annotations

import importlib
import inspect
import sys
import warnings

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
    "DynamoDBLocal",
    "EngineNotInstalledError",
    "EngineRegistry",
    "ItemCollectionProxy",
    "MotoServer",
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
    public = {
        name
        for name, value in vars(lsiorm).items()
        if not name.startswith("_") and not inspect.ismodule(value)
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
