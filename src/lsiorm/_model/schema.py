"""Table and index declarations: their rules, their CreateTable request, and drift checks."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, NoReturn, TypeAlias, get_args

from lsiorm.errors import DeclarationError, ValidationError

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

KeyType = Literal["S", "N", "B"]
ProjectionType = Literal["KEYS_ONLY", "INCLUDE", "ALL"]
BillingMode = Literal["PAY_PER_REQUEST", "PROVISIONED"]

_KEY_TYPES: frozenset[str] = frozenset(get_args(KeyType))
_PROJECTION_TYPES: frozenset[str] = frozenset(get_args(ProjectionType))
_BILLING_MODES: frozenset[str] = frozenset(get_args(BillingMode))
_TYPE_WORDS = {"S": "string", "N": "number", "B": "binary"}
_NAME = re.compile(r"[A-Za-z0-9_.\-]{3,255}")
_MAX_LSI = 5
_MAX_GSI = 20
# DynamoDB counts NonKeyAttributes across all secondary indexes of a table, repeats included.
_MAX_NON_KEY_ATTRIBUTES = 100
_MAX_ATTRIBUTE_NAME_BYTES = 255
# The item collection limit of a table with LSIs; the warning threshold must sit below it.
_COLLECTION_LIMIT_GB = 10.0
_RESERVED_LSI_SLOTS = 5


@dataclass(frozen=True)
class KeyAttribute:
    """An attribute used in a key schema, with its scalar DynamoDB type.

    Args:
        name: The attribute name, as stored in items.
        type: ``"S"`` (string, the default), ``"N"`` (number) or ``"B"`` (binary).
    """

    name: str
    type: KeyType = "S"


@dataclass(frozen=True)
class Projection:
    """Which attributes DynamoDB copies into a secondary index.

    Build one with :meth:`keys_only`, :meth:`include` or :meth:`all` (the default). The choice
    is fixed when the table is created.

    Args:
        type: ``"KEYS_ONLY"``, ``"INCLUDE"`` or ``"ALL"``.
        attributes: The non-key attributes an ``INCLUDE`` projection copies.
    """

    type: ProjectionType = "ALL"
    attributes: tuple[str, ...] = ()

    @classmethod
    def keys_only(cls) -> Projection:
        """Project only the table and index keys."""
        return cls("KEYS_ONLY")

    @classmethod
    def include(cls, *attributes: str) -> Projection:
        """Project the keys plus these non-key attributes (repeats are dropped, order kept)."""
        return cls("INCLUDE", tuple(dict.fromkeys(attributes)))

    @classmethod
    def all(cls) -> Projection:
        """Project every attribute of the item."""
        return cls("ALL")

    def _describe(self) -> str:
        if self.type == "INCLUDE":
            return f"INCLUDE ({', '.join(sorted(self.attributes))})"
        return self.type


@dataclass(frozen=True)
class LocalIndex:
    """A local secondary index: the table's partition key with another sort key.

    Local indexes exist only if declared when the table is created (at most five), share the
    table's partition key and its 10 GB item collection limit, and allow consistent reads.

    Args:
        name: The index name (3 to 255 characters of ``A-Za-z0-9_.-``).
        sort_key: The index sort key attribute; items without it are not in the index.
        projection: The attributes copied into the index (``Projection.all()`` by default).
    """

    name: str
    sort_key: KeyAttribute
    projection: Projection = Projection()


@dataclass(frozen=True)
class GlobalIndex:
    """A global secondary index: its own partition key and, optionally, sort key.

    Args:
        name: The index name (3 to 255 characters of ``A-Za-z0-9_.-``).
        partition_key: The index partition key attribute.
        sort_key: The index sort key attribute, or None for a partition-key-only index.
        projection: The attributes copied into the index (``Projection.all()`` by default).
        read_capacity: Read capacity units, required only on a ``PROVISIONED`` table.
        write_capacity: Write capacity units, required only on a ``PROVISIONED`` table.
    """

    name: str
    partition_key: KeyAttribute
    sort_key: KeyAttribute | None = None
    projection: Projection = Projection()
    read_capacity: int | None = None
    write_capacity: int | None = None


@dataclass(frozen=True)
class Drift:
    """One way the live table differs from its declaration; ``index`` is None for the table."""

    kind: str
    index: str | None
    message: str


@dataclass(frozen=True)
class DriftReport:
    """Every difference found between a table's declaration and DescribeTable output."""

    table: str
    drifts: tuple[Drift, ...]

    @property
    def ok(self) -> bool:
        """Whether the live table matches its declaration."""
        return not self.drifts

    def __str__(self) -> str:
        if self.ok:
            return f"Table {self.table!r} matches its declaration."
        return "\n".join(drift.message for drift in self.drifts)


