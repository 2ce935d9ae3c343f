"""The steps an operation yields to a driver: the whole contract between core and I/O.

An operation is a generator. It yields a step and receives the step's result:

* :class:`Call`: one DynamoDB API request; the result is the response dict. A failed request is
  thrown into the generator as an :class:`~lsiorm.errors.LsiormError`.
* :class:`Sleep`: wait before the next attempt; the result is None.
* :class:`Gather`: run sub-operations (concurrently: tasks under async, threads under sync); the
  result is the list of their return values, in order.
* :class:`Emit`: hand a value to the caller of an iterating driver (a page of a query); the
  result is None.

The generator's return value is the operation's result. Nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from lsiorm._model.schema import Table

__all__ = ["Call", "Emit", "Gather", "Operation", "Sleep", "Step"]

T = TypeVar("T")


@dataclass(frozen=True)
class Call:
    """One DynamoDB API request, e.g. ``Call("PutItem", {...})``."""

    operation: str
    params: dict[str, Any]
    tables: tuple[Table, ...] = field(default=(), compare=False)


@dataclass(frozen=True)
class Sleep:
    """Wait this many seconds."""

    seconds: float


@dataclass(frozen=True)
class Gather:
    """Run sub-operations, at most ``limit`` at a time when the driver is concurrent."""

    operations: tuple[Operation[Any], ...]
    limit: int = 8


@dataclass(frozen=True)
class Emit:
    """Give a value to the caller of an iterating driver."""

    value: Any


Step = Call | Sleep | Gather | Emit
Operation = Generator[Step, Any, T]
