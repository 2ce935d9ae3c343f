"""Adopting tables that PynamoDB wrote: lsiorm reads, queries and updates them, PynamoDB reads
lsiorm's updates back. No lsiorm code writes the tables' items.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from typing import Annotated, Any, Literal

import boto3
import pytest
from pydantic import PlainSerializer

pynamodb = pytest.importorskip("pynamodb", reason="pynamodb is in the dev extra")

from pynamodb.attributes import (  # noqa: E402
    NumberAttribute,
    UnicodeAttribute,
    UTCDateTimeAttribute,
)
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex  # noqa: E402
from pynamodb.models import Model  # noqa: E402

from lsiorm import (  # noqa: E402
    AsyncSession,
    Entity,
    GlobalIndex,
    KeyAttribute,
    KeyFormat,
    QueryPlanError,
    Session,
    Table,
    between,
    gt,
    query,
    scan,
)
from support.cli import run  # noqa: E402
from support.peers import lsiorm_users  # noqa: E402
from support.tables import wait_for_table  # noqa: E402

TEAMS = ("red", "blue", "green")


def pynamodb_meta(table_name: str, endpoint_url: str) -> type:
    """A PynamoDB model's Meta: its table on the engine under test, billed per request."""
    return type(
        "Meta",
        (),
        {
            "table_name": table_name,
            "host": endpoint_url,
            "region": "us-east-1",
            "billing_mode": "PAY_PER_REQUEST",
        },
    )


def pynamodb_index(name: str, **keys: Any) -> Any:
    """A PynamoDB global index ``name`` projecting all attributes, keyed by ``keys`` (attribute
    name: PynamoDB attribute, with ``hash_key`` or ``range_key`` set)."""
    meta = type("Meta", (), {"index_name": name, "projection": AllProjection()})
    return type(name, (GlobalSecondaryIndex,), {"Meta": meta, **keys})()


def pynamodb_user_model(table_name: str, endpoint_url: str) -> type[Model]:
    """PynamoDB's model of a users table: keyed by a number, a GSI on team and score."""

    class UserModel(Model):
        Meta = pynamodb_meta(table_name, endpoint_url)
        user_id = NumberAttribute(hash_key=True)
        email = UnicodeAttribute(attr_name="emailAddress")
        name = UnicodeAttribute()
        team = UnicodeAttribute(null=True)
        score = NumberAttribute(default=0)
        by_team = pynamodb_index(
            "by_team", team=UnicodeAttribute(hash_key=True), score=NumberAttribute(range_key=True)
        )

    return UserModel


@pytest.fixture
def peer_users(endpoint_url: str, table_name: str) -> Iterator[tuple[type[Model], list[Any]]]:
    """The users table, created and written by PynamoDB: 40 users, some without a team."""
    model = pynamodb_user_model(table_name, endpoint_url)
    model.create_table()
    wait_for_table(boto3.client("dynamodb", endpoint_url=endpoint_url), table_name)
    rng = random.Random(5)
    written = []
    for n in range(1, 41):
        user = model(
            n * 7,
            email=f"user{n}@example.com",
            name=f"User {n}",
            team=rng.choice(TEAMS) if n % 5 else None,
            score=rng.randrange(0, 12),  # repeats: rows with equal scores come in any order
        )
        user.save()
        written.append(user)
    try:
        yield model, written
    finally:
        model.delete_table()


def _as_peer(user: Any) -> dict[str, Any]:
    return {
        "user_id": int(user.user_id),
        "email": user.email,
        "name": user.name,
        "team": user.team,
        "score": int(user.score),
    }


def _as_entity(entity: Any) -> dict[str, Any]:
    return {
        "user_id": entity.user_id,
        "email": entity.email,
        "name": entity.name,
        "team": entity.team,
        "score": entity.score,
    }


def test_lsiorm_adopts_reads_and_queries_a_pynamodb_table(
    session: Session, table_name: str, peer_users: tuple[type[Model], list[Any]]
) -> None:
    users, User = lsiorm_users(table_name)
    _, written = peer_users
    report = session.adopt(users, segments=2)
    assert report.accounted, str(report)
    assert report.scanned == 40
    assert report.entities["User"].parsed == 40
    for user in written:
        got = session.get(User, {"user_id": user.user_id})
        assert got is not None
        assert _as_entity(got) == _as_peer(user)
    for team in TEAMS:
        q = query(User).where(team=team, score=gt(5))
        assert q.plan().index_name == "by_team"
        rows = session.all(q)
        expected = [_as_peer(u) for u in written if u.team == team and u.score > 5]
        assert [r.score for r in rows] == sorted(u["score"] for u in expected)
        assert sorted(map(_as_entity, rows), key=str) == sorted(expected, key=str)


