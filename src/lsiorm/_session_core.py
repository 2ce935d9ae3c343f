"""What both sessions hold besides their client: `SessionSettings` (every setting they take,
declared once), `SessionCore` (the context every operation runs in, the collection watcher, the
capacity meter, the telemetry) and `SessionConfig` (how a worker process builds a session like
it). The methods they share are declared in
`lsiorm._session_methods`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lsiorm._io import environment
from lsiorm._io.telemetry import Telemetry, telemetry_for
from lsiorm._model.keyring import Keyring
from lsiorm._model.schema import Table
from lsiorm._ops.collection_guard import CollectionWatcher
from lsiorm._ops.meter import CapacityMeter
from lsiorm._ops.naming import TableNames, prefixed
from lsiorm._ops.pipeline import Context
from lsiorm._ops.protection import Protection
from lsiorm._ops.retry import RetryPolicy
from lsiorm._query.cursor import cursor_key

if TYPE_CHECKING:
    from lsiorm._migration.dual_writes import DualWrites

__all__ = ["SessionConfig", "SessionCore", "SessionSettings"]


@dataclass(frozen=True, kw_only=True)
class SessionSettings:
    """Every setting both sessions take, declared once: its name, type and default.

    `Session` and `AsyncSession` take these as keywords (besides the client, their own
    boto3 or aioboto3 session, and the client's keywords) and hand them on as one value;
    `SessionCore` and `SessionConfig` read them from it. The facades' signatures are written
    out for type checkers and IDEs, and a test holds them to this declaration.
    """

    endpoint_url: str | None = None
    region_name: str | None = None
    retry: RetryPolicy | None = None
    hooks: Sequence[object] = ()
    watch_collections: bool = True
    fast_json: bool = True
    profile_name: str | None = None
    table_prefix: str | None = None
    table_names: Callable[[str], str] | None = None
    consumed_capacity: bool = False
    lean: bool = True
    cursor_secret: str | bytes | None = None
    telemetry: bool | Telemetry = True
    streams_client: Any = None
    keyring: Keyring | None = None

    @classmethod
    def given(cls, keywords: Mapping[str, Any]) -> SessionSettings:
        """The settings among ``keywords`` (a facade's arguments, with others beside them)."""
        return cls(
            **{f.name: keywords[f.name] for f in dataclasses.fields(cls) if f.name in keywords}
        )

    def live_prefix(self) -> str:
        """The table prefix in force: the one given, else (with no ``table_names`` either) the
        environment's, else none."""
        if self.table_prefix is not None:
            return self.table_prefix
        return "" if self.table_names is not None else environment.table_prefix()


@dataclass(frozen=True)
class SessionConfig:
    """What a worker process needs to build a session like this one: a plain, picklable value.

    A session built from parameters (not from a client, a boto3 or aioboto3 session or a
    ``table_names`` function) has one in ``session.config``; a key job sends it with each unit
    to an executor's workers, which build their own sessions. Its fields are settings of
    `SessionSettings` (the table prefix as resolved).
    """

    endpoint_url: str | None = None
    region_name: str | None = None
    profile_name: str | None = None
    table_prefix: str = ""
    retry: RetryPolicy | None = None
    watch_collections: bool = True
    fast_json: bool = True
    lean: bool = True
    #: The keyring of protected fields (docs/security.md); a worker builds its own caches.
    keyring: Keyring | None = None

    def kwargs(self) -> dict[str, Any]:
        """The keywords of `Session` that build such a session."""
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


class SessionCore:
    """What both sessions hold besides their client: the context every operation runs in (retry
    policy, hooks, live table names), the item-collection watcher, the capacity meter and the
    OpenTelemetry telemetry.
    """

    ctx: Context
    #: How to build a session like this one in another process (None: built from a client).
    config: SessionConfig | None = None
    #: What an executor's worker runs per unit (set by either session when it has a config).
    unit_worker: Callable[..., Any] | None = None
    #: The dual writes of a migration this session makes (`dual_writes`), with what they did:
    #: writes mirrored, and those sent to the source alone by reason; None for a plain session.
    dual: DualWrites | None = None

    def _set_up(self, settings: SessionSettings, *, shareable: bool) -> None:
        """Set the session up as ``settings`` say (each facade's ``__init__`` calls it first);
        ``shareable``: built from parameters alone, so a worker can build one like it."""
        if shareable:
            self.config = _portable(settings)
        #: The keyring protected fields are sealed and opened with (None: none); its data
        #: keys are cached in ``ctx.protection`` (see docs/security.md).
        self.keyring = settings.keyring
        protection = Protection(settings.keyring) if settings.keyring is not None else None
        #: Where spans and metrics go (docs/observability.md); None when off or when
        #: opentelemetry-api is not installed.
        self.telemetry = telemetry_for(settings.telemetry)
        #: The item-collection watcher (on by default; see docs/collections.md), or None.
        self.collections = CollectionWatcher() if settings.watch_collections else None
        names = _resolver(settings.live_prefix(), settings.table_names)
        #: The consumed-capacity meter (asks DynamoDB only when enabled; docs/capacity.md).
        self.capacity = CapacityMeter(
            settings.consumed_capacity, declared=None if names is None else names.declared
        )
        watcher = (self.collections,) if self.collections is not None else ()
        self.ctx = Context(
            settings.retry or RetryPolicy(),
            (*watcher, *settings.hooks),
            names,
            cursor_key(settings.cursor_secret),
            protection=protection,
        )

    def table_name(self, table: Table) -> str:
        """The name of the live table that `table` stands for in this session."""
        return self.ctx.live_name(table)

    def add_hook(self, hook: object) -> None:
        """Attach a middleware hook to every later request of this session."""
        self.ctx = self.ctx.with_hooks((*self.ctx.hooks, hook))


def _portable(settings: SessionSettings) -> SessionConfig:
    """The part of ``settings`` a worker can be sent, with the table prefix resolved."""
    portable = {f.name: getattr(settings, f.name) for f in dataclasses.fields(SessionConfig)}
    return SessionConfig(**{**portable, "table_prefix": settings.live_prefix()})


def _resolver(prefix: str, names: Callable[[str], str] | None) -> TableNames | None:
    if prefix and names is not None:
        raise TypeError("Give table_prefix or table_names, not both.")
    if prefix:
        return TableNames(prefixed(prefix))
    return None if names is None else TableNames(names)
