"""Proof of the capacity model: a seeded corpus of writes and queries on DynamoDB Local.

For every case the model's prediction must equal, for the table and for each index, the
ConsumedCapacity that DynamoDB Local reports with ReturnConsumedCapacity=INDEXES. Only the
engine's own ConsumedCapacity is used as the expected value; a local mirror of the table gives
the model its inputs (the old and new item of a write, the items a query reads), and the
mirror itself is checked against the engine's ReturnValues and query counts.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import pytest

from lsiorm import KeyAttribute, LocalIndex, Projection, Session, Table
from lsiorm._model.capacity import (
    ReadEstimate,
    Select,
    WriteEstimate,
    estimate_query,
    estimate_write,
    needs_fetch,
)
from lsiorm._model.wire import WireItem, item_from_wire, item_size, number_to_wire
from lsiorm._ops.pipeline import call

SEED = 20260421
CASES = 220

Key = tuple[str, str]


def mixed_table(name: str) -> Table:
    """Five LSIs: every projection type, and string, number and binary sort keys."""
    return Table(
        name,
        "PK",
        "SK",
        local_indexes=[
            LocalIndex("ByAll", KeyAttribute("L1"), Projection.all()),
            LocalIndex("ByKeys", KeyAttribute("L2"), Projection.keys_only()),
            LocalIndex("ByInclude", KeyAttribute("L3"), Projection.include("tags", "n")),
            LocalIndex("ByNumber", KeyAttribute("L4", "N"), Projection.include("blob")),
            LocalIndex("ByBinary", KeyAttribute("L5", "B"), Projection.all()),
        ],
    )


def reserved_table(name: str) -> Table:
    """ADR-123's five reserved slots: LSI1..LSI5, ALL and KEYS_ONLY in turn."""
    return Table.with_reserved_lsi_slots(name, "PK", "SK")


LAYOUTS: dict[str, Callable[[str], Table]] = {"mixed": mixed_table, "reserved": reserved_table}


@dataclass
class Corpus:
    """Generates cases from one seeded random source and keeps the mirror of the table."""

    table: Table
    rng: random.Random
    mirror: dict[Key, WireItem] = field(default_factory=dict)
    partitions: tuple[str, ...] = ("p0", "p1", "P" * 700)

    # -- values ------------------------------------------------------------------------------

    def text(self) -> str:
        band = self.rng.choice([(0, 12), (1, 40), (100, 900), (1000, 2200), (3000, 6500)])
        size = self.rng.randint(*band)
        alphabet = "abcdefghij" if self.rng.random() < 0.8 else "aé€😀"
        return "".join(self.rng.choice(alphabet) for _ in range(size))

    def number(self) -> str:
        rng = self.rng
        digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 20)))
        point = rng.randint(0, len(digits))
        text = digits[:point] + ("." + digits[point:] if point < len(digits) else "")
        value = Decimal(text if text[0] != "." else "0" + text)
        if rng.random() < 0.3:
            value = value.scaleb(rng.randint(-30, 30))
        if rng.random() < 0.4:
            value = -value
        return number_to_wire(value)

    def value(self, depth: int = 0) -> dict[str, Any]:
        rng = self.rng
        kind = rng.choice(["S", "S", "N", "N", "B", "BOOL", "NULL", "L", "M", "SS", "NS", "BS"])
        if kind in ("L", "M") and depth > 1:
            kind = "S"
        if kind == "S":
            return {"S": self.text()}
        if kind == "N":
            return {"N": self.number()}
        if kind == "B":
            return {"B": rng.randbytes(rng.choice([0, 3, 50, 1500]))}
        if kind == "BOOL":
            return {"BOOL": rng.random() < 0.5}
        if kind == "NULL":
            return {"NULL": True}
        if kind == "L":
            return {"L": [self.value(depth + 1) for _ in range(rng.randint(0, 4))]}
        if kind == "M":
            names = {f"k{rng.randint(0, 99)}" for _ in range(rng.randint(0, 4))}
            return {"M": {n: self.value(depth + 1) for n in names}}
        if kind == "SS":
            return {"SS": sorted({f"s{rng.randint(0, 999)}" for _ in range(rng.randint(1, 4))})}
        if kind == "NS":
            return {"NS": sorted({self.number() for _ in range(rng.randint(1, 4))})}
        return {"BS": sorted({rng.randbytes(rng.randint(1, 9)) for _ in range(rng.randint(1, 3))})}

    def index_key(self, index: LocalIndex) -> dict[str, Any]:
        rng = self.rng
        if index.sort_key.type == "N":
            return {"N": str(rng.randint(-500, 500))}
        if index.sort_key.type == "B":
            return {"B": bytes([rng.randint(0, 5)]) + rng.randbytes(rng.randint(0, 30))}
        size = rng.choice([1, 4, 20, 300, 900])
        return {"S": "".join(rng.choice("abcdef") for _ in range(size))}

    def attributes(self) -> dict[str, dict[str, Any]]:
        rng = self.rng
        out: dict[str, dict[str, Any]] = {}
        for index in self.table.local_indexes:
            if rng.random() < 0.6:
                out[index.sort_key.name] = self.index_key(index)
        for name in ("tags", "n", "blob", "body", "meta", "x1", "x2"):
            if rng.random() < 0.45:
                out[name] = self.value()
        return out

    # -- keys --------------------------------------------------------------------------------

    def key(self, *, existing: bool) -> Key:
        if existing and self.mirror:
            return self.rng.choice(sorted(self.mirror))
        return (self.rng.choice(self.partitions), f"s{self.rng.randint(0, 14):02d}")

    @staticmethod
    def wire_key(key: Key) -> WireItem:
        return {"PK": {"S": key[0]}, "SK": {"S": key[1]}}


