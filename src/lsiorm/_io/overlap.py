"""Running a Gather's operations concurrently under the sync driver: a small thread pool.

The async driver already overlaps the chunks of a batch; here each operation runs in a worker
thread (at most ``limit`` at once), so one chunk's client work overlaps another chunk's wait on
DynamoDB. Results come back in the order of the operations; when some fail, the first failure
in that order is raised after all have finished, as the async driver does.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Final

from lsiorm._ops.steps import Operation

__all__ = ["MAX_THREADS", "gather_in_threads"]

#: The most worker threads one Gather uses, whatever its limit.
MAX_THREADS: Final = 16


def gather_in_threads(
    run: Callable[[Operation[Any]], Any], operations: Sequence[Operation[Any]], limit: int
) -> list[Any]:
    """Run each operation with ``run``, at most ``limit`` at a time; return their results."""
    workers = min(max(1, limit), len(operations), MAX_THREADS)
    if workers <= 1:
        return [run(op) for op in operations]
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="lsiorm-gather") as pool:
        # Each task runs in a copy of the caller's context, so context variables carry over.
        futures = [pool.submit(contextvars.copy_context().run, run, op) for op in operations]
        outcomes: list[Any] = []
        first_error: BaseException | None = None
        for future in futures:
            error = future.exception()
            if error is not None:
                first_error = first_error or error
                outcomes.append(None)
            else:
                outcomes.append(future.result())
    if first_error is not None:
        raise first_error
    return outcomes