def test_pynamodb_reads_back_what_lsiorm_updates(
    session: Session, table_name: str, peer_users: tuple[type[Model], list[Any]]
) -> None:
    _, User = lsiorm_users(table_name)
    model, written = peer_users
    first, second = written[0], written[4]  # the fifth user has no team
    session.update(User, {"user_id": first.user_id}, set={"score": 99, "email": "new@example.com"})
    session.update(User, {"user_id": second.user_id}, set={"team": "blue"})
    session.put(User(user_id=1, email="one@example.com", name="One", team="red", score=3))
    again = model.get(first.user_id)
    assert (again.score, again.email, again.team) == (99, "new@example.com", first.team)
    assert model.get(second.user_id).team == "blue"
    assert [u.user_id for u in model.by_team.query("blue", model.score > 98)] == []
    one = model.get(1)
    assert (one.email, one.name, one.team, one.score) == ("one@example.com", "One", "red", 3)
    # The peer's own index query sees lsiorm's writes.
    assert 1 in {u.user_id for u in model.by_team.query("red", model.score == 3)}
    assert session.get(User, {"user_id": first.user_id}).score == 99  # type: ignore[union-attr]


def test_a_key_attribute_that_is_the_field_holds_the_value_as_pynamodb_reads_it(
    session: Session, table_name: str, peer_users: tuple[type[Model], list[Any]]
) -> None:
    # The declaration names no key style: printable keys. A field that is the key attribute
    # itself ('team') holds the value as it is, space and '#' included, which PynamoDB reads
    # as the value and queries by.
    _, User = lsiorm_users(table_name)
    model, _ = peer_users
    session.put(User(user_id=2, email="two@example.com", name="Two", team="data #1", score=4))
    assert model.get(2).team == "data #1"
    assert [u.user_id for u in model.by_team.query("data #1")] == [2]
    assert [u.user_id for u in session.all(query(User).where(team="data #1"))] == [2]


async def test_async_adopt_gives_the_same_report(
    endpoint_url: str, table_name: str, peer_users: tuple[type[Model], list[Any]]
) -> None:
    users, _ = lsiorm_users(table_name)
    async with AsyncSession(endpoint_url=endpoint_url, region_name="us-east-1") as session:
        report = await session.adopt(users, segments=3)
    assert report.accounted
    assert report.entities["User"].parsed == 40


def test_adopt_reports_items_no_declaration_claims(
    session: Session, table_name: str, peer_users: tuple[type[Model], list[Any]]
) -> None:
    users, _ = lsiorm_users(table_name)
    # An item lsiorm's declaration does not describe: it has no email.
    session.call(
        "PutItem",
        {"TableName": table_name, "Item": {"user_id": {"N": "3"}, "name": {"S": "x"}}},
    )
    report = session.adopt(users)
    assert not report.accounted
    assert report.entities["User"].items == 41
    assert report.entities["User"].unparsed == 1
    (example,) = report.entities["User"].examples
    assert example.key == {"user_id": 3}
    assert "emailAddress" in example.reason
    assert "User: 41 items, 40 parse, 1 do not" in str(report)


def test_the_adopt_command_exits_0_only_when_every_item_is_accounted_for(
    endpoint_url: str,
    table_name: str,
    tmp_path: Any,
    monkeypatch: pytest.MonkeyPatch,
    peer_users: tuple[type[Model], list[Any]],
) -> None:
    module = f"peer_app_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{module}.py").write_text(_APP.format(name=table_name))
    monkeypatch.chdir(tmp_path)
    code, out = run("adopt", f"{module}:users", "--endpoint-url", endpoint_url)
    assert code == 0, out
    assert out.startswith(f"Adoption of table '{table_name}': priced at "), out
    assert out.count("priced at") == 1, out  # said once, before the read
    assert "every item is accounted for by exactly one entity" in out
    code, out = run("adopt", f"{module}:users", "--dry-run", "--endpoint-url", endpoint_url)
    assert (code, "dry run: nothing was read" in out) == (0, True)
    model, _ = peer_users
    model(5000, email="e", name="n", team="red", score=1).save()
    raw = {"user_id": {"N": "5001"}, "kind": {"S": "other"}, "_type": {"S": "Invoice"}}
    Session(endpoint_url=endpoint_url, region_name="us-east-1").call(
        "PutItem", {"TableName": table_name, "Item": raw}
    )
    code, out = run("adopt", f"{module}:users", "--endpoint-url", endpoint_url)
    assert code == 1, out
    assert "matching no declaration: 1 items" in out
    assert "'Invoice'" in out


