"""The declaration rules a table is checked against when it is constructed."""

from __future__ import annotations

import re
from typing import NoReturn, get_args

from lsiorm._model.indexes import (
    BillingMode,
    GlobalIndex,
    KeyAttribute,
    KeyType,
    LocalIndex,
    ProjectionType,
    SecondaryIndex,
    kind_of,
)
from lsiorm._model.key_styles import checked_style
from lsiorm._model.table_settings import check_index_settings, check_settings
from lsiorm._model.table_spec import TableSpec
from lsiorm.errors import DeclarationError

_KEY_TYPES: frozenset[str] = frozenset(get_args(KeyType))
_PROJECTION_TYPES: frozenset[str] = frozenset(get_args(ProjectionType))
_BILLING_MODES: frozenset[str] = frozenset(get_args(BillingMode))


_NAME = re.compile(r"[A-Za-z0-9_.\-]{3,255}")
_MAX_LSI = 5
_MAX_GSI = 20
# DynamoDB counts NonKeyAttributes across all secondary indexes of a table, repeats included.
_MAX_NON_KEY_ATTRIBUTES = 100
_MAX_ATTRIBUTE_NAME_BYTES = 255
# A multi-attribute GSI key has one to four partition and up to four sort attributes.
_MAX_KEY_ATTRIBUTES = 4
# The item collection limit of a table with LSIs; the warning threshold must sit below it.
_COLLECTION_LIMIT_GB = 10.0


def check_table(table: TableSpec) -> None:
    """Raise DeclarationError for the first rule the declaration breaks, in a fixed order."""
    _Rules(table).check()


