"""Declarations with protected fields, and the keyring and sessions their tests run with.

KMS and S3 are moto's, served by the moto engine (``lsiorm_endpoints("moto")``) whatever engine
holds the tables; each test gets a new KMS key and bucket (`lsiorm.testing.local_keyring`).
Tables are declared fresh per test (``declare_patients``), so tests never share classes.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import date, datetime, timezone
from decimal import Decimal
from enum import Enum
from typing import Annotated, Any

import boto3
import pytest
from pydantic import BaseModel, Field

from lsiorm import (
    Compressed,
    Encrypted,
    Entity,
    GlobalIndex,
    KeyAttribute,
    Keyring,
    Offloaded,
    Projection,
    Session,
    Table,
)
from lsiorm.testing import local_credentials, local_keyring

UTC = timezone.utc


class Color(str, Enum):
    RED = "red"
    BLUE = "blue"


class Address(BaseModel):
    street: str
    zip: int


@dataclass
class Patients:
    """A fresh table and its entities with protected fields."""

    table: Table
    Patient: type[Entity]
    Record: type[Entity]


def patients_table(name: str | None = None) -> Table:
    return Table(
        name or f"pt_{uuid.uuid4().hex[:10]}",
        "PK",
        "SK",
        global_indexes=[
            GlobalIndex("ByEmail", KeyAttribute("GSI1PK"), KeyAttribute("GSI1SK"), Projection.all())
        ],
    )


def declare_patients(table: Table | None = None, *, beacon_bits: int = 16) -> Patients:
    """A Patient with an encrypted email (with a beacon in the GSI), an encrypted SSN and
    birthday, compressed notes and an encrypted, offloaded scan; a Record of every field type,
    each encrypted."""
    table = table or patients_table()

    class Patient(
        Entity,
        table=table,
        keys={"PK": "P#{pid}", "SK": "P", "GSI1PK": "EMAIL#{email}", "GSI1SK": "P#{pid}"},
    ):
        pid: str
        name: str
        email: Annotated[str, Encrypted(beacon_bits=beacon_bits)]
        ssn: Annotated[str | None, Encrypted()] = None
        birthday: Annotated[date | None, Encrypted()] = None
        notes: Annotated[str, Compressed()] = ""
        scan: Annotated[bytes | None, Encrypted(), Compressed(), Offloaded(threshold=1024)] = None
        visits: int = 0

    class Record(Entity, table=table, keys={"PK": "R#{rid}", "SK": "R"}):
        rid: str
        text: Annotated[str, Encrypted()] = ""
        number: Annotated[int, Encrypted()] = 0
        real: Annotated[float, Encrypted()] = 0.0
        exact: Annotated[Decimal, Encrypted()] = Decimal(0)
        flag: Annotated[bool, Encrypted()] = False
        blob: Annotated[bytes, Encrypted()] = b""
        moment: Annotated[datetime | None, Encrypted()] = None
        color: Annotated[Color, Encrypted()] = Color.RED
        tags: Annotated[set[str], Encrypted()] = Field(default_factory=set)
        words: Annotated[list[str], Encrypted()] = Field(default_factory=list)
        counts: Annotated[dict[str, int], Encrypted()] = Field(default_factory=dict)
        address: Annotated[Address | None, Encrypted()] = None
        big: Annotated[bytes, Offloaded(threshold=2000)] = b""

    return Patients(table, Patient, Record)


@pytest.fixture
def keyring(lsiorm_endpoints: Callable[[str], str]) -> Keyring:
    """A keyring on moto's KMS and S3: a new key and bucket for this test."""
    return local_keyring(lsiorm_endpoints("moto"))


@pytest.fixture
def s3(lsiorm_endpoints: Callable[[str], str]) -> Any:
    url = lsiorm_endpoints("moto")
    return boto3.client("s3", endpoint_url=url, region_name="us-east-1", **local_credentials(url))


@pytest.fixture
def kms(lsiorm_endpoints: Callable[[str], str]) -> Any:
    url = lsiorm_endpoints("moto")
    return boto3.client("kms", endpoint_url=url, region_name="us-east-1", **local_credentials(url))


@pytest.fixture
def patients(endpoint_url: str) -> Iterator[Patients]:
    """A fresh patients table, created on the backend and deleted after the test."""
    declared = declare_patients()
    with Session(endpoint_url=endpoint_url, region_name="us-east-1") as admin:
        admin.create_table(declared.table)
        try:
            yield declared
        finally:
            admin.delete_table(declared.table, wait=False)


@pytest.fixture
def protected(endpoint_url: str, keyring: Keyring) -> Iterator[Session]:
    """A session on the backend with the test's keyring."""
    with Session(endpoint_url=endpoint_url, region_name="us-east-1", keyring=keyring) as s:
        yield s


def objects(s3: Any, keyring: Keyring) -> dict[str, Any]:
    """The objects under the keyring's prefix: key -> LastModified."""
    out = {}
    for page in s3.get_paginator("list_objects_v2").paginate(
        Bucket=keyring.bucket, Prefix=keyring.prefix
    ):
        for entry in page.get("Contents") or ():
            out[entry["Key"]] = entry["LastModified"]
    return out
