"""lsiorm: typed single-table data access for Amazon DynamoDB.

Every public name is importable from here. Three modules are public as well:
`lsiorm.errors` (the error tree, also re-exported here), `lsiorm.testing` (local
engines and fixtures) and `lsiorm.pytest_plugin` (the pytest plugin). Everything under a
leading underscore is machinery and may change without notice; `docs/architecture.md` shows
its layers.
"""

import importlib as _importlib
import typing as _typing

from lsiorm import _compat
from lsiorm._conditions import (
    Attr,
    BeginsWith,
    Between,
    Compare,
    Condition,
    Contains,
    Exists,
    FieldCondition,
    In,
    NotExists,
    Operator,
    all_of,
    any_of,
    begins_with,
    between,
    cond,
    contains,
    eq,
    exists,
    ge,
    gt,
    is_in,
    le,
    lt,
    ne,
    not_exists,
    where,
)
from lsiorm._io.fastjson import FastPathStats, ResponseFastPath
from lsiorm._io.fastjson import fast_path_of as fast_json_of
from lsiorm._io.fastjson import install as install_fast_json
from lsiorm._io.fastjson import uninstall as uninstall_fast_json
from lsiorm._io.telemetry import Telemetry
from lsiorm._model.apply_plan import ApplyPlan, ApplyStep
from lsiorm._model.capacity import (
    CapacityUnits,
    ConsumedCapacity,
    FetchRule,
    ReadEstimate,
    Select,
    WriteEstimate,
    dry_run_delete,
    dry_run_put,
    estimate_batch_get,
    estimate_condition_check,
    estimate_get,
    estimate_query,
    estimate_request,
    estimate_scan,
    estimate_transact_get,
    estimate_write,
    index_entry_size,
    read_units,
    write_units,
)
from lsiorm._model.drift import Drift, DriftReport
from lsiorm._model.encoding import KeyFormat
from lsiorm._model.entity import Entity, decode_item, key_templates, shard_value
from lsiorm._model.epoch import EpochSeconds
from lsiorm._model.indexes import (
    BillingMode,
    GlobalIndex,
    KeyAttribute,
    KeyType,
    LocalIndex,
    Projection,
    ProjectionType,
)
from lsiorm._model.key_layout import FieldLayout, KeyLayout, TemplateLayout, key_layout
from lsiorm._model.key_styles import KeyStyle
from lsiorm._model.number_fit import LossyFloat
from lsiorm._model.schema import Table
from lsiorm._model.shards import Shard
from lsiorm._model.stream_record import ChangeEvent, ChangeName, change_of
from lsiorm._model.table_settings import (
    LiveSettings,
    OnDemandThroughput,
    StreamViewType,
    TableSettings,
    WarmThroughput,
)
from lsiorm._model.wire import AttributeValue, WireItem, item_size
from lsiorm._ops.audit import CollectionSize
from lsiorm._ops.batch import BatchWriteResult
from lsiorm._ops.collection_guard import (
    CollectionEstimate,
    CollectionWarning,
    CollectionWatcher,
    Hookable,
)
from lsiorm._ops.hooks import HookRequest
from lsiorm._ops.items import DeleteResult, Idempotency
from lsiorm._ops.meter import CapacityMeter, Measurement
from lsiorm._ops.reads import Page
from lsiorm._ops.retry import RetryPolicy
from lsiorm._ops.steps import Operation
from lsiorm._ops.tables import ApplyReport
from lsiorm._ops.transactions import TransactWriteResult
from lsiorm._query.decode import missing_fields
from lsiorm._query.explain import Explanation
from lsiorm._query.plan import (
    Candidate,
    IndexChoice,
    MissingMode,
    PlannedRequest,
    PlannedRequests,
    QueryPlan,
    ReadOptions,
    ReadSource,
    RequestShape,
    ScanProgress,
)
from lsiorm._query.rekeying import FormCheck
from lsiorm._query.values import Query, Scan, query, scan
from lsiorm._requests.batch import DeleteTarget, GetKey
from lsiorm._requests.transactions import ConditionCheck, Delete, Get, Put, TransactAction, Update
from lsiorm._requests.update_effect import dry_run_update
from lsiorm._requests.update_plan import UpdateChanges, UpdateSpec
from lsiorm._session import AsyncSession, Session
from lsiorm._session_methods import SessionConfig
from lsiorm._stream_handler import (
    AfterFailure,
    HeldBackError,
    RecordFailure,
    StreamBatch,
    StreamHandler,
    UnknownChanges,
    stream_handler,
)
from lsiorm.errors import (
    BatchGetIncompleteError,
    BatchWriteIncompleteError,
    CallTimeoutError,
    CancellationReason,
    ConditionFailedError,
    ConfigurationError,
    CursorError,
    DeclarationError,
    DynamoError,
    IndexKeyTypeError,
    InternalServerError,
    ItemCollectionSizeLimitError,
    ItemTooLargeError,
    JobError,
    KeyEncodingError,
    LsiormError,
    MigrationWarning,
    MissingDependencyError,
    NotFoundError,
    NumberPrecisionError,
    OutcomeUnknownError,
    PartialKeyUpdateError,
    QueryPlanError,
    ResourceNotFoundError,
    RetryableError,
    ServiceValidationError,
    StaleVersionError,
    ThrottledError,
    TransactionCanceledError,
    TransactionConflictError,
    TransportError,
    ValidationError,
)

