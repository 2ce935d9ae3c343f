"""None inside nested models is absence on every write path, read back by a NULL-rejecting reader.

Differential: whatever lsiorm writes (put, update, batch, transaction, a migration's copy, dual
writes; sync and async) is read back raw and must pass `reject_null`, a reader that fails on a
NULL anywhere as PynamoDB's and ElectroDB's readers would not write one; and lsiorm must read
it back as the entity that was written. Items an older lsiorm wrote (NULL inside models) still
read back as the same entity, and a migration copies them without NULL. The capacity model
prices the item as stored (DynamoDB Local's consumed capacity).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lsiorm import (
    Put,
    Session,
    Table,
    Update,
    decode_item,
    dry_run_put,
    dry_run_update,
    query,
)
from lsiorm._model.item_encoding import wire_item
from support.engine_examples import engine_examples
from support.migration import scan_all
from support.nested import (
    Address,
    Contact,
    Phone,
    contacts,
    declare_people,
    null_form,
    phones,
    reject_null,
)
from support.sweeps import close, consume, open_session
from support.tables import table_request

MODES = ["sync", "async"]
FULL = Contact(
    email="e",
    phone=Phone(number="1", ext="2"),
    address=Address(city="x", zip="z", phone=Phone(number="3")),
    phones=[Phone(number="4")],
)


@pytest.fixture
def people(dynamodb_client: Any) -> Iterator[tuple[Table, type[Any]]]:
    table, person = declare_people(f"people_{uuid.uuid4().hex[:10]}")
    dynamodb_client.create_table(**table.create_table_request())
    dynamodb_client.get_waiter("table_exists").wait(TableName=table.name)
    yield table, person
    dynamodb_client.delete_table(TableName=table.name)


def stored(
    client: Any, table: Table, skip: set[str] | frozenset[str] = frozenset()
) -> dict[str, dict[str, Any]]:
    """Every person of the table, read raw, by person id; each passes the NULL-rejecting
    reader but those in ``skip`` (a migration copies an older lsiorm's items as they are
    stored). The migration's ledger records are left out: they are lsiorm's own entities, whose
    map fields keep a None dict value as NULL by the documented rule, like any entity's."""
    out = {}
    for item in scan_all(client, table.name):
        if "pid" not in item:
            continue
        pid = item["pid"]["S"]
        if pid not in skip:
            reject_null(item)
        out[pid] = item
    return out


def changed(entity: Any, **contact: Any) -> Any:
    """The entity with fields of its contact replaced."""
    return entity.model_copy(update={"contact": entity.contact.model_copy(update=contact)})


@pytest.mark.parametrize("mode", MODES)
@engine_examples(6)
@given(first=contacts, second=st.none() | contacts, third=contacts, extra=phones)
async def test_every_write_path_stores_none_as_absence(
    mode: str,
    endpoint_url: str,
    dynamodb_client: Any,
    people: tuple[Table, type[Any]],
    first: Contact,
    second: Contact | None,
    third: Contact,
    extra: Phone,
) -> None:
    table, person = people
    tag = uuid.uuid4().hex[:6]
    base = person(pid=f"{tag}-u", contact=FULL)
    expected = {
        f"{tag}-put": person(pid=f"{tag}-put", contact=first, backup=second),
        f"{tag}-batch": person(pid=f"{tag}-batch", contact=third, backup=first),
        f"{tag}-tx": person(pid=f"{tag}-tx", contact=second or third),
    }
    session = open_session(mode, endpoint_url)
    try:
        await consume(session.put(expected[f"{tag}-put"]))
        await consume(session.batch_write([expected[f"{tag}-batch"], base]))
        await consume(session.transact_write([Put(expected[f"{tag}-tx"])]))
        # Updates: a whole model with None inside, paths set to None, a list extended.
        await consume(session.update(base, set={"backup": first}))
        await consume(session.update(person, {"pid": base.pid}, set={"contact.phone": None}))
        await consume(
            session.update(
                person,
                pid=base.pid,
                set={"contact.address.zip": None, "contact.address.phone.ext": None},
                append={"contact.phones": [extra]},
            )
        )
        await consume(
            session.transact_write([Update(person, {"pid": base.pid}, set={"contact.email": None})])
        )
        address = Address(city="x", zip=None, phone=Phone(number="3", ext=None))
        expected[base.pid] = changed(
            base.model_copy(update={"backup": first}),
            phone=None,
            address=address,
            phones=[*FULL.phones, extra],
            email=None,
        )
        items = stored(dynamodb_client, table)
        for pid, entity in expected.items():
            assert decode_item(table, items[pid]) == entity
            assert await consume(session.get(person, pid=pid, consistent=True)) == entity
            found = await consume(session.all(query(person).where(pid=pid).consistent()))
            assert found == [entity]
    finally:
        await close(session)