_Index: TypeAlias = "LocalIndex | GlobalIndex"


class Table:
    """A DynamoDB table declaration, checked against DynamoDB's rules when constructed.

    Args:
        name: The table name (3 to 255 characters of ``A-Za-z0-9_.-``).
        partition_key: The partition key attribute; a ``str`` means a string attribute.
        sort_key: The sort key attribute, or None for a table without one.
        local_indexes: Up to five :class:`LocalIndex` declarations.
        global_indexes: Up to twenty :class:`GlobalIndex` declarations.
        billing_mode: ``"PAY_PER_REQUEST"`` (the default) or ``"PROVISIONED"``.
        read_capacity: Read capacity units, required only when ``PROVISIONED``.
        write_capacity: Write capacity units, required only when ``PROVISIONED``.
        type_attribute: The attribute that stores each item's entity type (``"_type"``).
        collection_warning_gb: The item collection size at which writes to a table with local
            indexes start warning (DynamoDB refuses them at 10 GB); 8 GB by default.
        ttl_attribute: The stored attribute that DynamoDB's time to live reads, or None (the
            default) for a table without TTL. ``create_table`` enables TTL on it and ``check``
            verifies it; an entity field stored under it must be a number of epoch seconds
            (:data:`EpochSeconds`, or int).
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
    ) -> None:
        self.name = name
        self.partition_key = _key(partition_key)
        self.sort_key = _key(sort_key) if sort_key is not None else None
        self.local_indexes: tuple[LocalIndex, ...] = tuple(local_indexes)
        self.global_indexes: tuple[GlobalIndex, ...] = tuple(global_indexes)
        self.billing_mode: BillingMode = billing_mode
        self.read_capacity = read_capacity
        self.write_capacity = write_capacity
        self.type_attribute = type_attribute
        self.collection_warning_gb = collection_warning_gb
        self.ttl_attribute = ttl_attribute
        self.entities: dict[str, type] = {}
        _Rules(self).check()

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

    @property
    def has_lsi(self) -> bool:
        """Whether the table has a local secondary index (and so a 10 GB item collection limit)."""
        return bool(self.local_indexes)

    def index(self, name: str) -> LocalIndex | GlobalIndex:
        """Return the index declared under ``name``.

        Raises ValidationError (rule ``index.unknown``) naming the known indexes.
        """
        for index in self._indexes():
            if index.name == name:
                return index
        known = ", ".join(repr(i.name) for i in self._indexes()) or "none"
        raise ValidationError(
            "index.unknown",
            f"Table {self.name!r} has no index named {name!r}; its indexes are: {known}.",
            table=self.name,
        )

    @property
    def key_attributes(self) -> dict[str, KeyType]:
        """Map every key attribute of the table and its indexes to its type."""
        return {attribute.name: attribute.type for attribute in self._key_attribute_uses()}

    def index_key_attributes(
        self, index: LocalIndex | GlobalIndex | None
    ) -> tuple[str, str | None]:
        """Return the partition and sort key attribute names of the table (None) or an index."""
        if index is None:
            return self.partition_key.name, _name(self.sort_key)
        if isinstance(index, LocalIndex):
            return self.partition_key.name, index.sort_key.name
        return index.partition_key.name, _name(index.sort_key)

    def projected_attributes(self, index: LocalIndex | GlobalIndex) -> frozenset[str] | None:
        """Return the attributes an index holds, or None when it projects ALL of them."""
        if index.projection.type == "ALL":
            return None
        keys = (*self.index_key_attributes(None), *self.index_key_attributes(index))
        return frozenset(k for k in keys if k is not None) | frozenset(index.projection.attributes)

    def create_table_request(self) -> dict[str, Any]:
        """Return the CreateTable parameters for botocore's low-level client."""
        request: dict[str, Any] = {
            "TableName": self.name,
            "KeySchema": _key_schema(self.partition_key.name, _name(self.sort_key)),
            "AttributeDefinitions": [
                {"AttributeName": name, "AttributeType": type_}
                for name, type_ in sorted(self.key_attributes.items())
            ],
            "BillingMode": self.billing_mode,
        }
        if self.billing_mode == "PROVISIONED":
            request["ProvisionedThroughput"] = _throughput(self.read_capacity, self.write_capacity)
        if self.local_indexes:
            request["LocalSecondaryIndexes"] = [
                {
                    "IndexName": index.name,
                    "KeySchema": _key_schema(*self.index_key_attributes(index)),
                    "Projection": _projection_request(index.projection),
                }
                for index in self.local_indexes
            ]
        if self.global_indexes:
            gsis: list[dict[str, Any]] = []
            for index in self.global_indexes:
                gsi: dict[str, Any] = {
                    "IndexName": index.name,
                    "KeySchema": _key_schema(*self.index_key_attributes(index)),
                    "Projection": _projection_request(index.projection),
                }
                if self.billing_mode == "PROVISIONED":
                    gsi["ProvisionedThroughput"] = _throughput(
                        index.read_capacity, index.write_capacity
                    )
                gsis.append(gsi)
            request["GlobalSecondaryIndexes"] = gsis
        return request

    def update_ttl_request(self) -> dict[str, Any]:
        """Return the UpdateTimeToLive parameters that enable TTL on :attr:`ttl_attribute`.

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
        status, _ = _live_ttl(describe_ttl)
        return self.ttl_attribute is not None and status == "DISABLED"

    def check(
        self, describe_table: Mapping[str, Any], describe_ttl: Mapping[str, Any] | None = None
    ) -> DriftReport:
        """Compare the declaration with a DescribeTable response (or its inner ``Table``).

        With a DescribeTimeToLive response (or its inner ``TimeToLiveDescription``), the time
        to live setting is compared too.
        """
        inner = describe_table.get("Table")
        live: Mapping[str, Any] = inner if isinstance(inner, Mapping) else describe_table
        drifts = list(_DriftCheck(self, live).drifts())
        if describe_ttl is not None:
            drifts.extend(_ttl_drifts(self, describe_ttl))
        return DriftReport(self.name, tuple(drifts))

    def _indexes(self) -> Iterator[LocalIndex | GlobalIndex]:
        yield from self.local_indexes
        yield from self.global_indexes

    def _key_attribute_uses(self) -> Iterator[KeyAttribute]:
        yield self.partition_key
        if self.sort_key is not None:
            yield self.sort_key
        for lsi in self.local_indexes:
            yield lsi.sort_key
        for gsi in self.global_indexes:
            yield gsi.partition_key
            if gsi.sort_key is not None:
                yield gsi.sort_key


def _key(key: KeyAttribute | str) -> KeyAttribute:
    return KeyAttribute(key) if isinstance(key, str) else key


def _name(key: KeyAttribute | None) -> str | None:
    return key.name if key is not None else None


def _key_schema(partition: str, sort: str | None) -> list[dict[str, str]]:
    schema = [{"AttributeName": partition, "KeyType": "HASH"}]
    if sort is not None:
        schema.append({"AttributeName": sort, "KeyType": "RANGE"})
    return schema


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


def _kind_of(index: _Index) -> str:
    return "local" if isinstance(index, LocalIndex) else "global"


class _Rules:
    """The declaration rules of one table, checked in a fixed order."""

    def __init__(self, table: Table) -> None:
        self.t = table

    def check(self) -> None:
        self._table()
        self._counts()
        self._index_names()
        for lsi in self.t.local_indexes:
            self._lsi(lsi)
        for gsi in self.t.global_indexes:
            self._gsi(gsi)
        self._attribute_types()
        self._capacity()
        self._ttl()

    def _fail(self, rule: str, message: str) -> NoReturn:
        raise DeclarationError(rule, message)

    def _table(self) -> None:
        t = self.t
        if not isinstance(t.name, str) or not _NAME.fullmatch(t.name):
            self._fail(
                "table.name",
                f"Table name {t.name!r} is not valid; DynamoDB needs 3 to 255 characters "
                "from a-z, A-Z, 0-9, '_', '.' and '-'.",
            )
        self._key_attribute(t.partition_key, f"partition key of table {t.name!r}")
        if t.sort_key is not None:
            self._key_attribute(t.sort_key, f"sort key of table {t.name!r}")
            if t.sort_key.name == t.partition_key.name:
                self._fail(
                    "key.same-attribute",
                    f"Table {t.name!r} uses {t.partition_key.name!r} as both partition key and "
                    "sort key; they must be different attributes.",
                )
        if t.billing_mode not in _BILLING_MODES:
            self._fail(
                "table.billing-mode",
                f"Table {t.name!r} declares billing mode {t.billing_mode!r}; it must be "
                "'PAY_PER_REQUEST' or 'PROVISIONED'.",
            )
        if not t.type_attribute:
            self._fail(
                "table.type-attribute", f"Table {t.name!r} has an empty type attribute name."
            )
        if not 0 < t.collection_warning_gb < _COLLECTION_LIMIT_GB:
            self._fail(
                "table.collection-warning",
                f"Table {t.name!r} sets collection_warning_gb to {t.collection_warning_gb}; it "
                f"must be above 0 and below DynamoDB's {_COLLECTION_LIMIT_GB:g} GB item "
                "collection limit.",
            )

    def _key_attribute(self, key: KeyAttribute, role: str) -> None:
        if not key.name or len(key.name.encode()) > _MAX_ATTRIBUTE_NAME_BYTES:
            self._fail(
                "key.name",
                f"The {role} has name {key.name!r}; a key attribute name must be 1 to "
                f"{_MAX_ATTRIBUTE_NAME_BYTES} bytes long.",
            )
        if key.type not in _KEY_TYPES:
            self._fail(
                "key.scalar-type",
                f"The {role}, {key.name!r}, is declared with type {key.type!r}; a key attribute "
                "must be a string (S), number (N) or binary (B).",
            )

    def _counts(self) -> None:
        t = self.t
        if len(t.local_indexes) > _MAX_LSI:
            self._fail(
                "lsi.max-five",
                f"Table {t.name!r} declares {len(t.local_indexes)} local secondary indexes; "
                f"DynamoDB allows at most {_MAX_LSI}.",
            )
        if len(t.global_indexes) > _MAX_GSI:
            self._fail(
                "gsi.max-twenty",
                f"Table {t.name!r} declares {len(t.global_indexes)} global secondary indexes; "
                f"DynamoDB allows at most {_MAX_GSI}.",
            )
        if t.local_indexes and t.sort_key is None:
            self._fail(
                "lsi.needs-sort-key",
                f"Table {t.name!r} declares local secondary index {t.local_indexes[0].name!r} but "
                "has no sort key; only a table with a sort key can have local secondary indexes.",
            )
        non_key = sum(len(i.projection.attributes) for i in self.t._indexes())
        if non_key > _MAX_NON_KEY_ATTRIBUTES:
            self._fail(
                "projection.max-attributes",
                f"Table {t.name!r} projects {non_key} non-key attributes across its indexes; "
                f"DynamoDB allows at most {_MAX_NON_KEY_ATTRIBUTES} in total.",
            )

    def _index_names(self) -> None:
        seen: set[str] = set()
        for index in self.t._indexes():
            if not isinstance(index.name, str) or not _NAME.fullmatch(index.name):
                self._fail(
                    "index.name",
                    f"Index name {index.name!r} on table {self.t.name!r} is not valid; DynamoDB "
                    "needs 3 to 255 characters from a-z, A-Z, 0-9, '_', '.' and '-'.",
                )
            if index.name in seen:
                self._fail(
                    "index.duplicate-name",
                    f"Table {self.t.name!r} declares two indexes named {index.name!r}; index "
                    "names must be unique across local and global indexes.",
                )
            seen.add(index.name)

    def _lsi(self, lsi: LocalIndex) -> None:
        t = self.t
        self._key_attribute(lsi.sort_key, f"sort key of local index {lsi.name!r}")
        table_keys = {t.partition_key.name, _name(t.sort_key)}
        if lsi.sort_key.name in table_keys:
            self._fail(
                "lsi.sort-key-is-table-key",
                f"Local secondary index {lsi.name!r} on table {t.name!r} uses "
                f"{lsi.sort_key.name!r} as its sort key, which is already a key of the table; "
                "an LSI needs a different attribute to sort on.",
            )
        self._projection(lsi)

    def _gsi(self, gsi: GlobalIndex) -> None:
        self._key_attribute(gsi.partition_key, f"partition key of global index {gsi.name!r}")
        if gsi.sort_key is not None:
            self._key_attribute(gsi.sort_key, f"sort key of global index {gsi.name!r}")
            if gsi.sort_key.name == gsi.partition_key.name:
                self._fail(
                    "key.same-attribute",
                    f"Global secondary index {gsi.name!r} uses {gsi.partition_key.name!r} as both "
                    "partition key and sort key; they must be different attributes.",
                )
        self._projection(gsi)

    def _projection(self, index: _Index) -> None:
        projection = index.projection
        where = f"{_kind_of(index)} index {index.name!r} on table {self.t.name!r}"
        if projection.type not in _PROJECTION_TYPES:
            self._fail(
                "projection.type",
                f"The projection of {where} is {projection.type!r}; it must be KEYS_ONLY, "
                "INCLUDE or ALL.",
            )
        if projection.type == "INCLUDE" and not projection.attributes:
            self._fail(
                "projection.include-needs-attributes",
                f"The INCLUDE projection of {where} names no attributes; name at least one, "
                "or project KEYS_ONLY.",
            )
        if projection.type != "INCLUDE" and projection.attributes:
            self._fail(
                "projection.attributes-only-for-include",
                f"The {projection.type} projection of {where} lists attributes; only an "
                "INCLUDE projection takes attributes.",
            )

    def _attribute_types(self) -> None:
        declared: dict[str, KeyType] = {}
        for attribute in self.t._key_attribute_uses():
            earlier = declared.setdefault(attribute.name, attribute.type)
            if earlier != attribute.type:
                self._fail(
                    "attribute.conflicting-types",
                    f"Table {self.t.name!r} declares key attribute {attribute.name!r} both as "
                    f"{earlier} and as {attribute.type}; an attribute has one type in all key "
                    "schemas of a table.",
                )

    def _capacity(self) -> None:
        t = self.t
        owners: list[tuple[str, int | None, int | None]] = [
            (f"Table {t.name!r}", t.read_capacity, t.write_capacity)
        ]
        owners += [
            (f"Global index {g.name!r} on table {t.name!r}", g.read_capacity, g.write_capacity)
            for g in t.global_indexes
        ]
        for owner, read, write in owners:
            if t.billing_mode == "PAY_PER_REQUEST":
                if read is not None or write is not None:
                    self._fail(
                        "provisioned.capacity",
                        f"{owner} sets read or write capacity, but table {t.name!r} is billed "
                        "PAY_PER_REQUEST; capacities apply only to PROVISIONED tables.",
                    )
                continue
            for label, value in (("read", read), ("write", write)):
                if value is None:
                    self._fail(
                        "provisioned.capacity",
                        f"{owner} has no {label} capacity, but table {t.name!r} is "
                        "PROVISIONED; give both read and write capacity.",
                    )
                elif isinstance(value, bool) or not isinstance(value, int) or value < 1:
                    self._fail(
                        "provisioned.capacity",
                        f"{owner} sets {label} capacity to {value!r}; it must be a whole "
                        "number of at least 1.",
                    )

    def _ttl(self) -> None:
        t = self.t
        name = t.ttl_attribute
        if name is None:
            return
        if (
            not isinstance(name, str)
            or not name
            or len(name.encode("utf-8", "surrogatepass")) > _MAX_ATTRIBUTE_NAME_BYTES
        ):
            self._fail(
                "table.ttl-attribute",
                f"Table {t.name!r} sets ttl_attribute to {name!r}; it must be an attribute name "
                f"of 1 to {_MAX_ATTRIBUTE_NAME_BYTES} bytes.",
            )
        if name in t.key_attributes:
            self._fail(
                "table.ttl-attribute",
                f"Table {t.name!r} sets ttl_attribute to {name!r}, a key attribute of the table "
                "or an index; a key holds text or a key value, not an expiry time, so name "
                "another attribute.",
            )
        if name == t.type_attribute:
            self._fail(
                "table.ttl-attribute",
                f"Table {t.name!r} sets ttl_attribute to {name!r}, its type attribute; name "
                "another attribute.",
            )


class _DriftCheck:
    """Differences between one table's declaration and its live description."""

    def __init__(self, table: Table, live: Mapping[str, Any]) -> None:
        self.t = table
        self.live = live

    def drifts(self) -> Iterator[Drift]:
        yield from self._key_schema()
        yield from self._attribute_types()
        yield from self._indexes(self.t.local_indexes, "LocalSecondaryIndexes", "lsi")
        yield from self._indexes(self.t.global_indexes, "GlobalSecondaryIndexes", "gsi")
        yield from self._billing_mode()

    def _key_schema(self) -> Iterator[Drift]:
        declared = self.t.index_key_attributes(None)
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
        self, declared: Sequence[_Index], field: str, prefix: Literal["lsi", "gsi"]
    ) -> Iterator[Drift]:
        live = {d.get("IndexName"): d for d in self.live.get(field) or ()}
        for index in declared:
            found = live.get(index.name)
            if found is None:
                yield Drift(f"{prefix}-missing", index.name, self._missing(index))
                continue
            keys = _live_keys(found)
            want = self.t.index_key_attributes(index)
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
                    f"{index.projection._describe()}; a projection cannot be changed in place, "
                    f"so {self._rebuild(index)}",
                )
        names = {i.name for i in declared}
        for extra in sorted(str(n) for n in live if n not in names):
            yield Drift(f"{prefix}-extra", extra, self._extra(prefix, extra))

    def _where(self, index: _Index) -> str:
        return f"The {_kind_of(index)} secondary index {index.name!r} of table {self.t.name!r}"

    def _rebuild(self, index: _Index) -> str:
        if isinstance(index, LocalIndex):
            return "the table must be recreated and its data migrated."
        return "the index must be deleted and created again (UpdateTable can do both)."

    def _missing(self, index: _Index) -> str:
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


