"""A table migration's state in the ledger, declared as lsiorm entities.

A migration keeps two items of its own in its ledger's partition, beside the runs of its copy,
catch-up and verifications (`lsiorm._jobs.ledger_items`): its state (`MigrationState`,
``migration#<id>``) and, once a session declared dual writes for it, when they began and where
their reads went (`DualWrites`, ``migration#<id>#dual``). Each is a model that declares fields
only; `MigrationEntities.at` binds both to the ledger's own `Table` (the one the ledger's runs
and units are bound to), so they are written and read like any entity of lsiorm's, and the
user's table declaration never lists them.

The state is versioned (``version``): each save is a put over the version it read, so two
processes that run one migration at once cannot both write it (the catch-up's per-item order
would break), and a put whose answer was lost and whose resend met itself is told apart by the
put itself. Its values are typed attributes: maps, lists and numbers, not JSON text. An item
the earlier format wrote (its state as JSON text in ``data``, no type attribute) is refused by
`check_migration_format` with ``ValidationError("ledger.old-format")``, which says what to do.

Numbers inside the maps come back from DynamoDB as decimals; the state's map fields read them
back as the ints and floats written (`lsiorm._jobs.ledger_items.plain`), so a declaration read
back has the fingerprint it was written with.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from pydantic import Field, field_validator

from lsiorm._jobs.ledger_items import LedgerEntities, check_format, plain
from lsiorm._model.entity import Entity
from lsiorm._ops.reserved import NAMESPACE

__all__ = [
    "OLD_FORMAT_REMEDY",
    "DualWrites",
    "MigrationEntities",
    "MigrationState",
    "check_migration_format",
]


class MigrationState(Entity):
    """``migration#<id>``: a migration as its ledger item holds it.

    ``phase``: ``copy``, ``catch-up``, ``switched`` or ``abandoned``. ``shards`` is what an
    older release kept of each shard (its parent, the last sequence number applied, whether it
    was read to its end); the catch-up now keeps its shards as units of its own run in the
    ledger (``catch_up_job``), and reads ``shards`` only to start where an older release
    stopped. ``lag`` is ``[records, seconds]`` of the last catch-up pass, which ended at
    ``caught_up_at`` (seconds since the epoch; 0 before the first).
    """

    id: str
    declaration: dict[str, Any]
    phase: str = "copy"
    created_destination: bool = False
    stream_arn: str = ""
    shards: dict[str, dict[str, Any]] = Field(default_factory=dict)
    copy_job: str | None = None
    applied: int = 0
    skipped: int = 0
    #: Changes that could not be applied on a condition (an item whose condition would be
    #: longer than DynamoDB allows); verification reports their items.
    unapplied: int = 0
    lag: list[float] = Field(default_factory=lambda: [0, 0.0])
    verify: dict[str, Any] = Field(default_factory=dict)
    #: The shards' positions when the last clean verification started (None: there is none).
    verified_from: dict[str, str | None] | None = None
    #: Verifications begun so far: the epoch of the last, in its runs' declarations.
    verify_epoch: int = 0
    #: The verification in progress (None: none): its ``epoch``, the shards' positions at its
    #: ``start``, and the ids of its runs done (``jobs``, by kind).
    verifying: dict[str, Any] | None = None
    #: The runs of the last verification that ended (deleted when the next one begins).
    verify_jobs: list[str] = Field(default_factory=list)
    caught_up_at: float = 0.0
    #: What a worker elsewhere needs to run a unit of the migration (`worker_info`).
    worker: dict[str, Any] = Field(default_factory=dict)
    #: When the copy began, by DynamoDB's clock (seconds since the epoch; None: a migration
    #: begun by an older release): records older than that, by a margin, are not replayed.
    copy_started: float | None = None
    #: The catch-up's run in the ledger (its units are the stream's shards, with positions).
    catch_up_job: str | None = None
    #: Records read by the catch-up but older than the copy (not applied).
    before_copy: int = 0
    #: The version of the stored item this state was read at (0: never saved).
    version: int = 0

    @field_validator("declaration", "shards", "verify", "verifying", "worker")
    @classmethod
    def _as_written(cls, value: Any) -> Any:
        return plain(value)


class DualWrites(Entity):
    """``migration#<id>#dual``: when a session's dual writes of the migration began (seconds
    since the epoch) and where their reads go (``source`` or ``destination``)."""

    migration: str
    since: float
    reads: str


@dataclass(frozen=True)
class MigrationEntities:
    """A migration's entities bound to the ledger table of one ledger location."""

    state: type[MigrationState]
    dual: type[DualWrites]

    @staticmethod
    def at(
        table: str, partition_key: str, sort_key: str, namespace: str = NAMESPACE
    ) -> MigrationEntities:
        """The entities of the migrations in partition ``namespace`` of table ``table`` (a
        declared name), keyed by ``partition_key`` and ``sort_key``; the same arguments give the
        same classes, in every thread."""
        with _BINDING:
            return _bound(table, partition_key, sort_key, namespace)


_BINDING = threading.Lock()


@functools.lru_cache(maxsize=64)
def _bound(table: str, partition_key: str, sort_key: str, namespace: str) -> MigrationEntities:
    own = LedgerEntities.at(table, partition_key, sort_key, namespace).table
    pk = namespace.replace("{", "{{").replace("}", "}}")
    return MigrationEntities(
        MigrationState.bound_to(
            own,
            {partition_key: pk, sort_key: "migration#{id}"},
            type_name="LedgerMigration",
            version="version",
        ),
        DualWrites.bound_to(
            own,
            {partition_key: pk, sort_key: "migration#{migration}#dual"},
            type_name="LedgerMigrationDual",
        ),
    )


#: What to do with a migration whose state the earlier format wrote.
OLD_FORMAT_REMEDY: Final = (
    "Finish the migration (`migrate_table(..., finish=True)`) or abandon it (`abandon=True`) "
    "with the version that started it, then upgrade. Or delete the ledger's items (the "
    "partition '~lsiorm#jobs', or the ledger table) and the destination table the migration "
    "created, and start it again: its copy reads the whole source again."
)


def check_migration_format(item: Mapping[str, Any] | None, where: str) -> None:
    """Refuse a migration's item the earlier format wrote (`OLD_FORMAT_REMEDY` says what to
    do)."""
    check_format(item, where, holds="a table migration", remedy=OLD_FORMAT_REMEDY)
