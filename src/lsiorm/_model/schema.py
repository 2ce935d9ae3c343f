"""Table: a DynamoDB table declaration, its CreateTable request and its drift check."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Generic, Literal, TypeVar, overload

from typing_extensions import Never, Self

from lsiorm._model.drift import Drift, DriftReport, live_ttl, table_drifts, ttl_drifts
from lsiorm._model.indexes import (
    BillingMode,
    GlobalIndex,
    KeyAttribute,
    KeyType,
    LocalIndex,
    Projection,
    ProjectionType,
)
from lsiorm._model.key_styles import KeyStyle
from lsiorm._model.table_rules import check_table
from lsiorm._model.table_settings import (
    LiveSettings,
    OnDemandThroughput,
    StreamViewType,
    TableSettings,
    WarmThroughput,
    creation_parts,
    index_drifts,
    policy_text,
    settings_drifts,
)
from lsiorm._model.table_spec import TableSpec
from lsiorm.errors import DeclarationError, ValidationError

# lsiorm 0.1's ``lsiorm.schema`` gives this module (see lsiorm._compat): the names it exported
# stay importable from here until that path goes.
__all__ = [
    "BillingMode",
    "Drift",
    "DriftReport",
    "GlobalIndex",
    "KeyAttribute",
    "KeyType",
    "LocalIndex",
    "Projection",
    "ProjectionType",
    "Table",
]

_RESERVED_LSI_SLOTS = 5

T = TypeVar("T")


class _Declared(Generic[T]):
    """A read-only attribute of a Table: the value of the same name in its checked declaration."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, table: None, owner: type) -> Self: ...

    @overload
    def __get__(self, table: Table, owner: type) -> T: ...

    def __get__(self, table: Table | None, owner: type) -> T | Self:
        if table is None:
            return self
        value: T = getattr(table._spec, self.name)
        return value

    def __set__(self, table: Table, value: Never) -> None:
        raise AttributeError(f"Table.{self.name} is read-only: a declaration is fixed once checked")