def _live_keys(described: Mapping[str, Any]) -> tuple[str | None, str | None]:
    keys = {k.get("KeyType"): k.get("AttributeName") for k in described.get("KeySchema") or ()}
    return keys.get("HASH"), keys.get("RANGE")


def _keys_text(keys: tuple[str | None, str | None]) -> str:
    partition, sort = keys
    text = f"partition key {partition!r}"
    return text + (f" and sort key {sort!r}" if sort is not None else " and no sort key")


def _type_text(type_: str) -> str:
    word = _TYPE_WORDS.get(type_)
    return f"{word} ({type_})" if word else repr(type_)


def _same_projection(declared: Projection, live: Mapping[str, Any]) -> bool:
    if live.get("ProjectionType") != declared.type:
        return False
    if declared.type != "INCLUDE":
        return True
    return set(live.get("NonKeyAttributes") or ()) == set(declared.attributes)


def _live_projection_text(live: Mapping[str, Any]) -> str:
    type_ = live.get("ProjectionType")
    if type_ == "INCLUDE":
        return f"INCLUDE ({', '.join(sorted(live.get('NonKeyAttributes') or ()))})"
    return str(type_)


def _live_ttl(describe_ttl: Mapping[str, Any]) -> tuple[str, str | None]:
    """Return the TTL status and attribute of a DescribeTimeToLive response (or its inner part)."""
    inner = describe_ttl.get("TimeToLiveDescription")
    live: Mapping[str, Any] = inner if isinstance(inner, Mapping) else describe_ttl
    status = live.get("TimeToLiveStatus") or "DISABLED"
    name = live.get("AttributeName")
    return str(status), name if isinstance(name, str) else None


_FIX_TTL: Final = (
    "Session.create_table(table, exists_ok=True) or `lsiorm create-table --exists-ok` enables it"
)


def _ttl_drifts(table: Table, describe_ttl: Mapping[str, Any]) -> Iterator[Drift]:
    status, live = _live_ttl(describe_ttl)
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
