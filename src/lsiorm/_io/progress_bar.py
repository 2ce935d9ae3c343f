"""A terminal progress bar for the key jobs (audit-keys, backfill, relief), drawn by tqdm.

It shows the items read, the rate, and, when the job has an estimate of its total, a bar and
the time left; a migration's catch-up shows its lag (stream records behind, and seconds). The
total is an estimate (a table's ItemCount, which DynamoDB refreshes about every six hours, or a
collection's measured count), shown as ``~total``; the bar never shows a total below what was
read. tqdm is imported when a bar is first drawn, never by ``import lsiorm``.
"""

from __future__ import annotations

import sys
from typing import Any, TextIO

from lsiorm._io.lifetime import Closing
from lsiorm._jobs.resumable import JobProgress

__all__ = ["ProgressBar"]

_FORMAT = (
    "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/~{total_fmt} items "
    "[{elapsed}<{remaining}, {rate_fmt}{postfix}]"
)
_FORMAT_NO_TOTAL = "{desc}: {n_fmt} items [{elapsed}, {rate_fmt}{postfix}]"


class ProgressBar(Closing):
    """A job's progress callback that draws a bar on ``file`` (stderr); close it at the end."""

    def __init__(self, description: str, file: TextIO | None = None) -> None:
        self.description = description
        self.file = file if file is not None else sys.stderr
        self._bar: Any = None

    def __call__(self, state: JobProgress) -> None:
        bar = self._bar
        if bar is None:
            from tqdm import tqdm  # here: only a job that draws a bar loads tqdm

            total = None if state.total is None else max(state.total, state.items)
            bar = self._bar = tqdm(
                total=total,
                initial=state.resumed,  # a resumed run goes on from its count; its rate does not
                desc=self.description,
                unit=" items",
                file=self.file,
                bar_format=_FORMAT if total is not None else _FORMAT_NO_TOTAL,
                dynamic_ncols=True,
                mininterval=0.2,
            )
        if bar.total is not None and state.items > bar.total:
            bar.total = state.items  # the estimate was low: never show more than 100%
        postfix = (
            f"{state.changed} {state.counted}, segments {state.segments_done}/{state.segments}"
        )
        if state.events_behind is not None:  # a migration's catch-up
            postfix = (
                f"{state.changed} applied, lag {state.events_behind} records, "
                f"{state.seconds_behind or 0.0:.1f} s"
            )
        bar.set_postfix_str(postfix, refresh=False)
        bar.update(state.items - bar.n)

    def close(self) -> None:
        """Draw the bar's final state and end its line."""
        if self._bar is not None:
            self._bar.close()