_APP = """
from support.peers import lsiorm_users

users, User = lsiorm_users("{name}")
"""


# -- one table, several models, keys built by hand -------------------------------------------

#: PynamoDB's UTCDateTimeAttribute text, which the shop's keys hold too.
PYNAMODB_TIME = "%Y-%m-%dT%H:%M:%S.%f+0000"


#: The shop's index of orders by status, as PynamoDB's users declared it.
BY_STATUS = GlobalIndex("by_status", KeyAttribute("gsi1pk"), KeyAttribute("gsi1sk"))
#: An order line's keys, as PynamoDB's users built them: numbers unpadded.
LINE_KEYS = {"pk": "ORDER#{order_no}", "sk": "ITEM#{line}"}


class ShopLine(Entity):
    """An order line of the shop (abstract: each declaration below gives its table and keys)."""

    order_no: int
    line: int
    sku: str
    qty: int


def pynamodb_shop_models(table_name: str, endpoint_url: str) -> dict[str, type[Model]]:
    """Three PynamoDB models in one table, its keys built by hand: unpadded numbers and
    datetimes as UTCDateTimeAttribute writes them, no type attribute."""

    class ShopModel(Model):
        Meta = pynamodb_meta(table_name, endpoint_url)
        pk = UnicodeAttribute(hash_key=True)
        sk = UnicodeAttribute(range_key=True)

    class CustomerModel(ShopModel):
        customer_id = NumberAttribute()
        name = UnicodeAttribute()

    class OrderModel(ShopModel):
        gsi1pk = UnicodeAttribute()
        gsi1sk = UnicodeAttribute()
        customer_id = NumberAttribute()
        placed = UTCDateTimeAttribute()
        status = UnicodeAttribute()
        total = NumberAttribute()
        by_status = pynamodb_index(
            "by_status",
            gsi1pk=UnicodeAttribute(hash_key=True),
            gsi1sk=UnicodeAttribute(range_key=True),
        )

    class LineModel(ShopModel):
        order_no = NumberAttribute()
        line = NumberAttribute()
        sku = UnicodeAttribute()
        qty = NumberAttribute()

    return {"customer": CustomerModel, "order": OrderModel, "line": LineModel}


def lsiorm_shop(table_name: str) -> tuple[Table, type[Entity], type[Entity], type[Entity]]:
    """lsiorm's declaration of the shop, from the keys PynamoDB's users built."""
    shop = Table(table_name, "pk", "sk", global_indexes=[BY_STATUS], key_style="plain")
    Stamp = Annotated[
        datetime,
        KeyFormat(style="plain", datetime_format=PYNAMODB_TIME),
        # The attribute, as UTCDateTimeAttribute reads it.
        PlainSerializer(lambda d: d.astimezone(timezone.utc).strftime(PYNAMODB_TIME)),
    ]

    class Customer(
        Entity,
        table=shop,
        keys={"pk": "CUSTOMER#{customer_id}", "sk": "PROFILE"},
        type_attribute=None,
    ):
        customer_id: int
        name: str

    class Order(
        Entity,
        table=shop,
        keys={
            "pk": "CUSTOMER#{customer_id}",
            "sk": "ORDER#{placed}",
            "gsi1pk": "STATUS#{status}",
            "gsi1sk": "{placed}",
        },
        type_attribute=None,
    ):
        customer_id: int
        placed: Stamp
        status: Literal["open", "shipped"]
        total: Decimal

    class Line(ShopLine, table=shop, keys=LINE_KEYS, type_attribute=None):
        pass

    return shop, Customer, Order, Line


START = datetime(2024, 5, 1, 10, 0, tzinfo=timezone.utc)


