"""lsiorm: typed single-table data access for Amazon DynamoDB."""

from .audit import CollectionSize
from .batch import BatchWriteResult
from .capacity import ReadEstimate, WriteEstimate
from .collections_guard import CollectionEstimate, CollectionWarning, CollectionWatcher
from .conditions import (
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
from .encoding import KeyFormat
from .entity import Entity
from .query import (
    Explanation,
    Query,
    QueryPlan,
    Scan,
    Shard,
    missing_fields,
    query,
    scan,
    shard_value,
)
from .query_ops import Page, ScanProgress
from .retry import RetryPolicy
from .schema import DriftReport, GlobalIndex, KeyAttribute, LocalIndex, Projection, Table
from .session import AsyncSession, Session
from .transactions import ConditionCheck, Delete, Get, Put, TransactWriteResult, Update

__all__ = [
    "AsyncSession",
    "BatchWriteResult",
    "CollectionEstimate",
    "CollectionSize",
    "CollectionWarning",
    "CollectionWatcher",
    "ConditionCheck",
    "Delete",
    "DriftReport",
    "Entity",
    "Explanation",
    "Get",
    "GlobalIndex",
    "KeyAttribute",
    "KeyFormat",
    "LocalIndex",
    "Page",
    "Projection",
    "Put",
    "Query",
    "QueryPlan",
    "ReadEstimate",
    "RetryPolicy",
    "Scan",
    "ScanProgress",
    "Session",
    "Shard",
    "Table",
    "TransactWriteResult",
    "Update",
    "WriteEstimate",
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
    "missing_fields",
    "ne",
    "not_exists",
    "query",
    "scan",
    "shard_value",
    "where",
]
