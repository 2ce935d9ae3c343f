"""Local DynamoDB engines (DynamoDB Local and moto) and pytest fixtures for users' tests.

Installing lsiorm registers a pytest plugin ([`lsiorm.pytest_plugin`][lsiorm.pytest_plugin])
whose fixtures ``lsiorm_session`` and ``lsiorm_async_session`` give each test a session on
moto, DynamoDB Local or an endpoint of your own, with your tables freshly created; see
docs/testing.md.
[`table_fixture`][lsiorm.testing.table_fixture] builds a named fixture for one table instead::

    from lsiorm.testing import table_fixture
    from myapp.models import threads

    threads_session = table_fixture(threads)                        # moto, in process
    threads_local = table_fixture(threads, engine="dynamodb-local")  # AWS's own engine

A test that takes ``threads_session`` gets a [`Session`][lsiorm.Session] on an engine where the
declared table exists and is empty. Engines start once per test run and stop at its end. An
engine that is not installed skips the test with a message saying how to install it.

[`FaultInjector`][lsiorm.testing.FaultInjector] breaks DynamoDB on purpose: it throttles,
fails, drops or loses the answer of chosen requests, and records every request sent (the
plugin's ``lsiorm_faults`` fixture is one).

``lsiorm.testing.AwsLikeEngine`` puts what AWS does at scale in front of a local
engine: streams of many shards that split, per-partition throughput limits with their throttle
reasons, on-demand maxima, global indexes that lag behind their table, and transaction
conflicts, each switched on and scaled by its own option (the plugin's ``lsiorm_aws_like``
fixture starts one).

Every name is importable from here; the modules inside say what each part owns:
``engines`` (the engine processes), ``endpoints`` (engines by name, started once),
``fixtures`` (``table_fixture``, ``created_tables``), ``faults`` (fault injection and the record
of requests), ``collection_proxy`` (AWS's item-collection rules in front of a local engine),
``aws_like`` (the AWS-like engine, a package of one module per behaviour) and ``loopback``
(the small HTTP server such proxies are built on).
"""

from lsiorm.testing.aws_like import (
    AwsLikeEngine,
    GsiLag,
    OnDemandMaximum,
    PartitionLimits,
    StreamShards,
    TransactionConflicts,
)
from lsiorm.testing.collection_proxy import ItemCollectionProxy
from lsiorm.testing.endpoints import (
    ENDPOINT_URL_ENV,
    ENGINES,
    EngineRegistry,
    default_engine,
    engine_endpoint,
    example_endpoint,
    local_credentials,
)
from lsiorm.testing.engines import (
    DYNAMODB_LOCAL_DIR_ENV,
    DynamoDBLocal,
    EngineNotInstalledError,
    MotoServer,
    dynamodb_local_cache,
    dynamodb_local_install_command,
    free_port,
)
from lsiorm.testing.faults import Fault, FaultInjector, FaultKind, FaultTiming, SentRequest
from lsiorm.testing.fixtures import created_tables, table_fixture

__all__ = [
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
]