@pytest.fixture
def peer_shop(endpoint_url: str, table_name: str) -> Iterator[dict[str, list[Any]]]:
    """The shop, created and written by PynamoDB."""
    models = pynamodb_shop_models(table_name, endpoint_url)
    models["order"].create_table()  # the model that declares the index
    wait_for_table(boto3.client("dynamodb", endpoint_url=endpoint_url), table_name)
    written: dict[str, list[Any]] = {"customer": [], "order": [], "line": []}
    for cid in (2, 10, 42):
        customer = models["customer"](f"CUSTOMER#{cid}", "PROFILE", customer_id=cid, name=f"C{cid}")
        customer.save()
        written["customer"].append(customer)
        for n in range(4):
            placed = START + timedelta(days=n, microseconds=cid * n)
            status = "open" if (cid + n) % 2 else "shipped"
            stamp = placed.strftime(PYNAMODB_TIME)
            order = models["order"](
                f"CUSTOMER#{cid}",
                f"ORDER#{stamp}",
                gsi1pk=f"STATUS#{status}",
                gsi1sk=stamp,
                customer_id=cid,
                placed=placed,
                status=status,
                total=float(f"{cid}.{n}5"),
            )
            order.save()
            written["order"].append(order)
    for line in range(1, 13):  # ITEM#10 sorts before ITEM#2
        item = models["line"](
            "ORDER#17", f"ITEM#{line}", order_no=17, line=line, sku=f"S{line}", qty=line % 3
        )
        item.save()
        written["line"].append(item)
    try:
        yield written
    finally:
        models["customer"].delete_table()


def test_lsiorm_adopts_a_pynamodb_single_table(
    session: Session, table_name: str, peer_shop: dict[str, list[Any]]
) -> None:
    shop, Customer, Order, Line = lsiorm_shop(table_name)
    report = session.adopt(shop, segments=3)
    assert report.accounted, str(report)
    assert {n: e.parsed for n, e in report.entities.items()} == {
        "Customer": 3,
        "Order": 12,
        "Line": 12,
    }
    for order in peer_shop["order"]:
        got = session.get(Order, {"customer_id": int(order.customer_id), "placed": order.placed})
        assert got is not None
        assert (got.placed, got.status, got.total) == (
            order.placed,
            order.status,
            Decimal(str(order.total)),
        )
    lines = session.all(query(Line).where(order_no=17))
    assert [r.line for r in lines] == sorted(range(1, 13), key=str)  # the stored text order
    for row, peer in zip(lines, sorted(peer_shop["line"], key=lambda p: p.sk), strict=True):
        assert (row.line, row.sku, row.qty) == (peer.line, peer.sku, peer.qty)
    assert [r.sku for r in session.all(query(Line).where(order_no=17, line=10))] == ["S10"]
    with pytest.raises(QueryPlanError) as caught:
        query(Line).where(order_no=17, line=gt(3)).plan()
    assert caught.value.rule == "query.plain-range"
    # A fixed-width datetime keeps text order equal to time order: ranges are exact.
    window = between(START + timedelta(days=1), START + timedelta(days=2, hours=1))
    rows = session.all(query(Order).where(customer_id=42, placed=window))
    expected = sorted(
        (
            o
            for o in peer_shop["order"]
            if o.customer_id == 42 and window.low <= o.placed <= window.high
        ),
        key=lambda o: o.placed,
    )
    assert len(expected) == 2
    assert [r.placed for r in rows] == [o.placed for o in expected]
    q = query(Order).where(status="open")
    assert q.plan().index_name == "by_status"
    opened = session.all(q)
    assert [r.placed for r in opened] == sorted(
        o.placed for o in peer_shop["order"] if o.status == "open"
    )
    both = session.all(query(Customer, Order).where(customer_id=10))
    assert [type(r).__name__ for r in both] == ["Order"] * 4 + ["Customer"]


def test_batch_gets_and_scans_tell_the_pynamodb_models_apart(
    session: Session, table_name: str, peer_shop: dict[str, list[Any]]
) -> None:
    """No item carries a type attribute: each read names its entity by the keys it parses."""
    _, Customer, Order, Line = lsiorm_shop(table_name)
    order = peer_shop["order"][5]
    keys = [
        (Line, {"order_no": 17, "line": 10}),
        (Customer, {"customer_id": 42}),
        (Order, {"customer_id": int(order.customer_id), "placed": order.placed}),
        (Line, {"order_no": 17, "line": 1}),
        (Customer, {"customer_id": 7}),  # PynamoDB wrote no such customer
    ]
    got = session.batch_get([Customer, Order, Line], keys)
    assert sorted(((type(r).__name__, dict(r)) for r in got), key=str) == sorted(
        [
            ("Line", {"order_no": 17, "line": 10, "sku": "S10", "qty": 1}),
            ("Line", {"order_no": 17, "line": 1, "sku": "S1", "qty": 1}),
            ("Customer", {"customer_id": 42, "name": "C42"}),
            (
                "Order",
                {
                    "customer_id": int(order.customer_id),
                    "placed": order.placed,
                    "status": order.status,
                    "total": Decimal(str(order.total)),
                },
            ),
        ],
        key=str,
    )
    # A scan of one entity returns its items only, each decoded from what PynamoDB wrote.
    lines = session.all(scan(Line))
    assert sorted((r.line, r.sku, r.qty) for r in lines) == sorted(
        (int(p.line), p.sku, int(p.qty)) for p in peer_shop["line"]
    )
    customers = session.all(scan(Customer))
    assert sorted(c.customer_id for c in customers) == [2, 10, 42]
    everything = session.all(scan(Customer, Order, Line))
    assert sorted(type(r).__name__ for r in everything) == sorted(
        ["Customer"] * 3 + ["Order"] * 12 + ["Line"] * 12
    )


