"""The items of the jobs' ledger, declared as lsiorm entities.

The ledger (`lsiorm._jobs.ledger`) keeps three kinds of item in one partition (the reserved
``~lsiorm#jobs`` partition of a table): a run pointer per job declaration (`RunPointer`), a run
(`JobItem`) and a unit of a run (`UnitItem`). Each is a model here that declares fields only;
`LedgerEntities.at` binds the three to the ledger's own `Table` (`Entity.bound_to`), made from
the ledger's location: its table's declared name and key attribute names. So the classes are
importable by name (a worker is handed only the location and binds them itself), and the
user's own table declaration never lists them (``lsiorm check`` and adoption do not see them).
A table migration binds its own items (its state) to the same table
(`lsiorm._migration.state_items`).

Values that were JSON text in a string attribute before are maps now (a unit, a declaration,
counts, notes, a position, an intent, the rate), and every item carries the type attribute.
An item written by the earlier format (no type attribute) is refused by `check_format` with
``ValidationError("ledger.old-format")``, which says what to do.

Numbers inside maps come back from DynamoDB as decimals; `plain` turns them back into the
ints and floats they were written as (a float with no fraction comes back as an int of the same
value; past 2**53 it is written as an integer, so it comes back as that int).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Final

from lsiorm._model.entity import Entity
from lsiorm._model.schema import Table
from lsiorm._ops.reserved import NAMESPACE
from lsiorm.errors import ValidationError

__all__ = [
    "RUNS_REMEDY",
    "TYPE_ATTRIBUTE",
    "JobItem",
    "LedgerEntities",
    "RunPointer",
    "UnitItem",
    "check_format",
    "plain",
]

#: The attribute that holds a ledger item's type (the earlier format wrote none).
TYPE_ATTRIBUTE: Final = "_type"


class RunPointer(Entity):
    """``run#<fingerprint>``: the current run of one job declaration."""

    fingerprint: str
    current: str | None = None


class JobItem(Entity):
    """``job#<id>``: one run of a job, with its progress counters and shared rate."""

    id: str
    kind: str
    state: str
    declaration: dict[str, Any]
    fingerprint: str
    created: float
    updated: float
    units: int
    done: int = 0
    items: int = 0
    changed: int = 0
    running: int = 0
    rate: dict[str, float]
    rate_at: float


class UnitItem(Entity):
    """``unit#<run id>#<unit id>``: one unit of a run, its lease, position and counts."""

    job: str
    unit_id: str
    unit: dict[str, Any]
    state: str
    counts: dict[str, int]
    runs: int = 0
    owner: str | None = None
    lease: float | None = None
    notes: dict[str, Any] | None = None
    position: Any = None
    intent: dict[str, Any] | None = None
    finished: float | None = None


@dataclass(frozen=True)
class LedgerEntities:
    """The ledger's entities bound to the table of one ledger location."""

    table: Table
    pointer: type[RunPointer]
    job: type[JobItem]
    unit: type[UnitItem]

    @staticmethod
    def at(
        table: str, partition_key: str, sort_key: str, namespace: str = NAMESPACE
    ) -> LedgerEntities:
        """The entities of the ledger in partition ``namespace`` of table ``table`` (a declared
        name), keyed by ``partition_key`` and ``sort_key``; the same arguments give the same
        classes, in every thread."""
        with _BINDING:
            return _bound(table, partition_key, sort_key, namespace)


_BINDING = threading.Lock()


@functools.lru_cache(maxsize=64)
def _bound(table: str, partition_key: str, sort_key: str, namespace: str) -> LedgerEntities:
    own = Table(table, partition_key, sort_key, type_attribute=TYPE_ATTRIBUTE)
    pk = namespace.replace("{", "{{").replace("}", "}}")
    return LedgerEntities(
        own,
        RunPointer.bound_to(
            own, {partition_key: pk, sort_key: "run#{fingerprint}"}, type_name="LedgerRun"
        ),
        JobItem.bound_to(own, {partition_key: pk, sort_key: "job#{id}"}, type_name="LedgerJob"),
        UnitItem.bound_to(
            own,
            {partition_key: pk, sort_key: "unit#{job}#{unit_id}"},
            type_name="LedgerUnit",
        ),
    )


#: What to do with job runs the earlier format wrote.
RUNS_REMEDY: Final = (
    "Finish or cancel those runs with the version that started them, or delete the ledger's "
    "items (the partition '~lsiorm#jobs', or the ledger table) and start the job again: a new "
    "run reads its whole input again."
)


def check_format(
    item: Mapping[str, Any] | None,
    where: str,
    *,
    holds: str = "job runs",
    remedy: str = RUNS_REMEDY,
) -> None:
    """Refuse a ledger item the earlier format wrote (it has no type attribute): ``where``
    holds ``holds`` that this version does not read; ``remedy`` says what to do."""
    if item and TYPE_ATTRIBUTE not in item:
        raise ValidationError(
            "ledger.old-format",
            f"{where} holds {holds} written by an earlier lsiorm (a development version of "
            f"0.2), whose ledger format this version does not read. {remedy}",
        )


def plain(value: Any) -> Any:
    """A value read back from a map with its numbers as the ints and floats written."""
    if isinstance(value, Decimal):
        return (
            int(value)
            if value == value.to_integral_value() and "." not in str(value)
            else (float(value))
        )
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value