def same(a: WireItem | None, b: WireItem | None) -> bool:
    if a is None or b is None:
        return a is b
    return item_from_wire(a) == item_from_wire(b)


@dataclass
class Runner:
    """Sends each case through lsiorm's core and checks the model against the engine."""

    session: Session
    corpus: Corpus
    checked: dict[str, int] = field(default_factory=dict)

    @property
    def table(self) -> Table:
        return self.corpus.table

    def send(self, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        params = {"ReturnConsumedCapacity": "INDEXES", **params}
        response: dict[str, Any] = self.session.run(
            call(self.session.ctx, operation, params, (self.table,))
        )
        return response

    def expect(self, label: str, model: Any, consumed: dict[str, Any], note: str) -> None:
        reported = type(model).from_consumed(consumed)
        assert model == reported, f"{label}: model {model} != DynamoDB Local {reported} ({note})"
        self.checked[label] = self.checked.get(label, 0) + 1

    # -- writes ------------------------------------------------------------------------------

    def put(self) -> None:
        c = self.corpus
        key = c.key(existing=c.rng.random() < 0.5)
        new = {**c.wire_key(key), **c.attributes()}
        old = c.mirror.get(key)
        transactional = c.rng.random() < 0.15
        if transactional:
            response = self.send(
                "TransactWriteItems",
                {"TransactItems": [{"Put": {"TableName": self.table.name, "Item": new}}]},
            )
            consumed = response["ConsumedCapacity"][0]
        else:
            response = self.send(
                "PutItem", {"TableName": self.table.name, "Item": new, "ReturnValues": "ALL_OLD"}
            )
            assert same(response.get("Attributes"), old), "mirror drifted from the engine"
            consumed = response["ConsumedCapacity"]
        c.mirror[key] = new
        model = estimate_write(self.table, old, new, transactional=transactional)
        label = "transact-put" if transactional else ("overwrite" if old else "put")
        self.expect(label, model, consumed, f"{item_size(new)} bytes over {old and item_size(old)}")

    def update(self) -> None:
        c = self.corpus
        key = c.key(existing=c.rng.random() < 0.85)
        old = c.mirror.get(key)
        changes = c.attributes()
        removable = sorted(set(old or {}) - {"PK", "SK"} - set(changes))
        removes = c.rng.sample(removable, k=c.rng.randint(0, min(3, len(removable))))
        if not changes and not removes:
            changes = {"x1": c.value()}
        names = {f"#a{i}": n for i, n in enumerate([*changes, *removes])}
        by_name = {n: p for p, n in names.items()}
        values = {f":v{i}": v for i, v in enumerate(changes.values())}
        clauses = []
        if changes:
            sets = [f"{by_name[n]} = :v{i}" for i, n in enumerate(changes)]
            clauses.append("SET " + ", ".join(sets))
        if removes:
            clauses.append("REMOVE " + ", ".join(by_name[n] for n in removes))
        params: dict[str, Any] = {
            "TableName": self.table.name,
            "Key": c.wire_key(key),
            "UpdateExpression": " ".join(clauses),
            "ExpressionAttributeNames": names,
            "ReturnValues": "ALL_NEW",
        }
        if values:
            params["ExpressionAttributeValues"] = values
        response = self.send("UpdateItem", params)
        new = {**(old or c.wire_key(key)), **changes}
        for name in removes:
            del new[name]
        assert same(response.get("Attributes"), new), "mirror drifted from the engine"
        c.mirror[key] = new
        model = estimate_write(self.table, old, new)
        self.expect("update" if old else "upsert", model, response["ConsumedCapacity"], "update")

    def delete(self) -> None:
        c = self.corpus
        key = c.key(existing=c.rng.random() < 0.85)
        old = c.mirror.pop(key, None)
        transactional = old is not None and c.rng.random() < 0.2
        wire_key = c.wire_key(key)
        if transactional:
            action = {"Delete": {"TableName": self.table.name, "Key": wire_key}}
            response = self.send("TransactWriteItems", {"TransactItems": [action]})
            consumed = response["ConsumedCapacity"][0]
        else:
            params = {"TableName": self.table.name, "Key": wire_key, "ReturnValues": "ALL_OLD"}
            response = self.send("DeleteItem", params)
            assert same(response.get("Attributes"), old), "mirror drifted from the engine"
            consumed = response["ConsumedCapacity"]
        model = estimate_write(self.table, old, None, transactional=transactional)
        label = "transact-delete" if transactional else ("delete" if old else "delete-missing")
        self.expect(label, model, consumed, "delete")

    def batch(self) -> None:
        c = self.corpus
        keys = sorted({c.key(existing=c.rng.random() < 0.5) for _ in range(c.rng.randint(2, 4))})
        writes: list[dict[str, Any]] = []
        model = WriteEstimate(self.table.name, 0.0)
        for key in keys:
            old = c.mirror.get(key)
            if old is not None and c.rng.random() < 0.4:
                writes.append({"DeleteRequest": {"Key": c.wire_key(key)}})
                del c.mirror[key]
                model = model + estimate_write(self.table, old, None)
            else:
                new = {**c.wire_key(key), **c.attributes()}
                writes.append({"PutRequest": {"Item": new}})
                c.mirror[key] = new
                model = model + estimate_write(self.table, old, new)
        response = self.send("BatchWriteItem", {"RequestItems": {self.table.name: writes}})
        assert not response.get("UnprocessedItems")
        self.expect("batch-write", model, response["ConsumedCapacity"][0], f"{len(writes)} writes")

    # -- queries -----------------------------------------------------------------------------

    def query(self) -> None:
        c = self.corpus
        rng = c.rng
        index: LocalIndex | None = rng.choice([None, *self.table.local_indexes])
        partition = rng.choice(c.partitions)
        sort_attr = "SK" if index is None else index.sort_key.name
        items = [i for (p, _), i in sorted(c.mirror.items()) if p == partition and sort_attr in i]
        key_condition = "#pk = :pk"
        names = {"#pk": "PK"}
        values: dict[str, Any] = {":pk": {"S": partition}}
        if items and rng.random() < 0.4 and (index is None or index.sort_key.type != "B"):
            bounds = sorted(
                rng.sample([i[sort_attr] for i in items], k=min(2, len(items))), key=order
            )
            low, high = bounds[0], bounds[-1]
            key_condition += " AND #sk BETWEEN :lo AND :hi"
            names["#sk"] = sort_attr
            values.update({":lo": low, ":hi": high})
            items = [i for i in items if order(low) <= order(i[sort_attr]) <= order(high)]
        params: dict[str, Any] = {
            "TableName": self.table.name,
            "KeyConditionExpression": key_condition,
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
            "ConsistentRead": rng.random() < 0.5,
        }
        if index is not None:
            params["IndexName"] = index.name
        select, attributes = self.pick_select(index)
        if select is not None:
            params["Select"] = select
        if attributes:
            aliases = {f"#p{i}": a for i, a in enumerate(attributes)}
            params["ProjectionExpression"] = ", ".join(aliases)
            names.update(aliases)
        if rng.random() < 0.25 and (index is None or index.projection.type == "ALL"):
            # A filter does not lower the cost: the engine reads before it filters.
            params["FilterExpression"] = "attribute_exists(#f) AND attribute_not_exists(#f)"
            names["#f"] = "x1"
        response = self.send("Query", params)
        assert response["ScannedCount"] == len(items), "mirror drifted from the engine"
        model = estimate_query(
            self.table,
            index,
            items,
            consistent=params["ConsistentRead"],
            select=select,
            attributes=attributes,
        )
        fetch = needs_fetch(self.table, index, attributes, select=select)
        label = "query-base" if index is None else ("query-fetch" if fetch else "query-index")
        note = f"{index and index.name}, {len(items)} items, select={select}, {attributes}"
        self.expect(label, model, response["ConsumedCapacity"], note)

    def pick_select(self, index: LocalIndex | None) -> tuple[Select | None, list[str]]:
        rng = self.corpus.rng
        choice = rng.choice(["default", "projected", "all", "count", "specific"])
        if choice == "default":
            return None, []
        if choice == "count":
            return "COUNT", []
        if choice == "all":
            return "ALL_ATTRIBUTES", []
        if choice == "projected" and index is not None:
            return "ALL_PROJECTED_ATTRIBUTES", []
        projected = self.table.projected_attributes(index) if index is not None else None
        if projected is None:
            # Base table or an ALL index: any attributes, never a fetch.
            return None, rng.sample(["PK", "SK", "tags", "body", "meta", "x1"], k=rng.randint(1, 3))
        # DynamoDB Local fetches for every ProjectionExpression on a KEYS_ONLY or INCLUDE
        # LSI (see test_local_fetches_even_for_projected_attributes), so the corpus asks for at
        # least one attribute the index does not project: a fetch by the documented rule too.
        outside = sorted({"body", "meta", "x1", "x2", "blob", "tags", "n"} - projected)
        inside = sorted(projected)
        return None, [rng.choice(outside), *rng.sample(inside, k=rng.randint(0, 2))]


def order(av: dict[str, Any]) -> Any:
    """DynamoDB's order of scalar key values (ASCII strings compare as their bytes)."""
    ((tag, raw),) = av.items()
    return Decimal(raw) if tag == "N" else raw


@pytest.fixture
def session(capacity_endpoint_url: str, session: Session) -> Session:
    """The suite's session, on an engine that reports consumed capacity (not moto)."""
    return session


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_model_equals_consumed_capacity(session: Session, table_name: str, layout: str) -> None:
    table = LAYOUTS[layout](table_name)
    session.create_table(table)
    try:
        runner = Runner(session, Corpus(table, random.Random(f"{SEED}-{layout}")))
        steps = [runner.put] * 5 + [runner.update] * 5 + [runner.delete] * 2
        steps += [runner.batch] + [runner.query] * 6
        for _ in range(CASES):
            runner.corpus.rng.choice(steps)()
    finally:
        session.delete_table(table, wait=False)
    assert sum(runner.checked.values()) == CASES
    # The corpus must reach every kind of case, or it proves less than it claims.
    kinds = {"put", "overwrite", "update", "delete", "transact-put", "batch-write"}
    kinds |= {"query-base", "query-index", "query-fetch"}
    assert kinds <= set(runner.checked), runner.checked


def test_local_fetches_even_for_projected_attributes(session: Session, table_name: str) -> None:
    """DynamoDB Local fetches when a ProjectionExpression names only projected attributes.

    The documented rule fetches only for attributes the index does not project; the model's
    default rule follows the engine.
    """
    table = mixed_table(table_name)
    session.create_table(table)
    try:
        item = {"PK": {"S": "p"}, "SK": {"S": "s"}, "L3": {"S": "k"}, "tags": {"SS": ["a"]}}
        item["body"] = {"S": "b" * 5000}
        session.run(call(session.ctx, "PutItem", {"TableName": table.name, "Item": item}))
        params = {
            "TableName": table.name,
            "IndexName": "ByInclude",
            "KeyConditionExpression": "PK = :p",
            "ExpressionAttributeValues": {":p": {"S": "p"}},
            "ProjectionExpression": "tags",
            "ReturnConsumedCapacity": "INDEXES",
            "ConsistentRead": True,
        }
        response = session.run(call(session.ctx, "Query", params, (table,)))
    finally:
        session.delete_table(table, wait=False)
    reported = ReadEstimate.from_consumed(response["ConsumedCapacity"])
    assert not needs_fetch(table, "ByInclude", ["tags"], rule="documented")
    assert needs_fetch(table, "ByInclude", ["tags"])
    documented = estimate_query(
        table, "ByInclude", [item], consistent=True, attributes=["tags"], rule="documented"
    )
    local = estimate_query(table, "ByInclude", [item], consistent=True, attributes=["tags"])
    assert documented != reported
    assert local == reported
    assert reported.table_units == 2.0  # the 5 KB item, fetched whole
