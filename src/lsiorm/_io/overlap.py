"""Running a Gather's operations concurrently under the sync driver: a small thread pool.

The async driver already overlaps the chunks of a batch and the segments of a scan job; here
each operation runs in a worker thread (at most ``limit`` at once), so one operation's client
work overlaps another's wait on DynamoDB. Results come back in the order of the operations;
when some fail with an error, the first failure in that order is raised after all have
finished, as the async driver does.

A stop is different from an error: when the caller is interrupted (Ctrl-C) or an operation
ends with a BaseException that is not an error (a kill), every other operation stops at its
next step (the request it has in flight completes first), and that interruption is raised.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any, Final

from lsiorm._ops.steps import Operation

__all__ = ["MAX_THREADS", "Stopped", "gather_in_threads"]

#: The most worker threads one Gather uses, whatever its limit.
MAX_THREADS: Final = 16


class Stopped(BaseException):
    """An operation was stopped because a sibling or the caller was interrupted."""


Runner = Callable[[Operation[Any], "threading.Event | None"], Any]


def gather_in_threads(run: Runner, operations: Sequence[Operation[Any]], limit: int) -> list[Any]:
    """Run each operation with ``run(op, stop)``, at most ``limit`` at a time; return results.

    ``run`` must check ``stop`` before each step and raise `Stopped` once it is set.
    """
    workers = min(max(1, limit), len(operations), MAX_THREADS)
    if workers <= 1:
        return [run(op, None) for op in operations]
    stop = threading.Event()

    def guarded(op: Operation[Any]) -> Any:
        try:
            return run(op, stop)
        except Exception:
            raise
        except BaseException:  # a kill or an interrupt, not an error: stop the others too
            stop.set()
            raise

    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="lsiorm-gather") as pool:
        # Each task runs in a copy of the caller's context, so context variables carry over.
        futures = [pool.submit(contextvars.copy_context().run, guarded, op) for op in operations]
        try:
            wait(futures)
        except BaseException:  # Ctrl-C while waiting: the workers stop at their next step
            stop.set()
            raise
        outcomes: list[Any] = []
        errors: list[BaseException] = []
        for future in futures:
            error = future.exception()
            if error is not None:
                errors.append(error)
                outcomes.append(None)
            else:
                outcomes.append(future.result())
    if errors:
        # The cause of a stop, not the stops it caused.
        raise next((e for e in errors if not isinstance(e, Stopped)), errors[0])
    return outcomes