def test_pynamodb_reads_the_shop_back_after_lsiorm_writes(
    endpoint_url: str, session: Session, table_name: str, peer_shop: dict[str, list[Any]]
) -> None:
    _, _, Order, Line = lsiorm_shop(table_name)
    models = pynamodb_shop_models(table_name, endpoint_url)
    order = peer_shop["order"][0]
    key = {"customer_id": int(order.customer_id), "placed": order.placed}
    session.update(Order, key, set={"status": "open", "total": Decimal("9.99")})
    later = START + timedelta(days=30, microseconds=7)
    session.put(Order(customer_id=2, placed=later, status="open", total=Decimal("1.5")))
    session.put(Line(order_no=17, line=20, sku="S20", qty=4))
    again = models["order"].get(order.pk, order.sk)
    assert (again.status, again.total, again.gsi1pk) == ("open", 9.99, "STATUS#open")
    made = models["order"].get("CUSTOMER#2", f"ORDER#{later.strftime(PYNAMODB_TIME)}")
    assert (made.placed, made.gsi1sk) == (later, later.strftime(PYNAMODB_TIME))
    assert models["line"].get("ORDER#17", "ITEM#20").qty == 4
    opened = list(models["order"].by_status.query("STATUS#open"))
    assert later in [o.placed for o in opened]


def lsiorm_lines(table_name: str, **options: Any) -> tuple[Table, type[Entity]]:
    """The shop's order lines with a second index whose keys are readable: numbers padded."""
    by_line = GlobalIndex("by_line", KeyAttribute("gsi2pk"), KeyAttribute("gsi2sk"))
    shop = Table(table_name, "pk", "sk", global_indexes=[BY_STATUS, by_line])
    padded = {"gsi2pk": "ORDER#{order_no:010d}", "gsi2sk": "ITEM#{line:05d}"}

    class Line(
        ShopLine,
        table=shop,
        keys={**LINE_KEYS, **padded},
        type_attribute=None,
        key_style="plain",
        **options,
    ):
        pass

    return shop, Line


def test_plain_keys_move_to_readable_ones_on_a_new_index(
    endpoint_url: str, session: Session, table_name: str, peer_shop: dict[str, list[Any]]
) -> None:
    shop, Line = lsiorm_lines(table_name, pending={"gsi2pk", "gsi2sk"})
    for name in ("gsi2pk", "gsi2sk"):
        assert shop.key_attributes[name] == "S"
    session.call(
        "UpdateTable",
        {
            "TableName": table_name,
            "AttributeDefinitions": [
                {"AttributeName": "gsi2pk", "AttributeType": "S"},
                {"AttributeName": "gsi2sk", "AttributeType": "S"},
            ],
            "GlobalSecondaryIndexUpdates": [
                {
                    "Create": {
                        "IndexName": "by_line",
                        "KeySchema": [
                            {"AttributeName": "gsi2pk", "KeyType": "HASH"},
                            {"AttributeName": "gsi2sk", "KeyType": "RANGE"},
                        ],
                        "Projection": {"ProjectionType": "ALL"},
                    }
                }
            ],
        },
    )
    ranged = query(Line).where(order_no=17, line=gt(3))
    with pytest.raises(QueryPlanError):
        ranged.plan()  # the pending index is not picked; the plain sort key cannot range
    audit = session.audit_keys(Line)
    assert audit.entities["Line"].attributes["gsi2sk"].missing == 12
    filled = session.backfill(Line)
    assert filled.rewritten == 12
    assert session.audit_keys(Line).clean
    _, Ready = lsiorm_lines(table_name)
    q = query(Ready).where(order_no=17, line=gt(3))
    assert q.plan().index_name == "by_line"
    assert [r.line for r in session.all(q)] == list(range(4, 13))
    lines = session.adopt(Ready).entities["Line"]
    assert (lines.items, lines.parsed) == (12, 12)
    # PynamoDB reads its lines as before.
    models = pynamodb_shop_models(table_name, endpoint_url)
    assert [m.line for m in models["line"].query("ORDER#17")] == sorted(range(1, 13), key=str)
