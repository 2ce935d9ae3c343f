"""A sweep of bad inputs: each is refused with an lsiorm error naming its rule, before any request.

Every case runs against a session whose client counts the requests it is asked to send; the
count must stay 0. The cases cover key value types on reads and writes, invalid entities built
with ``model_construct``, DynamoDB's key, item, number, expression, transaction and batch
limits, update rules, cursors and declarations.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from decimal import Decimal
from typing import Annotated, Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import Field

from lsiorm import (
    DeclarationError,
    Delete,
    Entity,
    Get,
    GlobalIndex,
    KeyAttribute,
    LocalIndex,
    LsiormError,
    Put,
    Session,
    Shard,
    Table,
    ValidationError,
    any_of,
    gt,
    is_in,
    query,
    where,
)
from lsiorm._model.text_codecs import percent_escape
from lsiorm._query.cursor import encode_cursor


class CountingClient:
    """A stand-in boto3 client: it records every request and never answers one."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    def close(self) -> None:
        pass

    def __getattr__(self, name: str) -> Callable[..., Any]:
        def send(**params: Any) -> dict[str, Any]:
            self.sent.append(name)
            raise AssertionError(f"{name} was sent")

        return send


table = Table(
    "sweep_items",
    "pk",
    "sk",
    local_indexes=[LocalIndex("LSI1", KeyAttribute("lsk"))],
    global_indexes=[GlobalIndex("GSI1", KeyAttribute("gpk"), KeyAttribute("gsk"))],
)


class Item(
    Entity,
    table=table,
    keys={"pk": "I#{name}", "sk": "N#{seq:05d}", "gpk": "C#{cat}", "gsk": "{label}"},
    version="ver",
):
    name: str
    seq: Annotated[int, Field(ge=0)]
    cat: str | None = None
    label: str | None = None
    amount: Decimal | None = None
    owner: str
    body: str = ""
    tags: list[str] = Field(default_factory=list)
    ver: int = 0


btable = Table("sweep_binary", KeyAttribute("bk", "B"))


class Blob(Entity, table=btable, keys={"bk": "{blob}"}):
    blob: bytes


stable = Table("sweep_direct", "pk")


class Direct(Entity, table=stable, keys={"pk": "{k}"}):
    k: str


def item(**kw: Any) -> Item:
    return Item(**{"name": "a", "seq": 1, "owner": "o", **kw})


Case = tuple[str, str, Callable[[Session], Any]]
CASES: list[Case] = []


def case(rule: str, label: str, do: Callable[[Session], Any]) -> None:
    CASES.append((label, rule, do))


# -- key values on reads and writes: no conversion -----------------------------------------------

BAD_NAME = [True, 7, b"eu", 1.5, ["x"], {"a": 1}]
BAD_SEQ = [True, False, "7", b"7", "x", [1]]
for value in BAD_NAME:
    case("key.value-type", f"get name={value!r}", lambda s, v=value: s.get(Item, name=v, seq=1))
    case(
        "key.value-type",
        f"update name={value!r}",
        lambda s, v=value: s.update(Item, name=v, seq=1, set={"body": "x"}),
    )
    case(
        "key.value-type", f"delete name={value!r}", lambda s, v=value: s.delete(Item, name=v, seq=1)
    )
for value in BAD_SEQ:
    case("key.value-type", f"get seq={value!r}", lambda s, v=value: s.get(Item, name="a", seq=v))
    case(
        "key.value-type",
        f"update seq={value!r}",
        lambda s, v=value: s.update(Item, name="a", seq=v, set={"body": "x"}),
    )
    case(
        "key.value-type",
        f"delete seq={value!r}",
        lambda s, v=value: s.delete(Item, name="a", seq=v),
    )
for value in [True, b"eu", 7]:
    case(
        "key.value-type",
        f"query name={value!r}",
        lambda s, v=value: s.all(query(Item).where(name=v)),
    )
for value in [True, "7", b"7"]:
    case(
        "key.value-type",
        f"query seq={value!r}",
        lambda s, v=value: s.all(query(Item).where(name="a", seq=gt(v))),
    )
