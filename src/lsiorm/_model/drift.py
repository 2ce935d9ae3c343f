"""Drift: how a live table differs from its declaration, read from DescribeTable and TTL."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from lsiorm._model.indexes import LocalIndex, Projection, SecondaryIndex, kind_of
from lsiorm._model.table_spec import TableSpec

_TYPE_WORDS = {"S": "string", "N": "number", "B": "binary"}


@dataclass(frozen=True)
class Drift:
    """One way the live table differs from its declaration; ``index`` is None for the table."""

    kind: str
    index: str | None
    message: str


@dataclass(frozen=True)
class DriftReport:
    """Every difference found between a table's declaration and DescribeTable output.

    ``unchecked`` names the declared settings the endpoint could not report (an engine that
    does not know the operation that reads them, as DynamoDB Local does not know point-in-time
    recovery, tags and resource policies): they were not compared, and are not drift.
    """

    table: str
    drifts: tuple[Drift, ...]
    unchecked: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """Whether the live table matches its declaration."""
        return not self.drifts

    def __str__(self) -> str:
        lines = (
            [f"Table {self.table!r} matches its declaration."]
            if self.ok
            else [drift.message for drift in self.drifts]
        )
        if self.unchecked:
            lines.append(
                f"Not checked (the endpoint does not report them): {', '.join(self.unchecked)}."
            )
        return "\n".join(lines)


def table_drifts(table: TableSpec, live: Mapping[str, Any]) -> Iterator[Drift]:
    """Return the differences between a table's declaration and its live description."""
    return _DriftCheck(table, live).drifts()


class _DriftCheck:
    """Differences between one table's declaration and its live description."""

    def __init__(self, table: TableSpec, live: Mapping[str, Any]) -> None:
        self.t = table
        self.live = live

    def drifts(self) -> Iterator[Drift]:
        yield from self._key_schema()
        yield from self._attribute_types()
        yield from self._indexes(self.t.local_indexes, "LocalSecondaryIndexes", "lsi")
        yield from self._indexes(self.t.global_indexes, "GlobalSecondaryIndexes", "gsi")
        yield from self._billing_mode()

    def _key_schema(self) -> Iterator[Drift]:
        declared = self.t.key_schema(None)
        live = _live_keys(self.live)
        if live != declared:
            yield Drift(
                "key-schema",
                None,
                f"Table {self.t.name!r} has key schema {_keys_text(live)} but declares "
                f"{_keys_text(declared)}; a table's key schema cannot be changed, so the table "
                "must be recreated and its data migrated.",
            )

    def _attribute_types(self) -> Iterator[Drift]:
        live_types = {
            d.get("AttributeName"): d.get("AttributeType")
            for d in self.live.get("AttributeDefinitions") or ()
        }
        for name, declared in self.t.key_attributes.items():
            live = live_types.get(name)
            # An attribute absent here belongs to a missing index, reported as such.
            if live is not None and live != declared:
                yield Drift(
                    "attribute-type",
                    None,
                    f"Key attribute {name!r} of table {self.t.name!r} is a "
                    f"{_type_text(live)} on DynamoDB but is declared as a "
                    f"{_type_text(declared)}; every key schema using it must be recreated "
                    "to change its type.",
                )

    def _indexes(
        self, declared: Sequence[SecondaryIndex], field: str, prefix: Literal["lsi", "gsi"]
    ) -> Iterator[Drift]:
        live = {d.get("IndexName"): d for d in self.live.get(field) or ()}
        for index in declared:
            found = live.get(index.name)
            if found is None:
                yield Drift(f"{prefix}-missing", index.name, self._missing(index))
                continue
            keys = _live_keys(found)
            want = self.t.key_schema(index)
            if keys != want:
                yield Drift(
                    f"{prefix}-key-schema",
                    index.name,
                    f"{self._where(index)} has key schema {_keys_text(keys)} but declares "
                    f"{_keys_text(want)}; {self._rebuild(index)}",
                )
            if not _same_projection(index.projection, found.get("Projection") or {}):
                yield Drift(
                    f"{prefix}-projection",
                    index.name,
                    f"{self._where(index)} projects "
                    f"{_live_projection_text(found.get('Projection') or {})} but declares "
                    f"{_projection_text(index.projection)}; a projection cannot be changed in "
                    f"place, so {self._rebuild(index)}",
                )
        names = {i.name for i in declared}
        for extra in sorted(str(n) for n in live if n not in names):
            yield Drift(f"{prefix}-extra", extra, self._extra(prefix, extra))

    def _where(self, index: SecondaryIndex) -> str:
        return f"The {kind_of(index)} secondary index {index.name!r} of table {self.t.name!r}"

    def _rebuild(self, index: SecondaryIndex) -> str:
        if isinstance(index, LocalIndex):
            return "the table must be recreated and its data migrated."
        return "the index must be deleted and created again (UpdateTable can do both)."

    def _missing(self, index: SecondaryIndex) -> str:
        if isinstance(index, LocalIndex):
            return (
                f"Local secondary index {index.name!r} is declared but table {self.t.name!r} "
                "does not have it; an LSI cannot be added to an existing table, so the table "
                "must be recreated with it and its data migrated."
            )
        return (
            f"Global secondary index {index.name!r} is declared but table {self.t.name!r} "
            "does not have it; it can be added with UpdateTable."
        )

    def _extra(self, prefix: str, name: str) -> str:
        if prefix == "lsi":
            return (
                f"Table {self.t.name!r} has local secondary index {name!r}, which is not "
                "declared; an LSI cannot be removed from an existing table, so declare it or "
                "recreate the table without it."
            )
        return (
            f"Table {self.t.name!r} has global secondary index {name!r}, which is not "
            "declared; declare it or delete it with UpdateTable."
        )

    def _billing_mode(self) -> Iterator[Drift]:
        summary = self.live.get("BillingModeSummary") or {}
        # DescribeTable omits the summary for tables that were created PROVISIONED.
        live = summary.get("BillingMode") or "PROVISIONED"
        if live != self.t.billing_mode:
            yield Drift(
                "billing-mode",
                None,
                f"Table {self.t.name!r} is billed {live} but declares {self.t.billing_mode}; "
                "UpdateTable can switch the billing mode.",
            )


