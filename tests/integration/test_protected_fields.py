"""Protected fields on both engines, with moto's KMS and S3: what is stored, what reads give back,
and every write path (put, update, batch, transactions, delete) sealing what it writes."""

from __future__ import annotations

import os
from datetime import datetime, timezone
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lsiorm import (
    ItemTooLargeError,
    Keyring,
    ProtectionError,
    Session,
    ValidationError,
    query,
)
from lsiorm._model.sealing import MAGIC, REFERENCE_BYTES
from support.protection import Address, Color, Patients, objects

UTC = timezone.utc


def raw(session: Session, patients: Patients, pk: str, sk: str = "P") -> dict[str, Any]:
    return session.client.get_item(
        TableName=patients.table.name,
        Key={"PK": {"S": pk}, "SK": {"S": sk}},
        ConsistentRead=True,
    )["Item"]


def test_stored_values_are_envelopes_and_read_back_plain(
    protected: Session, patients: Patients
) -> None:
    Patient = patients.Patient
    alice = Patient(pid="1", name="Alice", email="alice@example.com", ssn="ssn-QXZW")
    protected.put(alice)
    stored = raw(protected, patients, "P#1")
    for attr in ("email", "ssn"):
        assert bytes(stored[attr]["B"]).startswith(MAGIC)
        assert b"alice" not in bytes(stored[attr]["B"])
        assert b"QXZW" not in bytes(stored[attr]["B"])
    assert stored["name"] == {"S": "Alice"}  # a plain field stays plain
    assert stored["GSI1PK"]["S"].startswith("EMAIL#")
    assert "alice" not in stored["GSI1PK"]["S"]
    assert protected.get(Patient, pid="1", consistent=True) == alice


def test_every_field_type_reads_back_equal(protected: Session, patients: Patients) -> None:
    Record = patients.Record

    @settings(max_examples=15, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(
        text=st.text(max_size=30),
        number=st.integers(min_value=-(10**30), max_value=10**30),
        real=st.floats(allow_nan=False, allow_infinity=False, width=32),
        exact=st.decimals(allow_nan=False, allow_infinity=False, places=4, max_value=10**20),
        flag=st.booleans(),
        blob=st.binary(max_size=40),
        tags=st.sets(st.text(min_size=1, max_size=5), max_size=4),
        words=st.lists(st.text(max_size=5), max_size=4),
        counts=st.dictionaries(st.text(min_size=1, max_size=4), st.integers(), max_size=3),
        big=st.binary(min_size=0, max_size=5000),
    )
    def round_trip(**fields: Any) -> None:
        record = Record(
            rid="r",
            moment=datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=UTC),
            color=Color.BLUE,
            address=Address(street="Main", zip=1234),
            **fields,
        )
        protected.put(record)
        assert protected.get(Record, rid="r", consistent=True) == record

    round_trip()


def test_a_large_offloaded_value_is_counted_as_its_reference(
    protected: Session, patients: Patients, keyring: Keyring, s3: Any
) -> None:
    Patient = patients.Patient
    scan = os.urandom(600_000)  # over 400 KB: only its 46-byte reference is in the item
    protected.put(Patient(pid="2", name="Bob", email="bob@example.com", scan=scan))
    stored = raw(protected, patients, "P#2")
    assert len(bytes(stored["scan"]["B"])) == REFERENCE_BYTES == 46
    keys = objects(s3, keyring)
    assert len(keys) == 1
    assert next(iter(keys)).startswith(f"lsiorm/{patients.table.name}/")
    assert protected.get(Patient, pid="2", consistent=True).scan == scan
    # A value not offloaded counts whole, as stored: over 400 KB it is refused before any write.
    with pytest.raises(ItemTooLargeError) as caught:
        protected.put(Patient(pid="3", name="C", email="c@x", ssn="x" * 500_000))
    assert caught.value.rule == "item.max-400kb"
    assert "xxxx" not in str(caught.value)
    assert protected.get(Patient, pid="3", consistent=True) is None