case(
    "key.value-type", "batch_get name=True", lambda s: s.batch_get(Item, [{"name": True, "seq": 1}])
)
case(
    "key.value-type",
    "transact Delete seq='7'",
    lambda s: s.transact_write([Delete(Item, {"name": "a", "seq": "7"})]),
)
case("field.invalid", "get seq=-1", lambda s: s.get(Item, name="a", seq=-1))
case("field.invalid", "get seq=1.5", lambda s: s.get(Item, name="a", seq=1.5))

# -- entities are validated before they are written ----------------------------------------------

for label, kwargs in [
    ("seq=-1", {"name": "a", "seq": -1}),
    ("seq='x'", {"name": "a", "seq": "x"}),
    ("name=5", {"name": 5, "seq": 1}),
    ("amount='abc'", {"name": "a", "seq": 1, "amount": "abc"}),
    ("tags=5", {"name": "a", "seq": 1, "tags": 5}),
    ("owner=None", {"name": "a", "seq": 1, "owner": None}),
]:
    kwargs = {"owner": "o", **kwargs}
    bad = Item.model_construct(**kwargs)
    case("entity.invalid", f"put model_construct {label}", lambda s, e=bad: s.put(e))
    case(
        "entity.invalid",
        f"transact Put model_construct {label}",
        lambda s, e=bad: s.transact_write([Put(e)]),
    )
case(
    "entity.invalid",
    "batch_write model_construct k=5",
    lambda s: s.batch_write([Direct.model_construct(k=5)]),
)
partial = Item.model_construct(name="a", seq=1, owner="o")
del partial.__dict__["body"]
case("entity.partial", "put of a partial entity", lambda s: s.put(partial))

# -- key sizes and empty keys --------------------------------------------------------------------

case("key.partition-max-2048-bytes", "put pk 2100 bytes", lambda s: s.put(item(name="x" * 2100)))
case(
    "key.partition-max-2048-bytes",
    "put pk 2060 bytes of é",
    lambda s: s.put(item(name="é" * 1030)),
)
case(
    "key.partition-max-2048-bytes",
    "get pk 2100 bytes",
    lambda s: s.get(Item, name="x" * 2100, seq=1),
)
case(
    "key.partition-max-2048-bytes",
    "derived GSI partition 2049 bytes",
    lambda s: s.put(item(cat="x" * 2047)),
)
case(
    "key.sort-max-1024-bytes",
    "derived GSI sort 1025 bytes",
    lambda s: s.put(item(label="y" * 1025)),
)
case(
    "key.sort-max-1024-bytes",
    "update sets GSI sort 1025 bytes",
    lambda s: s.update(Item, name="a", seq=1, set={"label": "y" * 1025}),
)
case("key.partition-max-2048-bytes", "direct pk 2049 bytes", lambda s: s.put(Direct(k="k" * 2049)))
case(
    "key.partition-max-2048-bytes",
    "delete direct pk 2049",
    lambda s: s.delete(Direct, k="k" * 2049),
)
case("key.empty-binary", "put empty binary key", lambda s: s.put(Blob(blob=b"")))
case("key.empty-binary", "get empty binary key", lambda s: s.get(Blob, blob=b""))
case("key.empty", "put empty string key", lambda s: s.put(Direct(k="")))
case("key.empty", "get empty string key", lambda s: s.get(Direct, k=""))

# -- item size -----------------------------------------------------------------------------------

case("item.max-400kb", "put 410,000 byte body", lambda s: s.put(item(body="x" * 410_000)))
case("item.max-400kb", "put 210,000 two-byte chars", lambda s: s.put(item(body="é" * 210_000)))
case(
    "item.max-400kb",
    "transact Put 410,000 bytes",
    lambda s: s.transact_write([Put(item(body="x" * 410_000))]),
)

# -- numbers -------------------------------------------------------------------------------------

for label, number in [
    ("1E+126", Decimal("1E+126")),
    ("1E-131", Decimal("1E-131")),
    ("39 digits", Decimal("1." + "1" * 38)),
    ("-1E+126", Decimal("-1E+126")),
]:
    case("number.range", f"put amount {label}", lambda s, n=number: s.put(item(amount=n)))
    case(
        "number.range",
        f"update amount {label}",
        lambda s, n=number: s.update(Item, name="a", seq=1, set={"amount": n}),
    )
case(
    "number.range",
    "condition amount > 1E+126",
    lambda s: s.put(item(), condition=where(amount=gt(Decimal("1E+126")))),
)