class _Rules:
    """The declaration rules of one table, checked in a fixed order."""

    def __init__(self, table: TableSpec) -> None:
        self.t = table

    def check(self) -> None:
        self._table()
        self._counts()
        self._index_names()
        for lsi in self.t.local_indexes:
            self._lsi(lsi)
        for gsi in self.t.global_indexes:
            self._gsi(gsi)
        self._multi_key_shared()
        self._attribute_types()
        self._capacity()
        self._ttl()
        self._settings()
        checked_style(self.t.key_style, f"Table {self.t.name!r}")
        if self.t.rekeying_from is not None:
            checked_style(self.t.rekeying_from, f"Table {self.t.name!r} (rekeying_from)")

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
        self._key_schema(t.partition_key, t.sort_key, f"table {t.name!r}", f"Table {t.name!r}")
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

    def _key_schema(
        self, partition: KeyAttribute, sort: KeyAttribute | None, of: str, subject: str
    ) -> None:
        """Check the key attributes of a table or an index, and that they are two."""
        self._key_attribute(partition, f"partition key of {of}")
        if sort is None:
            return
        self._key_attribute(sort, f"sort key of {of}")
        if sort.name == partition.name:
            self._fail(
                "key.same-attribute",
                f"{subject} uses {partition.name!r} as both partition key and sort key; they "
                "must be different attributes.",
            )

    def _key_attribute(self, key: KeyAttribute, role: str) -> None:
        if not isinstance(key, KeyAttribute):
            self._fail(
                "key.name",
                f"The {role} is {key!r}; give a KeyAttribute or an attribute name (str).",
            )
        if (
            not isinstance(key.name, str)
            or not key.name
            or len(key.name.encode()) > _MAX_ATTRIBUTE_NAME_BYTES
        ):
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
        non_key = sum(len(i.projection.attributes) for i in t.secondary_indexes())
        if non_key > _MAX_NON_KEY_ATTRIBUTES:
            self._fail(
                "projection.max-attributes",
                f"Table {t.name!r} projects {non_key} non-key attributes across its indexes; "
                f"DynamoDB allows at most {_MAX_NON_KEY_ATTRIBUTES} in total.",
            )

    def _index_names(self) -> None:
        seen: set[str] = set()
        for index in self.t.secondary_indexes():
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
        if not isinstance(lsi.sort_key, KeyAttribute):
            self._fail(
                "lsi.multi-attribute-key",
                f"Local secondary index {lsi.name!r} on table {t.name!r} gives sort key "
                f"{lsi.sort_key!r}; a local index has one sort key attribute (multi-attribute "
                "keys are for global indexes), so give one KeyAttribute.",
            )
        self._key_attribute(lsi.sort_key, f"sort key of local index {lsi.name!r}")
        table_keys = set(t.index_key_attributes(None))
        if lsi.sort_key.name in table_keys:
            self._fail(
                "lsi.sort-key-is-table-key",
                f"Local secondary index {lsi.name!r} on table {t.name!r} uses "
                f"{lsi.sort_key.name!r} as its sort key, which is already a key of the table; "
                "an LSI needs a different attribute to sort on.",
            )
        self._projection(lsi)

    def _gsi(self, gsi: GlobalIndex) -> None:
        if gsi.multi_attribute:
            self._multi_key(gsi)
        else:
            self._key_schema(
                gsi.partition_attributes[0],
                gsi.sort_attributes[0] if gsi.sort_attributes else None,
                f"global index {gsi.name!r}",
                f"Global secondary index {gsi.name!r}",
            )
        self._projection(gsi)

    def _multi_key(self, gsi: GlobalIndex) -> None:
        """Check a multi-attribute key: 1 to 4 attributes per key, each used once."""
        where = f"Global secondary index {gsi.name!r} on table {self.t.name!r}"
        for role, attributes, least in (
            ("partition", gsi.partition_attributes, 1),
            ("sort", gsi.sort_attributes, 0),
        ):
            if not least <= len(attributes) <= _MAX_KEY_ATTRIBUTES:
                self._fail(
                    "table.gsi-key-attributes",
                    f"{where} declares {len(attributes)} {role} key attributes; a multi-attribute "
                    f"key has {least or 1} to {_MAX_KEY_ATTRIBUTES}.",
                )
            for attribute in attributes:
                self._key_attribute(attribute, f"{role} key of global index {gsi.name!r}")
        names = [a.name for a in (*gsi.partition_attributes, *gsi.sort_attributes)]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            self._fail(
                "key.same-attribute",
                f"{where} uses {', '.join(map(repr, repeated))} more than once in its key; each "
                "key attribute of an index must be a different attribute.",
            )

    def _multi_key_shared(self) -> None:
        """Refuse an attribute that is both a multi-attribute key and a key derived from a template.

        A multi-attribute index key holds one field's value as it is; a table, LSI or single-key
        GSI attribute holds the text or value an entity's key template derives. One attribute
        cannot be both.
        """
        t = self.t
        derived: dict[str, str] = {}
        for name in t.index_key_names(None):
            derived.setdefault(name, f"a key of table {t.name!r}")
        for index in t.secondary_indexes():
            if not (isinstance(index, GlobalIndex) and index.multi_attribute):
                for name in t.index_key_names(index):
                    derived.setdefault(name, f"a key of {kind_of(index)} index {index.name!r}")
        for gsi in t.global_indexes:
            if not gsi.multi_attribute:
                continue
            for name in t.index_key_names(gsi):
                if name == t.type_attribute:
                    self._fail(
                        "table.multi-key-shared-attribute",
                        f"Global secondary index {gsi.name!r} on table {t.name!r} has "
                        f"multi-attribute key attribute {name!r}, the table's type attribute, "
                        "which lsiorm writes itself and no field can be bound to; give the "
                        "index another attribute.",
                    )
                if name in derived:
                    self._fail(
                        "table.multi-key-shared-attribute",
                        f"Global secondary index {gsi.name!r} on table {t.name!r} has "
                        f"multi-attribute key attribute {name!r}, which is also {derived[name]}; "
                        "a multi-attribute key holds a field's own value while that key is "
                        "derived from a template, so give the index another attribute.",
                    )

    def _projection(self, index: SecondaryIndex) -> None:
        projection = index.projection
        where = f"{kind_of(index)} index {index.name!r} on table {self.t.name!r}"
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
        for attribute in self.t.key_attribute_uses():
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

    def _settings(self) -> None:
        t = self.t
        broken = list(check_settings(t.settings, t.name, t.billing_mode))
        for gsi in t.global_indexes:
            broken.extend(
                check_index_settings(
                    gsi.name, gsi.warm_throughput, gsi.on_demand_throughput, t.billing_mode
                )
            )
        if broken:
            rule, _, message = broken[0].partition(": ")
            self._fail(rule, message)

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