if _typing.TYPE_CHECKING:
    from lsiorm._io.jsonlines import read_relief_file
    from lsiorm._jobs.adoption import AdoptionExample, AdoptionReport, EntityAdoption
    from lsiorm._jobs.backfill import BackfillReport
    from lsiorm._jobs.key_audit import AttributeTally, EntityKeyAudit, KeyAuditReport
    from lsiorm._jobs.ledger import JobRecord, UnitRecord, ledger_table
    from lsiorm._jobs.relief import ReliefReport
    from lsiorm._jobs.resumable import JobProgress
    from lsiorm._jobs.units import ExportUnit, ScanUnit, Unit, unit_from_json, unit_to_json
    from lsiorm._migration.dual_writes import DualFallback, DualWrites
    from lsiorm._migration.plan import MigrationReport, VerifyReport
    from lsiorm._model.key_check import ItemKeyCheck, KeyProblem, ProblemKind

#: Public names whose module is imported when the name is first used (PEP 562): the key jobs,
#: table migrations, dual writes and their reports, which a program's first request does not
#: need. ``from lsiorm import X`` imports X's module then.
_LAZY: dict[str, str] = {
    "AdoptionExample": "lsiorm._jobs.adoption",
    "AdoptionReport": "lsiorm._jobs.adoption",
    "AttributeTally": "lsiorm._jobs.key_audit",
    "BackfillReport": "lsiorm._jobs.backfill",
    "DualFallback": "lsiorm._migration.dual_writes",
    "DualWrites": "lsiorm._migration.dual_writes",
    "EntityAdoption": "lsiorm._jobs.adoption",
    "EntityKeyAudit": "lsiorm._jobs.key_audit",
    "ExportUnit": "lsiorm._jobs.units",
    "ItemKeyCheck": "lsiorm._model.key_check",
    "JobProgress": "lsiorm._jobs.resumable",
    "JobRecord": "lsiorm._jobs.ledger",
    "KeyAuditReport": "lsiorm._jobs.key_audit",
    "KeyProblem": "lsiorm._model.key_check",
    "MigrationReport": "lsiorm._migration.plan",
    "ProblemKind": "lsiorm._model.key_check",
    "ReliefReport": "lsiorm._jobs.relief",
    "ScanUnit": "lsiorm._jobs.units",
    "Unit": "lsiorm._jobs.units",
    "UnitRecord": "lsiorm._jobs.ledger",
    "VerifyReport": "lsiorm._migration.plan",
    "ledger_table": "lsiorm._jobs.ledger",
    "read_relief_file": "lsiorm._io.jsonlines",
    "unit_from_json": "lsiorm._jobs.units",
    "unit_to_json": "lsiorm._jobs.units",
}

if not _typing.TYPE_CHECKING:  # type checkers read the imports above

    def __getattr__(name: str) -> _typing.Any:
        module = _LAZY.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(_importlib.import_module(module), name)
        globals()[name] = value
        return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("lsiorm")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "0.0.0+unknown"


__version__: str = _version()
del _version
"""The installed lsiorm version (from the package metadata)."""