# -- expressions, transactions, batches ----------------------------------------------------------

case(
    "expression.max-4kb",
    "condition of 400 alternatives",
    lambda s: s.put(item(), condition=any_of(*[where(body=str(i)) for i in range(400)])),
)
case(
    "condition.in-too-many",
    "IN with 101 values",
    lambda s: s.put(item(), condition=where(body=is_in(*map(str, range(101))))),
)
case(
    "expression.max-substitutions-2mb",
    "update with 2.1 MB of values",
    lambda s: s.update(Item, name="a", seq=1, set={"body": "x" * 2_200_000}),
)
case(
    "expression.max-4kb",
    "raw PutItem with a 5 KB expression",
    lambda s: s.call(
        "PutItem",
        {"TableName": "t", "Item": {}, "ConditionExpression": "attribute_exists(a)" * 300},
    ),
)
case(
    "transaction.max-100",
    "101 puts in a transaction",
    lambda s: s.transact_write([Put(item(seq=i)) for i in range(101)]),
)
case(
    "transaction.max-100",
    "101 gets in a transaction",
    lambda s: s.transact_get([Get(Item, {"name": "a", "seq": i}) for i in range(101)]),
)
case("transaction.empty", "empty transaction", lambda s: s.transact_write([]))
case(
    "transaction.duplicate-item",
    "one item twice in a transaction",
    lambda s: s.transact_write([Put(item()), Put(item())]),
)
case(
    "transaction.token",
    "a 40-character token",
    lambda s: s.transact_write([Put(item())], token="t" * 40),
)
case(
    "transaction.max-100",
    "raw TransactWriteItems with 101 actions",
    lambda s: s.call("TransactWriteItems", {"TransactItems": [{}] * 101}),
)
case(
    "batch.max-25-writes",
    "raw BatchWriteItem with 26 writes",
    lambda s: s.call("BatchWriteItem", {"RequestItems": {"t": [{}] * 26}}),
)
case(
    "batch.max-100-keys",
    "raw BatchGetItem with 101 keys",
    lambda s: s.call("BatchGetItem", {"RequestItems": {"t": {"Keys": [{}] * 101}}}),
)

# -- update rules --------------------------------------------------------------------------------

case("update.empty", "update changes nothing", lambda s: s.update(Item, name="a", seq=1))
case(
    "update.primary-key-field",
    "update sets a primary key field",
    lambda s: s.update(Item, name="a", seq=1, set={"name": "b"}),
)
case(
    "update.version-field",
    "update sets the version field",
    lambda s: s.update(Item, name="a", seq=1, set={"ver": 3}),
)
case(
    "update.remove-required",
    "update removes a required field",
    lambda s: s.update(Item, name="a", seq=1, remove=["owner"]),
)
case(
    "update.add-key-field",
    "update ADDs to a key template field",
    lambda s: s.update(Item, name="a", seq=1, add={"label": 1}),
)
case(
    "field.unknown",
    "update sets an unknown field",
    lambda s: s.update(Item, name="a", seq=1, set={"nope": 1}),
)
case("field.unknown", "get by an unknown field", lambda s: s.get(Item, name="a", seq=1, nope=1))
case(
    "update.idempotency",
    "update with an unknown idempotency",
    lambda s: s.update(Item, name="a", seq=1, add={"amount": 1}, idempotency="maybe"),  # type: ignore[arg-type]
)
case(
    "key.partition-max-2048-bytes",
    "update sets GSI partition 2049 bytes",
    lambda s: s.update(Item, name="a", seq=1, set={"cat": "c" * 2047}),
)
case(
    "key.empty",
    "update sets a direct GSI sort key to ''",
    lambda s: s.update(Item, name="a", seq=1, set={"label": ""}),
)

# -- cursors -------------------------------------------------------------------------------------

case(
    "cursor.malformed",
    "a garbage cursor",
    lambda s: s.all(query(Item).where(name="a").after("garbage!")),
)
case(
    "cursor.mismatch",
    "a cursor of another query",
    lambda s: s.all(
        query(Item).where(name="a").after(encode_cursor("other", [None], s.ctx.cursor_key))
    ),
)
case(
    "cursor.tampered",
    "a cut cursor",
    lambda s: s.all(query(Item).where(name="a").after(edited_cursor(s.ctx.cursor_key))),
)