def _live_keys(described: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """The live key schema as (attribute, HASH or RANGE) pairs, in DynamoDB's order."""
    return tuple(
        (str(k.get("AttributeName")), str(k.get("KeyType")))
        for k in described.get("KeySchema") or ()
    )


def _keys_text(keys: Sequence[tuple[str, str]]) -> str:
    partition = [name for name, role in keys if role == "HASH"]
    sort = [name for name, role in keys if role == "RANGE"]
    text = f"partition key {_names_text(partition)}"
    return text + (f" and sort key {_names_text(sort)}" if sort else " and no sort key")


def _names_text(names: Sequence[str]) -> str:
    if len(names) == 1:
        return repr(names[0])
    return "(" + ", ".join(map(repr, names)) + ")"


def _type_text(type_: str) -> str:
    word = _TYPE_WORDS.get(type_)
    return f"{word} ({type_})" if word else repr(type_)


def _same_projection(declared: Projection, live: Mapping[str, Any]) -> bool:
    if live.get("ProjectionType") != declared.type:
        return False
    if declared.type != "INCLUDE":
        return True
    return set(live.get("NonKeyAttributes") or ()) == set(declared.attributes)


def _projection_text(projection: Projection) -> str:
    if projection.type == "INCLUDE":
        return f"INCLUDE ({', '.join(sorted(projection.attributes))})"
    return projection.type


def _live_projection_text(live: Mapping[str, Any]) -> str:
    type_ = live.get("ProjectionType")
    if type_ == "INCLUDE":
        return f"INCLUDE ({', '.join(sorted(live.get('NonKeyAttributes') or ()))})"
    return str(type_)


def live_ttl(describe_ttl: Mapping[str, Any]) -> tuple[str, str | None]:
    """Return the TTL status and attribute of a DescribeTimeToLive response (or its inner part)."""
    inner = describe_ttl.get("TimeToLiveDescription")
    live: Mapping[str, Any] = inner if isinstance(inner, Mapping) else describe_ttl
    status = live.get("TimeToLiveStatus") or "DISABLED"
    name = live.get("AttributeName")
    return str(status), name if isinstance(name, str) else None


_FIX_TTL: Final = (
    "Session.create_table(table, exists_ok=True) or `lsiorm create-table --exists-ok` enables it"
)


def ttl_drifts(table: TableSpec, describe_ttl: Mapping[str, Any]) -> Iterator[Drift]:
    status, live = live_ttl(describe_ttl)
    want = table.ttl_attribute
    name = table.name
    if want is None:
        if status in ("ENABLED", "ENABLING"):
            doing = "enabled" if status == "ENABLED" else "being enabled"
            yield Drift(
                "ttl-undeclared",
                None,
                f"Time to live is {doing} on table {name!r} for attribute {live!r}, but the "
                f"declaration sets no ttl_attribute; declare ttl_attribute={live!r} so that "
                "entities store it as epoch seconds, or disable TTL with UpdateTimeToLive.",
            )
        return
    if status == "DISABLED":
        yield Drift(
            "ttl-disabled",
            None,
            f"Time to live is disabled on table {name!r}, but the declaration expires items by "
            f"{want!r}; items never expire until it is enabled ({_FIX_TTL}).",
        )
    elif status == "DISABLING":
        yield Drift(
            "ttl-disabling",
            None,
            f"Time to live on table {name!r} is being disabled (attribute {live!r}), but the "
            f"declaration expires items by {want!r}; once DynamoDB has finished (it can take "
            f"up to an hour), enable it again ({_FIX_TTL}).",
        )
    elif live != want:
        doing = "enabled" if status == "ENABLED" else "being enabled"
        yield Drift(
            "ttl-attribute",
            None,
            f"Time to live is {doing} on table {name!r} for attribute {live!r}, but the "
            f"declaration expires items by {want!r}; a table has one TTL attribute, so disable "
            f"TTL with UpdateTimeToLive and, once that has finished, enable it on {want!r}.",
        )
    elif status == "ENABLING":
        yield Drift(
            "ttl-enabling",
            None,
            f"Time to live on table {name!r} is being enabled for {want!r}; items start to "
            "expire once DynamoDB has finished, which can take up to an hour.",
        )
    elif status != "ENABLED":
        yield Drift(
            "ttl-status",
            None,
            f"Time to live on table {name!r} has status {status!r}, which lsiorm does not know; "
            f"the declaration expires items by {want!r}.",
        )
