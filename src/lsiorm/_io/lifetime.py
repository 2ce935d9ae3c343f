"""What a with block does to the objects that hold a resource: close it, or start and stop it.

`Closing` is for objects that hold their resource from construction (a session's client, a
progress bar): the block closes them at its end. `Running` is for services that are started
and stopped (a local engine, a proxy): the block starts one and stops it at its end. Both close
or stop on any exit, and neither swallows an exception. `LoopHeld` holds an async resource
opened outside ``async with`` until it is closed, or until its event loop lets it go.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from contextlib import AsyncExitStack

from typing_extensions import Self

__all__ = ["Closing", "LoopHeld", "Running"]


class Closing:
    """Closed at the end of a ``with`` block (which gives the object itself)."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class Running:
    """Started on entering a ``with`` block (which gives the object itself), stopped at its end."""

    def start(self) -> object:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


class LoopHeld:
    """An async exit stack held open until `close`, or until its event loop lets it go.

    The stack is held by a started async generator, and asyncio closes those itself: when one
    is garbage collected it schedules its ``aclose()`` on the loop, and when the loop shuts down
    (``asyncio.run`` calls ``shutdown_asyncgens``) it closes every one still open. So a client
    opened without ``async with`` and never closed is closed all the same, instead of leaving
    an open connection pool behind ("Unclosed client session").
    """

    def __init__(self) -> None:
        self._holder: AsyncGenerator[None, None] | None = None

    async def hold(self, stack: AsyncExitStack, on_close: Callable[[], None]) -> None:
        """Hold ``stack``; ``on_close`` runs once it is closed, whoever closes it."""
        holder = _holding(stack, on_close)
        await anext(holder)  # started: the running loop now tracks it
        self._holder = holder

    async def close(self) -> None:
        """Close the stack now (nothing happens when nothing is held)."""
        holder, self._holder = self._holder, None
        if holder is not None:
            await holder.aclose()


async def _holding(
    stack: AsyncExitStack, on_close: Callable[[], None]
) -> AsyncGenerator[None, None]:
    try:
        yield
    finally:
        try:
            await stack.aclose()
        finally:
            on_close()