def test_updates_batches_and_transactions_seal_what_they_write(
    protected: Session, patients: Patients
) -> None:
    Patient = patients.Patient
    protected.put(Patient(pid="1", name="A", email="a@x.org"))
    updated = protected.update(Patient, pid="1", set={"ssn": "999", "email": "a2@x.org"})
    assert updated.ssn == "999"
    assert updated.email == "a2@x.org"
    stored = raw(protected, patients, "P#1")
    assert bytes(stored["ssn"]["B"]).startswith(MAGIC)
    assert b"999" not in bytes(stored["ssn"]["B"])
    assert protected.all(query(Patient).where(email="a2@x.org")) == [updated]
    assert protected.all(query(Patient).where(email="a@x.org")) == []
    protected.update(Patient, pid="1", remove=["ssn"])
    assert "ssn" not in raw(protected, patients, "P#1")

    batch = [Patient(pid=str(n), name=f"n{n}", email=f"{n}@x.org", ssn=f"s{n}") for n in range(5)]
    protected.batch_write(puts=batch[1:])
    for p in batch[1:]:
        assert bytes(raw(protected, patients, f"P#{p.pid}")["ssn"]["B"]).startswith(MAGIC)
    got = protected.batch_get(Patient, [{"pid": str(n)} for n in range(1, 5)])
    assert sorted(got, key=lambda p: p.pid) == batch[1:]

    from lsiorm import Put, Update

    protected.transact_write(
        [
            Put(Patient(pid="9", name="t", email="t@x.org", ssn="tx")),
            Update(Patient, {"pid": "2"}, set={"ssn": "changed"}),
        ]
    )
    assert protected.get(Patient, pid="9", consistent=True).ssn == "tx"
    assert protected.get(Patient, pid="2", consistent=True).ssn == "changed"
    assert bytes(raw(protected, patients, "P#9")["ssn"]["B"]).startswith(MAGIC)
    deleted = protected.delete(Patient, pid="9")
    assert deleted is not None
    assert deleted.ssn == "tx"


def test_bytes_that_look_like_an_envelope_are_sealed_as_any_value(
    protected: Session, patients: Patients
) -> None:
    Record = patients.Record
    protected.put(Record(rid="a", blob=b"first-secret"))
    envelope = bytes(raw(protected, patients, "R#a", "R")["blob"]["B"])
    lookalike = MAGIC + b"\x01\x00second-secret"
    # A value a user gives is data, whatever its first bytes: never stored as it is (where it
    # would be plaintext in an encrypted field, or another item's ciphertext passed off).
    record = Record(rid="b", blob=lookalike, big=MAGIC)
    protected.put(record)
    stored = raw(protected, patients, "R#b", "R")
    assert b"second-secret" not in bytes(stored["blob"]["B"])
    assert protected.get(Record, rid="b", consistent=True) == record
    protected.put(Record(rid="b", blob=envelope))
    assert bytes(raw(protected, patients, "R#b", "R")["blob"]["B"]) != envelope
    assert protected.get(Record, rid="b", consistent=True).blob == envelope


def test_a_ciphertext_copied_to_another_item_or_changed_is_refused(
    protected: Session, patients: Patients
) -> None:
    Patient = patients.Patient
    protected.put(Patient(pid="1", name="A", email="a@x.org", ssn="first-secret"))
    protected.put(Patient(pid="2", name="B", email="b@x.org", ssn="second"))
    table = patients.table.name
    stolen = raw(protected, patients, "P#1")["ssn"]
    protected.client.update_item(
        TableName=table,
        Key={"PK": {"S": "P#2"}, "SK": {"S": "P"}},
        UpdateExpression="SET ssn = :v",
        ExpressionAttributeValues={":v": stolen},
    )
    with pytest.raises(ProtectionError) as caught:
        protected.get(Patient, pid="2", consistent=True)
    assert caught.value.rule == "protect.integrity"
    assert "first-secret" not in str(caught.value)
    tampered = bytearray(bytes(raw(protected, patients, "P#1")["ssn"]["B"]))
    tampered[-1] ^= 1
    protected.client.update_item(
        TableName=table,
        Key={"PK": {"S": "P#1"}, "SK": {"S": "P"}},
        UpdateExpression="SET ssn = :v",
        ExpressionAttributeValues={":v": {"B": bytes(tampered)}},
    )
    with pytest.raises(ProtectionError):
        protected.get(Patient, pid="1", consistent=True)
    truncated = bytes(tampered)[:30]
    protected.client.update_item(
        TableName=table,
        Key={"PK": {"S": "P#1"}, "SK": {"S": "P"}},
        UpdateExpression="SET ssn = :v",
        ExpressionAttributeValues={":v": {"B": truncated}},
    )
    with pytest.raises(ProtectionError):
        protected.get(Patient, pid="1", consistent=True)


