"""What a with block does to the objects that hold a resource: close it, or start and stop it.

`Closing` is for objects that hold their resource from construction (a session's client, a
progress bar): the block closes them at its end. `Running` is for services that are started
and stopped (a local engine, a proxy): the block starts one and stops it at its end. Both close
or stop on any exit, and neither swallows an exception.
"""

from __future__ import annotations

from typing_extensions import Self

__all__ = ["Closing", "Running"]


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