__all__ = [
    "AdoptionExample",
    "AdoptionReport",
    "AfterFailure",
    "ApplyPlan",
    "ApplyReport",
    "ApplyStep",
    "AsyncSession",
    "Attr",
    "AttributeTally",
    "AttributeValue",
    "BackfillReport",
    "BatchGetIncompleteError",
    "BatchWriteIncompleteError",
    "BatchWriteResult",
    "BeginsWith",
    "Between",
    "BillingMode",
    "CallTimeoutError",
    "CancellationReason",
    "Candidate",
    "CapacityMeter",
    "CapacityUnits",
    "ChangeEvent",
    "ChangeName",
    "CollectionEstimate",
    "CollectionSize",
    "CollectionWarning",
    "CollectionWatcher",
    "Compare",
    "Condition",
    "ConditionCheck",
    "ConditionFailedError",
    "ConfigurationError",
    "ConsumedCapacity",
    "Contains",
    "CursorError",
    "DeclarationError",
    "Delete",
    "DeleteResult",
    "DeleteTarget",
    "Drift",
    "DriftReport",
    "DualFallback",
    "DualWrites",
    "DynamoError",
    "Entity",
    "EntityAdoption",
    "EntityKeyAudit",
    "EpochSeconds",
    "Exists",
    "Explanation",
    "ExportUnit",
    "FastPathStats",
    "FetchRule",
    "FieldCondition",
    "FieldLayout",
    "FormCheck",
    "Get",
    "GetKey",
    "GlobalIndex",
    "HeldBackError",
    "HookRequest",
    "Hookable",
    "Idempotency",
    "In",
    "IndexChoice",
    "IndexKeyTypeError",
    "InternalServerError",
    "ItemCollectionSizeLimitError",
    "ItemKeyCheck",
    "ItemTooLargeError",
    "JobError",
    "JobProgress",
    "JobRecord",
    "KeyAttribute",
    "KeyAuditReport",
    "KeyEncodingError",
    "KeyFormat",
    "KeyLayout",
    "KeyProblem",
    "KeyStyle",
    "KeyType",
    "LiveSettings",
    "LocalIndex",
    "LossyFloat",
    "LsiormError",
    "Measurement",
    "MigrationReport",
    "MigrationWarning",
    "MissingDependencyError",
    "MissingMode",
    "NotExists",
    "NotFoundError",
    "NumberPrecisionError",
    "OnDemandThroughput",
    "Operation",
    "Operator",
    "OutcomeUnknownError",
    "Page",
    "PartialKeyUpdateError",
    "PlannedRequest",
    "PlannedRequests",
    "ProblemKind",
    "Projection",
    "ProjectionType",
    "Put",
    "Query",
    "QueryPlan",
    "QueryPlanError",
    "ReadEstimate",
    "ReadOptions",
    "ReadSource",
    "RecordFailure",
    "ReliefReport",
    "RequestShape",
    "ResourceNotFoundError",
    "ResponseFastPath",
    "RetryPolicy",
    "RetryableError",
    "Scan",
    "ScanProgress",
    "ScanUnit",
    "Select",
    "ServiceValidationError",
    "Session",
    "SessionConfig",
    "Shard",
    "StaleVersionError",
    "StreamBatch",
    "StreamHandler",
    "StreamViewType",
    "Table",
    "TableSettings",
    "Telemetry",
    "TemplateLayout",
    "ThrottledError",
    "TransactAction",
    "TransactWriteResult",
    "TransactionCanceledError",
    "TransactionConflictError",
    "TransportError",
    "Unit",
    "UnitRecord",
    "UnknownChanges",
    "Update",
    "UpdateChanges",
    "UpdateSpec",
    "ValidationError",
    "VerifyReport",
    "WarmThroughput",
    "WireItem",
    "WriteEstimate",
    "__version__",
    "all_of",
    "any_of",
    "begins_with",
    "between",
    "change_of",
    "cond",
    "contains",
    "decode_item",
    "dry_run_delete",
    "dry_run_put",
    "dry_run_update",
    "eq",
    "estimate_batch_get",
    "estimate_condition_check",
    "estimate_get",
    "estimate_query",
    "estimate_request",
    "estimate_scan",
    "estimate_transact_get",
    "estimate_write",
    "exists",
    "fast_json_of",
    "ge",
    "gt",
    "index_entry_size",
    "install_fast_json",
    "is_in",
    "item_size",
    "key_layout",
    "key_templates",
    "le",
    "ledger_table",
    "lt",
    "missing_fields",
    "ne",
    "not_exists",
    "query",
    "read_relief_file",
    "read_units",
    "scan",
    "shard_value",
    "stream_handler",
    "uninstall_fast_json",
    "unit_from_json",
    "unit_to_json",
    "where",
    "write_units",
]

_compat.install()
