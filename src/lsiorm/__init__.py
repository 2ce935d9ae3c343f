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
    ProtectionError,
    QueryPlanError,
    ResourceNotFoundError,
    RetryableError,
    ServiceValidationError,
    StaleVersionError,
    ThrottledError,
    ThrottlingReason,
    TransactionCanceledError,
    TransactionConflictError,
    TransportError,
    ValidationError,
)

if _typing.TYPE_CHECKING:
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
    from lsiorm._io.fastjson import (
        FastPathStats,
        ResponseFastPath,
    )
    from lsiorm._io.fastjson import (
        fast_path_of as fast_json_of,
    )
    from lsiorm._io.fastjson import (
        install as install_fast_json,
    )
    from lsiorm._io.fastjson import (
        uninstall as uninstall_fast_json,
    )
    from lsiorm._io.jsonlines import read_relief_file
    from lsiorm._io.telemetry import Telemetry
    from lsiorm._jobs.adoption import AdoptionExample, AdoptionReport, EntityAdoption
    from lsiorm._jobs.backfill import BackfillReport
    from lsiorm._jobs.key_audit import AttributeTally, EntityKeyAudit, KeyAuditReport
    from lsiorm._jobs.ledger import JobRecord, UnitRecord, ledger_table
    from lsiorm._jobs.orphans import OrphanReport
    from lsiorm._jobs.relief import ReliefReport
    from lsiorm._jobs.resumable import JobProgress
    from lsiorm._jobs.units import ExportUnit, ScanUnit, Unit, unit_from_json, unit_to_json
    from lsiorm._migration.dual_writes import DualFallback, DualWrites
    from lsiorm._migration.plan import MigrationReport, VerifyReport
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
    from lsiorm._model.field_protection import Compressed, Encrypted, Offloaded
    from lsiorm._model.indexes import (
        BillingMode,
        GlobalIndex,
        KeyAttribute,
        KeyType,
        LocalIndex,
        Projection,
        ProjectionType,
    )
    from lsiorm._model.item_size import stored_size
    from lsiorm._model.key_check import ItemKeyCheck, KeyProblem, ProblemKind
    from lsiorm._model.key_layout import FieldLayout, KeyLayout, TemplateLayout, key_layout
    from lsiorm._model.key_styles import KeyStyle
    from lsiorm._model.keyring import Keyring, KeyringMode
    from lsiorm._model.number_fit import LossyFloat
    from lsiorm._model.offloaded_ref import OffloadedRef
    from lsiorm._model.schema import Table
    from lsiorm._model.sealing import Binding
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
    from lsiorm._requests.transactions import (
        ConditionCheck,
        Delete,
        Get,
        Put,
        TransactAction,
        Update,
    )
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