def edited_cursor(key: bytes) -> str:
    cursor = encode_cursor("other", [None], key)
    text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    text = text.replace('"s":[null]', '"s":["done"]')
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


# -- declarations --------------------------------------------------------------------------------

dtable = Table("sweep_decl", "pk", "sk")


def declare(rule: str, label: str, build: Callable[[], Any]) -> None:
    case(rule, f"declaration: {label}", lambda s: build())


declare(
    "entity.needs-table",
    "keys without table",
    lambda: type("X", (Entity,), {"__annotations__": {"a": str}}, keys={"pk": "{a}"}),
)


def entity(keys: dict[str, str], annotations: dict[str, Any], **kw: Any) -> Any:
    return type("Decl", (Entity,), {"__annotations__": annotations}, table=dtable, keys=keys, **kw)


declare(
    "template.unknown-field",
    "template names no field",
    lambda: entity({"pk": "{nope}", "sk": "X"}, {"a": str}),
)
declare(
    "template.unknown-attribute",
    "template for no attribute",
    lambda: entity({"pk": "{a}", "sk": "X", "zz": "{a}"}, {"a": str}),
)
declare(
    "entity.missing-primary-key", "no sort key template", lambda: entity({"pk": "{a}"}, {"a": str})
)
declare(
    "entity.optional-key-field",
    "optional primary key field",
    lambda: entity({"pk": "{a}", "sk": "X"}, {"a": str | None}),
)
declare(
    "entity.version-field",
    "version names a str",
    lambda: entity({"pk": "{a}", "sk": "X"}, {"a": str, "v": str}, version="v"),
)
declare(
    "template.repeated-field",
    "a field twice",
    lambda: entity({"pk": "{a}#{a}", "sk": "X"}, {"a": str}),
)
declare(
    "entity.attribute-collision",
    "a field named like a key",
    lambda: entity({"pk": "{a}", "sk": "X"}, {"a": str, "pk": str}),
)
declare("shard.count", "Shard(0)", lambda: Shard(0))
declare(
    "lsi.max-five",
    "six LSIs",
    lambda: Table(
        "sweep_six",
        "pk",
        "sk",
        local_indexes=[LocalIndex(f"LSI{i}", KeyAttribute(f"l{i}")) for i in range(6)],
    ),
)
declare("table.name", "a two-letter table name", lambda: Table("ab", "pk"))


def test_the_sweep_has_at_least_100_inputs() -> None:
    assert len(CASES) >= 100
    assert len({label for label, _, _ in CASES}) == len(CASES)


@pytest.mark.parametrize(("label", "rule", "do"), CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_refused_before_any_request(
    label: str, rule: str, do: Callable[[Session], Any]
) -> None:
    client = CountingClient()
    session = Session(client=client)
    with pytest.raises(LsiormError) as caught:
        do(session)
    assert client.sent == []
    assert getattr(caught.value, "rule", None) == rule, caught.value
    assert f"[rule: {rule}]" in str(caught.value)
    if label.startswith("declaration"):
        assert isinstance(caught.value, DeclarationError)


@given(text=st.text(min_size=1, max_size=1100))
def test_a_key_is_refused_exactly_when_it_is_over_its_byte_limit(text: str) -> None:
    # The limit applies to the key text DynamoDB stores: U+0000 to '%' are escaped to three
    # characters each in the printable style (see docs/encoding.md).
    stored = percent_escape(text)
    size = len(stored.encode("utf-8", "surrogatepass"))
    try:
        wire = Direct(k=text).to_wire()
    except ValidationError as exc:
        if exc.rule == "key.partition-max-2048-bytes":
            assert size > 2048
        return
    assert size <= 2048
    assert wire["pk"] == {"S": stored}


@given(label=st.text(alphabet="aé€", min_size=300, max_size=600))
def test_a_derived_sort_key_is_refused_exactly_over_1024_bytes(label: str) -> None:
    if len(label.encode()) > 1024:
        with pytest.raises(ValidationError, match=r"rule: key\.sort-max-1024-bytes"):
            item(label=label).to_wire()
    else:
        assert item(label=label).to_wire()["gsk"] == {"S": label}
