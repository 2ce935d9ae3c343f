"""``import lsiorm`` stays light: the async stack and other heavy modules load when first used."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import lsiorm

#: Modules a sync user never needs, and what loads each when it is needed.
DEFERRED = {
    "aiohttp": "the async driver, on its first transport error check",
    "aioboto3": "AsyncSession, when it builds its client",
    "aiobotocore": "AsyncSession, when it builds its client",
    "asyncio": "the async driver",
    "boto3": "Session, when it builds its client",
    "tenacity": "the first retried request",
    "orjson": "the fast JSON path, when a client gets it",
    "tqdm": "a key job's progress bar, when it first draws",
    "opentelemetry": "a session, to send its spans and metrics",
}


#: lsiorm's own modules that neither ``import lsiorm`` nor a session's reads and writes load: the
#: key jobs, table migrations and dual writes (their public names are looked up on first use).
DEFERRED_OWN = (
    "lsiorm._io.exports",
    "lsiorm._io.jsonlines",
    "lsiorm._jobs.adoption",
    "lsiorm._jobs.backfill",
    "lsiorm._migration.dual_writes",
    "lsiorm._jobs.engine",
    "lsiorm._jobs.key_audit",
    "lsiorm._jobs.ledger",
    "lsiorm._migration.phases",
    "lsiorm._migration.plan",
    "lsiorm._jobs.relief",
    "lsiorm._jobs.units",
)


#: What ``import lsiorm`` alone leaves unloaded: every public name but the errors is looked up
#: when first used, so the package itself loads the error tree and nothing heavy.
NOT_ON_IMPORT = (
    "lsiorm._jobs",
    "lsiorm._migration",
    "lsiorm._cli",
    "lsiorm._session",
    "lsiorm._model.entity",
    "lsiorm._query.planner",
    "lsiorm._io.telemetry",
    "lsiorm.testing",
    "pydantic",
    "botocore",
    "boto3",
    "dask",
    "opentelemetry",
    "hypothesis",
    "importlib.metadata",
    "importlib.resources",
)


#: lsiorm's modules that a session loads when a method needing them first runs: batches, table
#: operations and collection audits (with the paged reads they use).
FIRST_USE_OF_A_SESSION = (
    "lsiorm._ops.audit",
    "lsiorm._ops.batch",
    "lsiorm._ops.pages",
    "lsiorm._ops.tables",
    "lsiorm._requests.batch",
    "lsiorm._requests.pages",
)

#: What ``from lsiorm import Session`` leaves unloaded: a first get or put needs neither queries
#: nor transactions, updates, batches, table operations, the command line, the test engines or
#: the tracing SDK.
NOT_FOR_A_SESSION = (
    *DEFERRED_OWN,
    *FIRST_USE_OF_A_SESSION,
    "lsiorm._cli",
    "lsiorm._migration",
    "lsiorm._ops.reads",
    "lsiorm._ops.transactions",
    "lsiorm._query.planner",
    "lsiorm._query.values",
    "lsiorm._requests.transactions",
    "lsiorm._requests.update_plan",
    "lsiorm._stream_handler",
    "lsiorm.testing",
    "dask",
    "hypothesis",
    "opentelemetry.sdk",
)


def _loaded_after(statement: str) -> set[str]:
    code = f"import sys; {statement}; print(' '.join(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(done.stdout.split())


def test_import_lsiorm_loads_neither_aiohttp_nor_aioboto3() -> None:
    subprocess.run(
        [
            sys.executable,
            "-c",
            "import lsiorm, sys; "
            "assert 'aiohttp' not in sys.modules and 'aioboto3' not in sys.modules",
        ],
        check=True,
    )


def test_import_lsiorm_defers_what_only_some_callers_need() -> None:
    loaded = _loaded_after("import lsiorm")
    assert sorted(set(DEFERRED) & loaded) == []


@pytest.mark.parametrize("module", ["aiohttp", "asyncio", "tenacity"])
def test_deferred_modules_do_load_when_used(module: str) -> None:
    """The lazy imports are real: running the async driver and a retry loads them."""
    statement = (
        "from lsiorm._io.drivers import _async_transport; "
        "_async_transport(); "
        "from lsiorm._ops.retry import RetryPolicy; RetryPolicy().retrying()"
    )
    assert module in _loaded_after(statement)


def test_a_session_leaves_the_key_jobs_until_they_are_used() -> None:
    loaded = _loaded_after("from lsiorm import AsyncSession, Session, query")
    assert sorted(set(DEFERRED_OWN) & loaded) == []


def test_a_name_looked_up_on_use_is_the_class_of_its_module() -> None:
    statement = (
        "from lsiorm import KeyAuditReport, MigrationReport; "
        "import lsiorm, lsiorm._jobs.key_audit as k, lsiorm._migration.plan as m; "
        "assert KeyAuditReport is k.KeyAuditReport is lsiorm.KeyAuditReport; "
        "assert MigrationReport is m.MigrationReport; "
        "assert {'KeyAuditReport', 'DualWrites', 'read_relief_file'} <= set(dir(lsiorm))"
    )
    loaded = _loaded_after(statement)
    assert {"lsiorm._jobs.key_audit", "lsiorm._migration.plan"} <= loaded


def test_an_unknown_name_is_still_an_attribute_error() -> None:
    import lsiorm

    with pytest.raises(AttributeError, match="no attribute 'NoSuchName'"):
        lsiorm.NoSuchName  # type: ignore[attr-defined]  # noqa: B018
    with pytest.raises(ImportError):
        exec("from lsiorm import NoSuchName")


def _loaded_under(loaded: set[str], names: tuple[str, ...]) -> list[str]:
    """The modules of ``names`` (or under them) that are in ``loaded``."""
    return sorted(m for m in loaded for n in names if m == n or m.startswith(f"{n}."))


def test_import_lsiorm_loads_the_error_tree_and_nothing_heavy() -> None:
    loaded = _loaded_after("import lsiorm")
    assert _loaded_under(loaded, NOT_ON_IMPORT) == []
    assert {"lsiorm.errors", "lsiorm._compat"} <= loaded


def test_every_public_name_resolves_in_a_fresh_interpreter() -> None:
    """Looked up one by one, as `from lsiorm import X` does: each name comes from its module,
    ``dir()`` lists them all before any is used, and ``__all__`` is what it was."""
    statement = (
        "import lsiorm; "
        "assert set(lsiorm.__all__) <= set(dir(lsiorm)), set(lsiorm.__all__) - set(dir(lsiorm)); "
        "values = [getattr(lsiorm, name) for name in lsiorm.__all__]; "
        "assert all(v is not None for v in values); "
        "assert isinstance(lsiorm.__version__, str) and lsiorm.__version__; "
        "from lsiorm import Session, fast_json_of, query; "
        "from lsiorm._io.fastjson import fast_path_of; "
        "assert fast_json_of is fast_path_of and Session is lsiorm.Session"
    )
    assert "lsiorm._session" in _loaded_after(statement)


def _type_checking_imports() -> dict[str, tuple[str, str]]:
    """Each name the package's ``if TYPE_CHECKING:`` block imports: (module, name there)."""
    tree = ast.parse(Path(str(lsiorm.__file__)).read_text())
    found: dict[str, tuple[str, str]] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "_typing.TYPE_CHECKING":
            for statement in node.body:
                assert isinstance(statement, ast.ImportFrom)
                assert statement.module
                for alias in statement.names:
                    found[alias.asname or alias.name] = (statement.module, alias.name)
    return found