class Table:
    """A DynamoDB table declaration, checked against DynamoDB's rules when constructed.

    The operational settings (``warm_throughput`` to ``resource_policy``) are None unless
    declared, and a setting left None is not managed: ``create_table`` leaves DynamoDB's
    default, ``check`` does not compare it and ``apply`` does not change it (see
    docs/deployment.md, "Table settings as code").

    Args:
        name: The table name (3 to 255 characters of ``A-Za-z0-9_.-``).
        partition_key: The partition key attribute; a ``str`` means a string attribute.
        sort_key: The sort key attribute, or None for a table without one.
        local_indexes: Up to five [`LocalIndex`][lsiorm.LocalIndex] declarations.
        global_indexes: Up to twenty [`GlobalIndex`][lsiorm.GlobalIndex] declarations.
        billing_mode: ``"PAY_PER_REQUEST"`` (the default) or ``"PROVISIONED"``.
        read_capacity: Read capacity units, required only when ``PROVISIONED``.
        write_capacity: Write capacity units, required only when ``PROVISIONED``.
        type_attribute: The attribute that stores each item's entity type (``"_type"``).
        collection_warning_gb: The item collection size at which writes to a table with local
            indexes start warning (DynamoDB refuses them at 10 GB); 8 GB by default.
        ttl_attribute: The stored attribute that DynamoDB's time to live reads, or None (the
            default) for a table without TTL. ``create_table`` enables TTL on it and ``check``
            verifies it; an entity field stored under it must be a number of epoch seconds
            ([`EpochSeconds`][lsiorm.EpochSeconds], or int).
        key_style: How the entities' key fields are written where neither the entity nor the
            field says: ``"printable"`` (the default: no control character in any key, text
            stored as it is where lsiorm can prove it exact and escaped as ``%XX`` elsewhere),
            ``"readable"`` (the default before printable keys: text ended with U+0000 where
            unproved), ``"exact"`` (the encoding of lsiorm 0.2's development versions) or
            ``"plain"`` (the values as other tools write them). A table an earlier version
            wrote names the style it was written with. See docs/encoding.md.
        rekeying_from: The key style the entities' items may still carry, while they are
            re-keyed to the declared one (``"readable"`` or ``"exact"`` when moving a table a
            0.2 development version wrote to printable keys): reads look for both forms and
            every write moves an item to the new one. See docs/migrations.md.
        warm_throughput: The read and write units per second the table serves at once
            (DynamoDB only raises it).
        on_demand_throughput: The most request units an on-demand table may consume.
        point_in_time_recovery: Point-in-time recovery on (True) or off (False).
        recovery_period_days: How many days point-in-time recovery keeps (1 to 35).
        deletion_protection: Whether the table refuses DeleteTable.
        stream: The DynamoDB stream's view type (``"NEW_AND_OLD_IMAGES"``, ...), or False for
            no stream.
        tags: The table's tags (``aws:`` tags, AWS's own, are left alone).
        resource_policy: The table's resource-based policy, as JSON text or a mapping.
    """

    def __init__(
        self,
        name: str,
        partition_key: KeyAttribute | str,
        sort_key: KeyAttribute | str | None = None,
        *,
        local_indexes: Sequence[LocalIndex] = (),
        global_indexes: Sequence[GlobalIndex] = (),
        billing_mode: BillingMode = "PAY_PER_REQUEST",
        read_capacity: int | None = None,
        write_capacity: int | None = None,
        type_attribute: str = "_type",
        collection_warning_gb: float = 8.0,
        ttl_attribute: str | None = None,
        key_style: KeyStyle = "printable",
        rekeying_from: KeyStyle | None = None,
        warm_throughput: WarmThroughput | None = None,
        on_demand_throughput: OnDemandThroughput | None = None,
        point_in_time_recovery: bool | None = None,
        recovery_period_days: int | None = None,
        deletion_protection: bool | None = None,
        stream: StreamViewType | Literal[False] | None = None,
        tags: Mapping[str, str] | None = None,
        resource_policy: str | Mapping[str, Any] | None = None,
    ) -> None:
        settings = TableSettings(
            warm_throughput,
            on_demand_throughput,
            point_in_time_recovery,
            recovery_period_days,
            deletion_protection,
            stream,
            None if tags is None else tuple(sorted(dict(tags).items())),
            policy_text(resource_policy),
        )
        spec = TableSpec(
            name,
            _key(partition_key),
            _key(sort_key) if sort_key is not None else None,
            tuple(local_indexes),
            tuple(global_indexes),
            billing_mode,
            read_capacity,
            write_capacity,
            type_attribute,
            collection_warning_gb,
            ttl_attribute,
            key_style,
            rekeying_from,
            settings,
        )
        check_table(spec)
        # The declaration is fixed once checked: the attributes below only read it.
        self._spec = spec
        #: The entity classes bound to the table, by type name (filled as they are declared).
        self.entities: dict[str, type] = {}

    @classmethod
    def with_reserved_lsi_slots(
        cls,
        name: str,
        partition_key: KeyAttribute | str,
        sort_key: KeyAttribute | str,
        **kwargs: Any,
    ) -> Table:
        """Declare a table with all five local index slots reserved, LSI1..LSI5 on LSI1SK..LSI5SK.

        Every slot's sort key is a string; odd slots project ALL and even slots KEYS_ONLY. All
        other keyword arguments go to the constructor, except ``local_indexes``: the slots use
        all five LSIs DynamoDB allows.
        """
        if "local_indexes" in kwargs:
            raise DeclarationError(
                "lsi.max-five",
                f"Table {name!r} reserves all {_RESERVED_LSI_SLOTS} local secondary index slots, "
                "so it cannot declare further local indexes.",
            )
        slots = tuple(
            LocalIndex(
                f"LSI{n}",
                KeyAttribute(f"LSI{n}SK", "S"),
                Projection.all() if n % 2 else Projection.keys_only(),
            )
            for n in range(1, _RESERVED_LSI_SLOTS + 1)
        )
        return cls(name, partition_key, sort_key, local_indexes=slots, **kwargs)

    def __repr__(self) -> str:
        return (
            f"Table({self.name!r}, {self.partition_key!r}, {self.sort_key!r}, "
            f"local_indexes={[i.name for i in self.local_indexes]!r}, "
            f"global_indexes={[i.name for i in self.global_indexes]!r})"
        )

    # The declaration as checked: each of these reads it, and none can be set.
    name = _Declared[str]()
    partition_key = _Declared[KeyAttribute]()
    sort_key = _Declared[KeyAttribute | None]()
    local_indexes = _Declared[tuple[LocalIndex, ...]]()
    global_indexes = _Declared[tuple[GlobalIndex, ...]]()
    billing_mode = _Declared[BillingMode]()
    read_capacity = _Declared[int | None]()
    write_capacity = _Declared[int | None]()
    type_attribute = _Declared[str]()
    collection_warning_gb = _Declared[float]()
    ttl_attribute = _Declared[str | None]()
    key_style = _Declared[KeyStyle]()
    rekeying_from = _Declared[KeyStyle | None]()
    settings = _Declared[TableSettings]()

    @property
    def has_lsi(self) -> bool:
        """Whether the table has a local secondary index (and so a 10 GB item collection limit)."""
        return bool(self.local_indexes)

    def index(self, name: str) -> LocalIndex | GlobalIndex:
        """Return the index declared under ``name``.

        Raises ValidationError (rule ``index.unknown``) naming the known indexes.
        """
        for index in self._spec.secondary_indexes():
            if index.name == name:
                return index
        known = ", ".join(repr(i.name) for i in self._spec.secondary_indexes()) or "none"
        raise ValidationError(
            "index.unknown",
            f"Table {self.name!r} has no index named {name!r}; its indexes are: {known}.",
            table=self.name,
        )

    @property
    def key_attributes(self) -> dict[str, KeyType]:
        """Map every key attribute of the table and its indexes to its type."""
        return self._spec.key_attributes

    def index_key_attributes(
        self, index: LocalIndex | GlobalIndex | None
    ) -> tuple[str, str | None]:
        """Return the partition and sort key attribute names of the table (None) or an index."""
        return self._spec.index_key_attributes(index)

    def key_schema(self, index: LocalIndex | GlobalIndex | None) -> tuple[tuple[str, str], ...]:
        """Return the key attributes of the table (None) or an index, in order, each with its
        role: ``"HASH"`` (partition) or ``"RANGE"`` (sort)."""
        return self._spec.key_schema(index)

    def index_key_names(self, index: LocalIndex | GlobalIndex | None) -> tuple[str, ...]:
        """Return the key attribute names of the table (None) or an index, in key schema order."""
        return self._spec.index_key_names(index)

    @property
    def multi_key_attributes(self) -> frozenset[str]:
        """The key attributes of the multi-attribute indexes, which entities bind to fields."""
        return self._spec.multi_key_attributes

    def projected_attributes(self, index: LocalIndex | GlobalIndex) -> frozenset[str] | None:
        """Return the attributes an index holds, or None when it projects ALL of them."""
        return self._spec.projected_attributes(index)

    def create_table_request(self) -> dict[str, Any]:
        """Return the CreateTable parameters for botocore's low-level client."""
        request: dict[str, Any] = {
            "TableName": self.name,
            "KeySchema": _key_schema(self.key_schema(None)),
            "AttributeDefinitions": [
                {"AttributeName": name, "AttributeType": type_}
                for name, type_ in sorted(self.key_attributes.items())
            ],
            "BillingMode": self.billing_mode,
        }
        if self.billing_mode == "PROVISIONED":
            request["ProvisionedThroughput"] = _throughput(self.read_capacity, self.write_capacity)
        request.update(creation_parts(self.settings))
        if self.local_indexes:
            request["LocalSecondaryIndexes"] = [
                {
                    "IndexName": index.name,
                    "KeySchema": _key_schema(self.key_schema(index)),
                    "Projection": _projection_request(index.projection),
                }
                for index in self.local_indexes
            ]
        if self.global_indexes:
            gsis: list[dict[str, Any]] = []
            for index in self.global_indexes:
                gsi: dict[str, Any] = {
                    "IndexName": index.name,
                    "KeySchema": _key_schema(self.key_schema(index)),
                    "Projection": _projection_request(index.projection),
                }
                if self.billing_mode == "PROVISIONED":
                    gsi["ProvisionedThroughput"] = _throughput(
                        index.read_capacity, index.write_capacity
                    )
                if index.on_demand_throughput is not None:
                    on_demand = index.on_demand_throughput.request()
                    if on_demand:
                        gsi["OnDemandThroughput"] = on_demand
                if index.warm_throughput is not None:
                    gsi["WarmThroughput"] = index.warm_throughput.request()
                gsis.append(gsi)
            request["GlobalSecondaryIndexes"] = gsis
        return request

    def update_ttl_request(self) -> dict[str, Any]:
        """Return the UpdateTimeToLive parameters that enable TTL on `ttl_attribute`.

        Raises ValidationError (rule ``table.no-ttl-attribute``) for a table without one.
        """
        if self.ttl_attribute is None:
            raise ValidationError(
                "table.no-ttl-attribute",
                f"Table {self.name!r} declares no ttl_attribute, so there is no TTL to enable.",
                table=self.name,
            )
        return {
            "TableName": self.name,
            "TimeToLiveSpecification": {"Enabled": True, "AttributeName": self.ttl_attribute},
        }

    def ttl_needs_enabling(self, describe_ttl: Mapping[str, Any]) -> bool:
        """Whether TTL should be enabled, given a DescribeTimeToLive response.

        True only when the table declares a ttl_attribute and TTL is disabled; TTL that is on
        (or being switched on or off), on this attribute or another, is left to ``check``.
        """
        status, _ = live_ttl(describe_ttl)
        return self.ttl_attribute is not None and status == "DISABLED"

    def check(
        self,
        describe_table: Mapping[str, Any],
        describe_ttl: Mapping[str, Any] | None = None,
        live_settings: LiveSettings | None = None,
    ) -> DriftReport:
        """Compare the declaration with a DescribeTable response (or its inner ``Table``).

        With a DescribeTimeToLive response (or its inner ``TimeToLiveDescription``), the time
        to live setting is compared too. ``live_settings`` holds what other reads said
        (continuous backups, tags, the resource policy); a setting it lacks is not compared.
        """
        inner = describe_table.get("Table")
        live: Mapping[str, Any] = inner if isinstance(inner, Mapping) else describe_table
        drifts = list(table_drifts(self._spec, live))
        if describe_ttl is not None:
            drifts.extend(ttl_drifts(self._spec, describe_ttl))
        extra = live_settings or LiveSettings()
        drifts.extend(Drift(d.kind, d.index, d.message) for d in self._setting_drifts(live, extra))
        return DriftReport(self.name, tuple(drifts), unchecked=extra.unchecked)

    def _setting_drifts(self, live: Mapping[str, Any], extra: LiveSettings) -> Iterator[Any]:
        yield from settings_drifts(self.settings, self.name, live, extra)
        described = {d.get("IndexName"): d for d in live.get("GlobalSecondaryIndexes") or ()}
        for index in self.global_indexes:
            found = described.get(index.name)
            if found is not None:
                yield from index_drifts(
                    self.name,
                    index.name,
                    index.warm_throughput,
                    index.on_demand_throughput,
                    found,
                )


def renamed_table(table: Table, name: str) -> Table:
    """Return a copy of a declaration under another name: a deployment's name for the table.

    The copy shares the declaration's entities, and the name is not checked again: the live
    name is whatever the session resolved the declared one to.
    """
    if table.name == name:
        return table
    twin = copy.copy(table)
    twin._spec = dataclasses.replace(table._spec, name=name)
    return twin


def _key(key: KeyAttribute | str) -> KeyAttribute:
    return KeyAttribute(key) if isinstance(key, str) else key


def _key_schema(schema: tuple[tuple[str, str], ...]) -> list[dict[str, str]]:
    return [{"AttributeName": name, "KeyType": role} for name, role in schema]


def _throughput(read: int | None, write: int | None) -> dict[str, int]:
    # Table.__init__ has already refused PROVISIONED without both capacities.
    assert read is not None
    assert write is not None
    return {"ReadCapacityUnits": read, "WriteCapacityUnits": write}


def _projection_request(projection: Projection) -> dict[str, Any]:
    request: dict[str, Any] = {"ProjectionType": projection.type}
    if projection.type == "INCLUDE":
        request["NonKeyAttributes"] = list(projection.attributes)
    return request
