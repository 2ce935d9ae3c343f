"""Adopting a table that a script wrote with boto3 by hand: values kept only in keys.

The script keeps a device's id only in its keys (``DEVICE#42``, no ``device_id``), the
reading's time only in its sort key, and stores the rest as attributes; no item carries a type
attribute. lsiorm is declared over it, adopts it, reads, queries and updates it; boto3 then
reads every item back as the script expects it.
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import boto3
import pytest
from pydantic import Field

from lsiorm import Entity, Session, Table, gt, query
from support.tables import create_and_wait, table_request

DEVICES = (3, 42, 100)


def lsiorm_devices(table_name: str) -> tuple[Table, type[Entity], type[Entity]]:
    table = Table(table_name, "pk", "sk", key_style="plain")

    class Device(
        Entity, table=table, keys={"pk": "DEVICE#{device_id}", "sk": "META"}, type_attribute=None
    ):
        device_id: int = Field(exclude=True)
        label: str

    class Reading(
        Entity,
        table=table,
        keys={"pk": "DEVICE#{device_id}", "sk": "AT#{at:010d}"},
        type_attribute=None,
    ):
        device_id: int = Field(exclude=True)
        at: int = Field(exclude=True)
        celsius: Decimal

    return table, Device, Reading


@pytest.fixture
def script_table(endpoint_url: str, table_name: str) -> Iterator[Any]:
    """The table, created and written by boto3 alone, as the script does."""
    client = boto3.client("dynamodb", endpoint_url=endpoint_url, region_name="us-east-1")
    create_and_wait(client, table_request(table_name, "pk", "sk"))
    for device in DEVICES:
        pk = {"S": f"DEVICE#{device}"}
        client.put_item(
            TableName=table_name,
            Item={"pk": pk, "sk": {"S": "META"}, "label": {"S": f"sensor {device}"}},
        )
        for n in range(5):
            at = 1_700_000_000 + 60 * n
            client.put_item(
                TableName=table_name,
                Item={
                    "pk": pk,
                    "sk": {"S": f"AT#{at:010d}"},
                    "celsius": {"N": f"{device % 7}.{n}"},
                },
            )
    try:
        yield client
    finally:
        client.delete_table(TableName=table_name)


def test_lsiorm_adopts_reads_and_queries_a_table_a_script_wrote(
    session: Session, table_name: str, script_table: Any
) -> None:
    table, Device, Reading = lsiorm_devices(table_name)
    report = session.adopt(table, segments=2)
    assert report.accounted, str(report)
    assert {n: (e.items, e.parsed) for n, e in report.entities.items()} == {
        "Device": (3, 3),
        "Reading": (15, 15),
    }
    device = session.get(Device, {"device_id": 42})
    assert (device.device_id, device.label) == (42, "sensor 42")  # type: ignore[union-attr]
    rows = session.all(query(Reading).where(device_id=42, at=gt(1_700_000_060)))
    assert [(r.device_id, r.at, r.celsius) for r in rows] == [
        (42, 1_700_000_000 + 60 * n, Decimal(f"0.{n}")) for n in (2, 3, 4)
    ]
    both = session.all(query(Device, Reading).where(device_id=3))
    assert [type(r).__name__ for r in both] == ["Reading"] * 5 + ["Device"]


def test_the_script_reads_back_what_lsiorm_writes(
    session: Session, table_name: str, script_table: Any
) -> None:
    _, Device, Reading = lsiorm_devices(table_name)
    session.update(Device, {"device_id": 100}, set={"label": "roof"})
    session.put(Reading(device_id=100, at=1_800_000_000, celsius=Decimal("21.5")))
    got = script_table.get_item(
        TableName=table_name, Key={"pk": {"S": "DEVICE#100"}, "sk": {"S": "META"}}
    )["Item"]
    assert got == {"pk": {"S": "DEVICE#100"}, "sk": {"S": "META"}, "label": {"S": "roof"}}
    new = script_table.get_item(
        TableName=table_name, Key={"pk": {"S": "DEVICE#100"}, "sk": {"S": "AT#1800000000"}}
    )["Item"]
    # As the script writes it: the values only in the keys, no type attribute.
    assert new == {
        "pk": {"S": "DEVICE#100"},
        "sk": {"S": "AT#1800000000"},
        "celsius": {"N": "21.5"},
    }