@pytest.mark.parametrize("mode", MODES)
async def test_a_migration_and_dual_writes_store_none_as_absence(
    mode: str, endpoint_url: str, dynamodb_client: Any
) -> None:
    tag = uuid.uuid4().hex[:10]
    source = f"people_src_{tag}"
    table, person = declare_people(f"people_dst_{tag}")
    stream = {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"}
    dynamodb_client.create_table(**table_request(source, "PK", "SK", StreamSpecification=stream))
    dynamodb_client.get_waiter("table_exists").wait(TableName=source)
    # No empty map at any depth: DynamoDB Local's stream records lose an empty map's type
    # (docs/testing.md), which the catch-up would then write.
    kinds = {"home": Phone(number=None)}
    half = Contact(
        phone=Phone(number=None), address=Address(city="c"), phones=[Phone(number="n")]
    ).model_copy(update={"by_kind": kinds})
    # Written by this lsiorm (no NULL), and by an older one (NULL inside models).
    fresh = {
        "new-1": person(pid="new-1", contact=half, backup=Contact(by_kind=kinds)),
        "new-2": person(
            pid="new-2", contact=FULL.model_copy(update={"email": None, "by_kind": kinds})
        ),
    }
    older = {"old-1": person(pid="old-1", contact=half)}
    for entity in fresh.values():
        dynamodb_client.put_item(TableName=source, Item=wire_item(entity))
    for entity in older.values():
        item = null_form(entity)
        assert "NULL" in str(item)
        assert decode_item(table, item) == entity  # both forms read back the same
        dynamodb_client.put_item(TableName=source, Item=item)
    session = open_session(mode, endpoint_url)
    try:
        report = await consume(session.migrate_table(table, source))
        assert report.ready, str(report)
        copied = stored(dynamodb_client, table, skip=set(older))
        assert {pid: decode_item(table, copied[pid]) for pid in {**fresh, **older}} == {
            **fresh,
            **older,
        }
        dual = await consume(session.dual_writes(table, source))
        written = {
            "dual-put": person(pid="dual-put", contact=half),
            "dual-batch": person(
                pid="dual-batch", contact=Contact(phone=Phone(number=None), by_kind=kinds)
            ),
            "dual-tx": person(pid="dual-tx", contact=Contact(by_kind=kinds), backup=half),
        }
        await consume(dual.put(written["dual-put"]))
        await consume(dual.batch_write([written["dual-batch"]]))
        await consume(dual.transact_write([Put(written["dual-tx"])]))
        await consume(dual.update(person, pid="new-2", set={"contact.phone.ext": None}))
        written["new-2"] = changed(fresh["new-2"], phone=Phone(number="1", ext=None))
        assert dual.dual is not None
        assert dual.dual.mirrored == 4, dual.dual
        for pid in written:  # the source is the table of record: lsiorm wrote these there too
            key = {"PK": {"S": f"P#{pid}"}, "SK": {"S": "PERSON"}}
            reject_null(dynamodb_client.get_item(TableName=source, Key=key)["Item"])
        final = await consume(session.migrate_table(table, source, finish=True))
        assert final.phase == "switched", str(final)
        items = stored(dynamodb_client, table, skip=set(older))
        for pid, entity in {**fresh, **older, **written}.items():
            assert decode_item(table, items[pid]) == entity
            assert await consume(session.get(person, pid=pid, consistent=True)) == entity
    finally:
        await close(session)
        for name in (source, table.name):
            dynamodb_client.delete_table(TableName=name)


def test_the_capacity_model_prices_the_item_as_stored(
    capacity_endpoint_url: str, people: tuple[Table, type[Any]]
) -> None:
    _table, person = people
    # 200 phones without a number or an extension: as NULL they would be 3,400 bytes (4 write
    # units); as absence, 800 bytes (1 unit).
    empty = Contact(phones=[Phone(number=None, ext=None)] * 200)
    entity = person(pid="many", contact=empty)
    estimate = dry_run_put(entity, assume_new=True)
    assert estimate.table_units == 1
    with Session(
        endpoint_url=capacity_endpoint_url, region_name="us-east-1", consumed_capacity=True
    ) as session:
        session.put(entity)
        assert session.capacity.last[0].matches(estimate), session.capacity.last
        full = person(pid="many", contact=Contact(phones=[Phone(number="1", ext="2")] * 200))
        session.put(full)
        price = dry_run_update(full, set={"contact.phones[0].ext": None})
        session.update(full, set={"contact.phones[0].ext": None})
        assert session.capacity.last[0].matches(price), (session.capacity.last, price)