def test_refusals_come_before_any_request(protected: Session, patients: Patients) -> None:
    from lsiorm import between, cond
    from lsiorm.testing import FaultInjector

    Patient = patients.Patient
    with FaultInjector() as record:
        with pytest.raises(ValidationError) as caught:
            protected.all(query(Patient).where(email=between("a", "b")))
        assert caught.value.rule == "encrypted.range"
        with pytest.raises(ValidationError) as caught:
            protected.all(query(Patient).where(ssn="1"))
        assert caught.value.rule == "encrypted.no-beacon"
        with pytest.raises(ValidationError) as caught:
            protected.all(query(Patient).where(pid="1").filter(cond("ssn") == "1"))
        assert caught.value.rule == "encrypted.condition"
        with pytest.raises(ValidationError) as caught:
            protected.update(Patient, pid="1", set={"name": "x"}, condition=cond("ssn") == "1")
        assert caught.value.rule == "encrypted.condition"
        with pytest.raises(ValidationError) as caught:
            protected.update(Patient, pid="1", if_not_exists={"ssn": "1"})
        assert caught.value.rule == "protect.update"
    assert record.requests == []


def test_keyring_modes_and_rotation(
    endpoint_url: str, patients: Patients, keyring: Keyring, kms: Any
) -> None:
    from dataclasses import replace

    Patient = patients.Patient
    kwargs = {"endpoint_url": endpoint_url, "region_name": "us-east-1"}
    with Session(**kwargs, keyring=replace(keyring, mode="encrypt-only")) as writer:
        writer.put(Patient(pid="1", name="A", email="a@x.org", ssn="old-key"))
        with pytest.raises(ProtectionError) as caught:
            writer.get(Patient, pid="1", consistent=True)
        assert caught.value.rule == "protect.mode"
    with Session(**kwargs, keyring=replace(keyring, mode="decrypt-only")) as reader:
        assert reader.get(Patient, pid="1", consistent=True).ssn == "old-key"
        with pytest.raises(ProtectionError) as caught:
            reader.put(Patient(pid="2", name="B", email="b@x.org", ssn="x"))
        assert caught.value.rule == "protect.mode"
    # Rotation to another KMS key: new values are wrapped by it, old ones still read.
    new_key = kms.create_key()["KeyMetadata"]["Arn"]
    with Session(**kwargs, keyring=replace(keyring, kms_key_id=new_key)) as rotated:
        rotated.put(Patient(pid="3", name="C", email="c@x.org", ssn="new-key"))
        assert rotated.get(Patient, pid="1", consistent=True).ssn == "old-key"
        assert rotated.get(Patient, pid="3", consistent=True).ssn == "new-key"
    # A keyring that only accepts the new key refuses values wrapped by the old one.
    only_new = replace(keyring, kms_key_id=new_key, decrypt_key_ids=(new_key,))
    with Session(**kwargs, keyring=only_new) as strict:
        assert strict.get(Patient, pid="3", consistent=True).ssn == "new-key"
        with pytest.raises(ProtectionError) as caught:
            strict.get(Patient, pid="1", consistent=True)
        assert caught.value.rule == "protect.kms-key"


async def test_the_async_session_seals_and_opens_alike(
    endpoint_url: str, patients: Patients, keyring: Keyring
) -> None:
    from lsiorm import AsyncSession

    Patient = patients.Patient
    async with AsyncSession(
        endpoint_url=endpoint_url, region_name="us-east-1", keyring=keyring
    ) as session:
        bob = Patient(pid="7", name="Bob", email="bob@x.org", ssn="s", scan=os.urandom(5000))
        await session.put(bob)
        assert await session.get(Patient, pid="7", consistent=True) == bob
        assert await session.all(query(Patient).where(email="bob@x.org")) == [bob]