def test_type_checkers_see_every_name_the_package_looks_up() -> None:
    """The imports type checkers read and the table of names looked up on use agree, and
    with the errors they make up ``__all__``."""
    table = {
        name: (module, lsiorm._RENAMED.get(name, name)) for name, module in lsiorm._LAZY.items()
    }
    assert _type_checking_imports() == table
    errors = {name for name in lsiorm.__all__ if hasattr(lsiorm.errors, name)}
    assert set(table) | errors | {"__version__"} == set(lsiorm.__all__)


def test_a_session_loads_what_a_get_or_a_put_needs() -> None:
    loaded = _loaded_after("from lsiorm import Entity, Session, Table")
    assert _loaded_under(loaded, NOT_FOR_A_SESSION) == []
    assert {"lsiorm._ops.items", "lsiorm._requests.items", "lsiorm._model.entity"} <= loaded


def test_a_sessions_batches_and_table_operations_load_when_first_used() -> None:
    statement = (
        "from lsiorm import Session; import lsiorm._session_methods as m; "
        "m.batch_write, m.create_table, m.audit_collection; "
        "import sys; assert 'lsiorm._ops.batch' not in sys.modules; "
        "from lsiorm._ops import audit, batch, tables; "
        "from lsiorm._requests.batch import GetKey"
    )
    loaded = _loaded_after(statement)
    assert set(FIRST_USE_OF_A_SESSION) <= loaded