#: Every public name but the errors, by the module that holds it. A name's module is imported
#: when the name is first used (PEP 562): ``import lsiorm`` loads only the error tree, and
#: ``from lsiorm import Session`` loads what a session needs, not the key jobs, migrations,
#: capacity estimates, stream handlers and the rest. Type checkers read the imports above
#: (``tests/package/test_import_cost.py`` checks that both lists hold the same names).
_MODULES: dict[str, tuple[str, ...]] = {
    "lsiorm._conditions": (
        "Attr",
        "BeginsWith",
        "Between",
        "Compare",
        "Condition",
        "Contains",
        "Exists",
        "FieldCondition",
        "In",
        "NotExists",
        "Operator",
        "all_of",
        "any_of",
        "begins_with",
        "between",
        "cond",
        "contains",
        "eq",
        "exists",
        "ge",
        "gt",
        "is_in",
        "le",
        "lt",
        "ne",
        "not_exists",
        "where",
    ),
    "lsiorm._io.fastjson": (
        "FastPathStats",
        "ResponseFastPath",
        "fast_json_of",
        "install_fast_json",
        "uninstall_fast_json",
    ),
    "lsiorm._io.jsonlines": ("read_relief_file",),
    "lsiorm._io.telemetry": ("Telemetry",),
    "lsiorm._jobs.adoption": (
        "AdoptionExample",
        "AdoptionReport",
        "EntityAdoption",
    ),
    "lsiorm._jobs.backfill": ("BackfillReport",),
    "lsiorm._jobs.key_audit": (
        "AttributeTally",
        "EntityKeyAudit",
        "KeyAuditReport",
    ),
    "lsiorm._jobs.ledger": (
        "JobRecord",
        "UnitRecord",
        "ledger_table",
    ),
    "lsiorm._jobs.orphans": ("OrphanReport",),
    "lsiorm._jobs.relief": ("ReliefReport",),
    "lsiorm._jobs.resumable": ("JobProgress",),
    "lsiorm._jobs.units": (
        "ExportUnit",
        "ScanUnit",
        "Unit",
        "unit_from_json",
        "unit_to_json",
    ),
    "lsiorm._migration.dual_writes": (
        "DualFallback",
        "DualWrites",
    ),
    "lsiorm._migration.plan": (
        "MigrationReport",
        "VerifyReport",
    ),
    "lsiorm._model.apply_plan": (
        "ApplyPlan",
        "ApplyStep",
    ),
    "lsiorm._model.capacity": (
        "CapacityUnits",
        "ConsumedCapacity",
        "FetchRule",
        "ReadEstimate",
        "Select",
        "WriteEstimate",
        "dry_run_delete",
        "dry_run_put",
        "estimate_batch_get",
        "estimate_condition_check",
        "estimate_get",
        "estimate_query",
        "estimate_request",
        "estimate_scan",
        "estimate_transact_get",
        "estimate_write",
        "index_entry_size",
        "read_units",
        "write_units",
    ),
    "lsiorm._model.drift": (
        "Drift",
        "DriftReport",
    ),
    "lsiorm._model.encoding": ("KeyFormat",),
    "lsiorm._model.entity": (
        "Entity",
        "decode_item",
        "key_templates",
        "shard_value",
    ),
    "lsiorm._model.epoch": ("EpochSeconds",),
    "lsiorm._model.field_protection": ("Compressed", "Encrypted", "Offloaded"),
    "lsiorm._model.item_size": ("stored_size",),
    "lsiorm._model.offloaded_ref": ("OffloadedRef",),
    "lsiorm._model.sealing": ("Binding",),
    "lsiorm._model.indexes": (
        "BillingMode",
        "GlobalIndex",
        "KeyAttribute",
        "KeyType",
        "LocalIndex",
        "Projection",
        "ProjectionType",
    ),
    "lsiorm._model.key_check": (
        "ItemKeyCheck",
        "KeyProblem",
        "ProblemKind",
    ),
    "lsiorm._model.key_layout": (
        "FieldLayout",
        "KeyLayout",
        "TemplateLayout",
        "key_layout",
    ),
    "lsiorm._model.key_styles": ("KeyStyle",),
    "lsiorm._model.keyring": ("Keyring", "KeyringMode"),
    "lsiorm._model.number_fit": ("LossyFloat",),
    "lsiorm._model.schema": ("Table",),
    "lsiorm._model.shards": ("Shard",),
    "lsiorm._model.stream_record": (
        "ChangeEvent",
        "ChangeName",
        "change_of",
    ),
    "lsiorm._model.table_settings": (
        "LiveSettings",
        "OnDemandThroughput",
        "StreamViewType",
        "TableSettings",
        "WarmThroughput",
    ),
    "lsiorm._model.wire": (
        "AttributeValue",
        "WireItem",
        "item_size",
    ),
    "lsiorm._ops.audit": ("CollectionSize",),
    "lsiorm._ops.batch": ("BatchWriteResult",),
    "lsiorm._ops.collection_guard": (
        "CollectionEstimate",
        "CollectionWarning",
        "CollectionWatcher",
        "Hookable",
    ),
    "lsiorm._ops.hooks": ("HookRequest",),
    "lsiorm._ops.items": (
        "DeleteResult",
        "Idempotency",
    ),
    "lsiorm._ops.meter": (
        "CapacityMeter",
        "Measurement",
    ),
    "lsiorm._ops.reads": ("Page",),
    "lsiorm._ops.retry": ("RetryPolicy",),
    "lsiorm._ops.steps": ("Operation",),
    "lsiorm._ops.tables": ("ApplyReport",),
    "lsiorm._ops.transactions": ("TransactWriteResult",),
    "lsiorm._query.decode": ("missing_fields",),
    "lsiorm._query.explain": ("Explanation",),
    "lsiorm._query.plan": (
        "Candidate",
        "IndexChoice",
        "MissingMode",
        "PlannedRequest",
        "PlannedRequests",
        "QueryPlan",
        "ReadOptions",
        "ReadSource",
        "RequestShape",
        "ScanProgress",
    ),
    "lsiorm._query.rekeying": ("FormCheck",),
    "lsiorm._query.values": (
        "Query",
        "Scan",
        "query",
        "scan",
    ),
    "lsiorm._requests.batch": (
        "DeleteTarget",
        "GetKey",
    ),
    "lsiorm._requests.transactions": (
        "ConditionCheck",
        "Delete",
        "Get",
        "Put",
        "TransactAction",
        "Update",
    ),
    "lsiorm._requests.update_effect": ("dry_run_update",),
    "lsiorm._requests.update_plan": (
        "UpdateChanges",
        "UpdateSpec",
    ),
    "lsiorm._session": (
        "AsyncSession",
        "Session",
    ),
    "lsiorm._session_methods": ("SessionConfig",),
    "lsiorm._stream_handler": (
        "AfterFailure",
        "HeldBackError",
        "RecordFailure",
        "StreamBatch",
        "StreamHandler",
        "UnknownChanges",
        "stream_handler",
    ),
}
#: Public names that differ from their name in the module that holds them.
_RENAMED: dict[str, str] = {
    "fast_json_of": "fast_path_of",
    "install_fast_json": "install",
    "uninstall_fast_json": "uninstall",
}
_LAZY: dict[str, str] = {name: module for module, names in _MODULES.items() for name in names}

if not _typing.TYPE_CHECKING:  # type checkers read the imports above

    def __getattr__(name: str) -> _typing.Any:
        module = _LAZY.get(name)
        if module is not None:
            value = getattr(_importlib.import_module(module), _RENAMED.get(name, name))
        elif name == "__version__":
            value = _version()
        else:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        globals()[name] = value
        return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY, "__version__"})


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("lsiorm")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "0.0.0+unknown"


__version__: str
"""The installed lsiorm version (from the package metadata, read when first used)."""

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
    "Binding",
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
    "Compressed",
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
    "Encrypted",
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
    "Keyring",
    "KeyringMode",
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
    "Offloaded",
    "OffloadedRef",
    "OnDemandThroughput",
    "Operation",
    "Operator",
    "OrphanReport",
    "OutcomeUnknownError",
    "Page",
    "PartialKeyUpdateError",
    "PlannedRequest",
    "PlannedRequests",
    "ProblemKind",
    "Projection",
    "ProjectionType",
    "ProtectionError",
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
    "ThrottlingReason",
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
    "stored_size",
    "stream_handler",
    "uninstall_fast_json",
    "unit_from_json",
    "unit_to_json",
    "where",
    "write_units",
]

_compat.install()
