"""How a session runs a key job: its keywords declared once (`JobKeywords`) and its
`JobOptions` made of them, and where it
reports its progress (the caller's callback, or a progress bar). Used by the job methods of
`lsiorm._session_methods`.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from lsiorm._ops.steps import Operation
from lsiorm._session_core import SessionCore

if TYPE_CHECKING:
    from lsiorm._jobs.options import JobOptions
    from lsiorm._jobs.resumable import JobProgress

__all__ = ["JobCall", "JobKeywords", "closing", "reporting"]

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


@dataclass(frozen=True, kw_only=True)
class JobKeywords:
    """How a key job runs, as the session methods that start one take it: each keyword's name,
    type and default, declared once.

    A job method takes the keywords of these that apply to it (a read-only audit has no write
    budget), written out in its signature for type checkers and IDEs, and a test holds them to
    this declaration; its body hands them on with `given`, and `options` makes the job's
    `JobOptions` of them.
    """

    executor: Executor | None = None
    ledger: str | None = None
    write_budget: float | None = None
    read_budget: float | None = None
    export: str | None = None
    concurrency: int = 8
    lease_seconds: float = 60.0
    detach: bool = False

    @classmethod
    def given(cls, keywords: Mapping[str, Any]) -> JobKeywords:
        """The job keywords among ``keywords`` (a method's arguments, with others beside them)."""
        return cls(
            **{f.name: keywords[f.name] for f in dataclasses.fields(cls) if f.name in keywords}
        )

    def options(self, session: SessionCore, *, in_memory: bool = False) -> JobOptions:
        """The job's options: these keywords, the session's unit worker, and (``in_memory``) a
        ledger kept in this process."""
        from lsiorm._io.exports import open_export
        from lsiorm._jobs.options import JobOptions

        return JobOptions(
            ledger=self.ledger,
            in_memory=in_memory,
            executor=self.executor,
            worker=session.unit_worker,
            write_budget=self.write_budget,
            read_budget=self.read_budget,
            export=None if self.export is None else open_export(os.fspath(self.export)),
            concurrency=self.concurrency,
            lease_seconds=self.lease_seconds,
            detach=self.detach,
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
