"""The steps an operation yields to a driver: the whole contract between core and I/O.

An operation is a generator. It yields a step and receives the step's result:

* `Call`: one DynamoDB API request; the result is the response dict. A failed request is
  thrown into the generator as an [`LsiormError`][lsiorm.errors.LsiormError].
* `Sleep`: wait before the next attempt; the result is None.
* `Gather`: run sub-operations (concurrently: tasks under async, threads under sync); the
  result is the list of their return values, in order.
* `Emit`: hand a value to the caller of an iterating driver (a page of a query); the
  result is None.

The generator's return value is the operation's result. Nothing here does I/O.

`advance` is the one place that resumes an operation: both drivers call it after each
step, with the step's result or its failure, and get back the next step or `Done`.
`relayed` runs an operation inside another one that changes its steps on their way out
(middleware: the retry note, the capacity meter).
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, TypeVar

from lsiorm.errors import LsiormError

if TYPE_CHECKING:
    from lsiorm._model.schema import Table

__all__ = [
    "ITEM_OPERATIONS",
    "READ_OPERATIONS",
    "STREAM_OPERATIONS",
    "Call",
    "Done",
    "Emit",
    "Gather",
    "Operation",
    "RetryNote",
    "Sleep",
    "Step",
    "advance",
    "changes_data",
    "relayed",
]

T = TypeVar("T")

#: The DynamoDB operations that read or write items (every one accepts ReturnConsumedCapacity).
ITEM_OPERATIONS: Final = frozenset(
    {
        "GetItem",
        "PutItem",
        "UpdateItem",
        "DeleteItem",
        "Query",
        "Scan",
        "BatchGetItem",
        "BatchWriteItem",
        "TransactGetItems",
        "TransactWriteItems",
    }
)


#: The DynamoDB Streams operations: a driver sends them with its streams client.
STREAM_OPERATIONS: Final = frozenset(
    {"DescribeStream", "GetShardIterator", "GetRecords", "ListStreams"}
)


#: The operations that change nothing: every other operation may write (an item, a table).
READ_OPERATIONS: Final = frozenset(
    {
        "GetItem",
        "Query",
        "Scan",
        "BatchGetItem",
        "TransactGetItems",
        "DescribeTable",
        "DescribeTimeToLive",
        "DescribeContinuousBackups",
        "ListTagsOfResource",
        "GetResourcePolicy",
        "ListTables",
        *STREAM_OPERATIONS,
    }
)


def changes_data(operation: str) -> bool:
    """Whether a request of ``operation`` may change something (an item, a table)."""
    return operation not in READ_OPERATIONS


@dataclass(frozen=True, slots=True)
class RetryNote:
    """Why a request is sent again: which attempt it is, what the last one met, after what wait.

    ``reason`` is the error code of the failed attempt (``"ThrottlingException"``), or
    ``"unprocessed"`` for the remainder a batch got back. Drivers put it on the request's span.
    """

    attempt: int
    reason: str
    delay: float


@dataclass(frozen=True)
class Call:
    """One DynamoDB API request, e.g. ``Call("PutItem", {...})``."""

    operation: str
    params: dict[str, Any]
    tables: tuple[Table, ...] = field(default=(), compare=False)
    #: True when lsiorm built and checked the params itself (they may skip botocore's checks in
    #: the lean request lane); False for a raw request a user wrote (``Session.call``).
    built: bool = field(default=True, compare=False)
    #: Set when the request is a retry of an earlier attempt (see `RetryNote`).
    retry: RetryNote | None = field(default=None, compare=False)
    #: When the call it belongs to must be done (``time.monotonic()`` seconds), if it has a
    #: ``timeout=``: a driver stops waiting for the answer then (`lsiorm._ops.deadline`).
    deadline: float | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Sleep:
    """Wait this many seconds."""

    seconds: float


@dataclass(frozen=True)
class Gather:
    """Run sub-operations, at most ``limit`` at a time when the driver is concurrent.

    ``threads`` says the sub-operations share no mutable state but what is behind a lock (batch
    chunks, the segments of a key job and their ledger), so the sync driver may run them in a
    thread pool; otherwise it runs them one after another. The async driver always interleaves
    them on its one thread.
    """

    operations: tuple[Operation[Any], ...]
    limit: int = 8
    threads: bool = False


@dataclass(frozen=True)
class Emit:
    """Give a value to the caller of an iterating driver."""

    value: Any


Step = Call | Sleep | Gather | Emit
Operation = Generator[Step, Any, T]
"""An operation: a generator that yields steps and returns its result (see the module doc)."""


@dataclass(frozen=True, slots=True)
class Done:
    """The end of an operation, carrying its return value."""

    value: Any


def advance(
    op: Operation[Any], result: Any = None, error: BaseException | None = None
) -> Step | Done:
    """Resume ``op`` with a step's result (or throw its failure in); return the next step or Done.

    Call it with no result to start an operation. The end of a generator is a StopIteration,
    which must not escape into another generator or a coroutine (PEP 479): here it becomes
    `Done`.
    """
    try:
        if error is not None:
            return op.throw(error)
        return op.send(result)
    except StopIteration as stop:
        return Done(stop.value)


def relayed(
    op: Operation[T],
    rewrite: Callable[[Step], Step],
    answered: Callable[[Step, Any], None] | None = None,
) -> Operation[T]:
    """Run ``op`` as a step of this operation, each of its steps passed through ``rewrite``.

    ``answered`` sees each step as it was sent, with its result; a failure is thrown into
    ``op`` as it came. ``op`` is closed however this ends.
    """
    try:
        step = advance(op)
        while not isinstance(step, Done):
            sent = rewrite(step)
            try:
                result = yield sent
            except LsiormError as exc:
                step = advance(op, error=exc)
                continue
            if answered is not None:
                answered(sent, result)
            step = advance(op, result)
        value: T = step.value
        return value
    finally:
        op.close()
