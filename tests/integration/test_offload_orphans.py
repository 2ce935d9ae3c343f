"""Offloaded values under faults: the object before the item (no dangling reference on any
failure), and the orphan collection (every orphan deleted, no referenced object)."""

from __future__ import annotations

import os
import random
from dataclasses import replace
from typing import Any

import pytest

from lsiorm import Keyring, LsiormError, Session
from lsiorm._model.sealing import Binding, is_envelope, object_key, parse_envelope
from lsiorm.testing import FaultInjector
from support.protection import Patients, objects


def _referenced(session: Session, patients: Patients, keyring: Keyring) -> set[str]:
    """The object keys the stored items reference (read raw, by the client)."""
    table = patients.table.name
    found = set()
    for item in session.client.scan(TableName=table, ConsistentRead=True)["Items"]:
        for attr in ("scan", "big"):
            av = item.get(attr)
            if av is not None and is_envelope(av):
                envelope = parse_envelope(av["B"], Binding(table, {}, attr))
                if envelope.is_reference:
                    found.add(object_key(keyring.prefix, table, envelope.digest))
    return found


def test_orphans_of_overwrites_and_deletes_are_collected(
    endpoint_url: str, patients: Patients, keyring: Keyring, s3: Any
) -> None:
    Patient = patients.Patient
    kwargs = {"endpoint_url": endpoint_url, "region_name": "us-east-1"}
    with Session(**kwargs, keyring=replace(keyring, grace_seconds=0)) as session:
        for n in range(6):
            session.put(Patient(pid=str(n), name="x", email=f"{n}@x", scan=os.urandom(3000)))
        session.put(Patient(pid="0", name="x", email="0@x", scan=os.urandom(3000)))  # overwrite
        session.update(Patient, pid="1", set={"scan": os.urandom(3000)})
        session.delete(Patient, pid="2")
        session.update(Patient, pid="3", set={"scan": None})
        assert len(objects(s3, keyring)) == 8  # 6 puts, an overwrite and an update
        dry = session.collect_orphans(patients.table, dry_run=True)
        assert (dry.orphans, dry.deleted) == (4, 0)
        assert len(objects(s3, keyring)) == 8  # marks dropped, nothing deleted
        report = session.collect_orphans(patients.table, segments=2)
        assert (report.objects, report.referenced, report.deleted) == (8, 4, 4), report
        assert set(objects(s3, keyring)) == _referenced(session, patients, keyring)
        for n in (0, 1, 4, 5):
            assert len(session.get(Patient, pid=str(n), consistent=True).scan) == 3000
    with Session(**kwargs, keyring=keyring) as careful:  # the default grace: an hour
        careful.put(Patient(pid="4", name="x", email="4@x", scan=os.urandom(3000)))
        kept = careful.collect_orphans(patients.table)
        assert (kept.young, kept.deleted) == (1, 0)


def test_no_dangling_reference_under_faults_and_every_orphan_collected(
    endpoint_url: str, patients: Patients, keyring: Keyring, s3: Any
) -> None:
    Patient = patients.Patient
    rng = random.Random(11)
    kwargs = {"endpoint_url": endpoint_url, "region_name": "us-east-1"}
    written: dict[str, bytes] = {}
    with Session(**kwargs, keyring=replace(keyring, grace_seconds=0)) as session:
        with FaultInjector(seed=5) as faults:
            # 30% of the requests of both services meet a fault: 20% lose their answer after
            # being applied, then 12.5% of the rest fail with a 500 before being applied.
            chosen = ["PutItem", "GetItem", "DeleteItem", "PutObject", "GetObject"]
            faults.lose_answer([*chosen, "GenerateDataKey", "Decrypt"], rate=0.2)
            faults.server_error(chosen, rate=0.125)
            for step in range(40):
                pid = str(rng.randrange(8))
                scan = os.urandom(rng.randrange(1500, 4000))
                try:
                    if step % 5 == 4:
                        session.delete(Patient, pid=pid)
                        written.pop(pid, None)
                    else:
                        session.put(Patient(pid=pid, name="x", email=f"{pid}@x", scan=scan))
                        written[pid] = scan
                except LsiormError:
                    written.pop(pid, None)  # its outcome is unknown: checked below as stored
            injected = faults.stats["faults"]
        assert injected >= 15  # about 30% of the requests met a fault
        # No dangling reference: every item stored reads back whole.
        for item in session.client.scan(TableName=patients.table.name, ConsistentRead=True)[
            "Items"
        ]:
            pid = item["pid"]["S"]
            got = session.get(Patient, pid=pid, consistent=True)
            assert got is not None
            if pid in written:
                assert got.scan == written[pid]
        referenced = _referenced(session, patients, keyring)
        assert referenced <= set(objects(s3, keyring))
        with FaultInjector(seed=9) as faults:
            gc = ["DeleteObject", "ListObjectsV2", "PutObject", "GetObject", "Scan"]
            faults.lose_answer(gc, rate=0.2)
            faults.server_error(gc, rate=0.125)
            report = session.collect_orphans(patients.table, segments=2)
        assert report.deleted + report.referenced == report.objects
        assert set(objects(s3, keyring)) == referenced  # every orphan gone, none referenced
        for pid in written:
            assert session.get(Patient, pid=pid, consistent=True).scan == written[pid]


@pytest.mark.parametrize("operation", ["PutObject", "GenerateDataKey"])
def test_a_write_whose_object_or_key_fails_writes_no_item(
    endpoint_url: str, patients: Patients, keyring: Keyring, operation: str
) -> None:
    Patient = patients.Patient
    with Session(endpoint_url=endpoint_url, region_name="us-east-1", keyring=keyring) as session:
        with FaultInjector() as faults:
            faults.server_error(operation, times=None)
            with pytest.raises(LsiormError):
                session.put(Patient(pid="1", name="x", email="1@x", scan=os.urandom(5000)))
            assert "PutItem" not in faults.operations
        assert session.get(Patient, pid="1", consistent=True) is None
