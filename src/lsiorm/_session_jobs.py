"""How a session runs a key job: its `JobOptions` from a method's keywords, and where it
reports its progress (the caller's callback, or a progress bar). Used by the job methods of
`lsiorm._session_methods`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import Executor
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from lsiorm._ops.steps import Operation
from lsiorm._session_core import SessionCore

if TYPE_CHECKING:
    from lsiorm._jobs.options import JobOptions
    from lsiorm._jobs.resumable import JobProgress

__all__ = ["JobCall", "closing", "job_options", "reporting"]

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


def job_options(
    session: SessionCore,
    *,
    executor: Executor | None = None,
    ledger: str | None = None,
    write_budget: float | None = None,
    read_budget: float | None = None,
    export: str | None = None,
    concurrency: int = 8,
    in_memory: bool = False,
    lease_seconds: float = 60.0,
    detach: bool = False,
) -> JobOptions:
    """How a key job runs, from a session method's keywords."""
    from lsiorm._io.exports import open_export
    from lsiorm._jobs.options import JobOptions

    return JobOptions(
        ledger=ledger,
        in_memory=in_memory,
        executor=executor,
        worker=session.unit_worker,
        write_budget=write_budget,
        read_budget=read_budget,
        export=None if export is None else open_export(os.fspath(export)),
        concurrency=concurrency,
        lease_seconds=lease_seconds,
        detach=detach,
    )


class JobCall(Protocol[T_co]):
    """A key job with every argument given but where it reports its progress."""

    def __call__(self, *, progress: Callable[[JobProgress], object] | None) -> Operation[T_co]: ...


def reporting(
    job: JobCall[T], progress: Callable[[JobProgress], object] | bool | None, label: str
) -> Operation[T]:
    """Start a key job reporting to the caller's callback, or to a progress bar for True."""
    if progress is not True:
        return job(progress=progress or None)
    from lsiorm._io.progress_bar import ProgressBar

    bar = ProgressBar(label)
    return closing(job(progress=bar), bar)


def closing(op: Operation[T], bar: Any) -> Operation[T]:
    """Run `op`; close its progress bar when it ends, however it ends."""
    try:
        return (yield from op)
    finally:
        bar.close()
