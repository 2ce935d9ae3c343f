"""``import lsiorm`` stays light: the async stack and other heavy modules load when first used."""

from __future__ import annotations

import subprocess
import sys

import pytest

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
