"""What both sessions hold besides their client: `SessionCore` (the context every operation runs
in, the collection watcher, the capacity meter, the telemetry) and `SessionConfig` (how a
worker process builds a session like it). The methods they share are declared in
`lsiorm._session_methods`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lsiorm._io import environment
from lsiorm._io.telemetry import Telemetry, telemetry_for
from lsiorm._model.schema import Table
from lsiorm._ops.collection_guard import CollectionWatcher
from lsiorm._ops.meter import CapacityMeter
from lsiorm._ops.naming import TableNames, prefixed
from lsiorm._ops.pipeline import Context
from lsiorm._ops.retry import RetryPolicy
from lsiorm._query.cursor import cursor_key

if TYPE_CHECKING:
    from lsiorm._migration.dual_writes import DualWrites

__all__ = ["SessionConfig", "SessionCore"]


@dataclass(frozen=True)
class SessionConfig:
    """What a worker process needs to build a session like this one: a plain, picklable value.

    A session built from parameters (not from a client, a boto3 or aioboto3 session or a
    ``table_names`` function) has one in ``session.config``; a key job sends it with each unit
    to an executor's workers, which build their own sessions.
    """

    endpoint_url: str | None = None
    region_name: str | None = None
    profile_name: str | None = None
    table_prefix: str = ""
    retry: RetryPolicy | None = None
    watch_collections: bool = True
    fast_json: bool = True
    lean: bool = True

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

    def __init__(
        self,
        retry: RetryPolicy | None,
        hooks: Sequence[object],
        watch_collections: bool,
        table_prefix: str | None = None,
        table_names: Callable[[str], str] | None = None,
        consumed_capacity: bool = False,
        cursor_secret: str | bytes | None = None,
        telemetry: bool | Telemetry = True,
        *,
        shareable: bool = False,
        endpoint_url: str | None = None,
        region_name: str | None = None,
        profile_name: str | None = None,
        fast_json: bool = True,
        lean: bool = True,
    ) -> None:
        if table_prefix is None:  # neither given: the environment's prefix, if any
            table_prefix = "" if table_names is not None else environment.table_prefix()
        if shareable:  # built from parameters alone: a worker can build one like it
            self.config = SessionConfig(
                endpoint_url,
                region_name,
                profile_name,
                table_prefix,
                retry,
                watch_collections,
                fast_json,
                lean,
            )
        #: Where spans and metrics go (docs/observability.md); None when off or when
        #: opentelemetry-api is not installed.
        self.telemetry = telemetry_for(telemetry)
        #: The item-collection watcher (on by default; see docs/collections.md), or None.
        self.collections = CollectionWatcher() if watch_collections else None
        names = _resolver(table_prefix, table_names)
        #: The consumed-capacity meter (asks DynamoDB only when enabled; docs/capacity.md).
        self.capacity = CapacityMeter(
            consumed_capacity, declared=None if names is None else names.declared
        )
        watcher = (self.collections,) if self.collections is not None else ()
        self.ctx = Context(
            retry or RetryPolicy(), (*watcher, *hooks), names, cursor_key(cursor_secret)
        )

    def table_name(self, table: Table) -> str:
        """The name of the live table that `table` stands for in this session."""
        return self.ctx.live_name(table)

    def add_hook(self, hook: object) -> None:
        """Attach a middleware hook to every later request of this session."""
        self.ctx = self.ctx.with_hooks((*self.ctx.hooks, hook))


def _resolver(prefix: str, names: Callable[[str], str] | None) -> TableNames | None:
    if prefix and names is not None:
        raise TypeError("Give table_prefix or table_names, not both.")
    if prefix:
        return TableNames(prefixed(prefix))
    return None if names is None else TableNames(names)
