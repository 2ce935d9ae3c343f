"""lsiorm: typed single-table data access for Amazon DynamoDB."""

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
from .retry import RetryPolicy
from .schema import DriftReport, GlobalIndex, KeyAttribute, LocalIndex, Projection, Table
from .session import AsyncSession, Session

__all__ = [
    "AsyncSession",
    "DriftReport",
    "Entity",
    "GlobalIndex",
    "KeyAttribute",
    "KeyFormat",
    "LocalIndex",
    "Projection",
    "RetryPolicy",
    "Session",
    "Table",
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
]
