"""Protected fields, continued: beacon queries against brute force, no plaintext in logs, spans,
errors or reprs, sizes counted as stored, and stream records opened."""

from __future__ import annotations

import logging
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lsiorm import (
    Delete,
    LsiormError,
    Put,
    Session,
    Update,
    dry_run_put,
    item_size,
    query,
    stored_size,
    stream_handler,
)
from lsiorm._model.beacons import beacon_scope
from support.otel import Recording
from support.protection import Patients, declare_patients, patients_table

SECRETS = ("zq-secret-email@example.org", "QQSSN-77731", "QQSCAN")
NOTES = "QQNOTE-5512"  # compressed, not encrypted: it may show (a repr shows it)


def test_beacon_queries_equal_brute_force(endpoint_url: str, keyring: Any) -> None:
    # 4-bit beacons: 16 of them for up to 40 values, so candidates collide and are dropped.
    declared = declare_patients(patients_table(), beacon_bits=4)
    Patient = declared.Patient
    kwargs = {"endpoint_url": endpoint_url, "region_name": "us-east-1"}
    with Session(**kwargs, keyring=keyring) as session:
        session.create_table(declared.table)
        try:
            emails = [f"user{n}@x.org" for n in range(40)]
            stored: dict[str, Any] = {}

            @settings(
                max_examples=12,
                suppress_health_check=[HealthCheck.function_scoped_fixture],
            )
            @given(
                writes=st.lists(
                    st.tuples(st.integers(0, 29), st.sampled_from(emails)), max_size=12
                ),
                asked=st.sampled_from(emails),
            )
            def check(writes: list[tuple[int, str]], asked: str) -> None:
                for pid, email in writes:
                    patient = Patient(pid=str(pid), name="n", email=email)
                    session.put(patient)
                    stored[str(pid)] = patient
                expected = sorted(
                    (p for p in stored.values() if p.email == asked), key=lambda p: p.pid
                )
                # A GSI is eventually consistent; both local engines apply a write at once.
                found = sorted(session.all(query(Patient).where(email=asked)), key=lambda p: p.pid)
                assert found == expected
                assert session.count(query(Patient).where(email=asked)) == len(expected)

            check()
        finally:
            session.delete_table(declared.table, wait=False)


def test_no_plaintext_in_logs_spans_errors_or_reprs(
    endpoint_url: str, patients: Patients, keyring: Any, caplog: pytest.LogCaptureFixture
) -> None:
    Patient = patients.Patient
    recording = Recording()
    email, ssn, scan = SECRETS
    texts: list[str] = []
    with (
        caplog.at_level(logging.DEBUG),
        Session(
            endpoint_url=endpoint_url,
            region_name="us-east-1",
            keyring=keyring,
            telemetry=recording.telemetry,
        ) as session,
    ):
        big = scan.encode() * 500 + os.urandom(2000)
        secret = Patient(pid="1", name="n", email=email, ssn=ssn, notes=NOTES, scan=big)
        texts += [repr(secret), str(secret), repr(session.put(secret))]
        texts.append(repr(session.get(Patient, pid="1", consistent=True)))
        texts.append(repr(session.all(query(Patient).where(email=email))))
        texts.append(str(query(Patient).where(pid="1").explain()))
        with beacon_scope(session.ctx.protection):
            texts.append(str(query(Patient).where(email=email).explain()))
        texts.append(repr(session.update(Patient, pid="1", set={"ssn": ssn + "2"})))
        session.batch_write(puts=[Patient(pid="2", name="n", email=email, ssn=ssn)])
        texts.append(repr(session.batch_get(Patient, [{"pid": "2"}])))
        session.transact_write([Put(Patient(pid="3", name="n", email=email, ssn=ssn))])
        session.transact_write([Update(Patient, {"pid": "3"}, set={"ssn": ssn})])
        session.transact_write([Delete(Patient, {"pid": "3"})])
        for attempt in (
            lambda: session.put(Patient(pid="1", name="n", email=email, ssn=ssn), create_only=True),
            lambda: session.put(Patient(pid="4", name="n", email=email, ssn=ssn * 40_000)),
            lambda: session.update(Patient, pid="1", if_not_exists={"ssn": ssn}),
        ):
            with pytest.raises(LsiormError) as caught:
                attempt()
            texts += [str(caught.value), repr(caught.value), repr(caught.value.__dict__)]
        texts.append(repr(session.delete(Patient, pid="1")))
    texts += [r.getMessage() for r in caplog.records]
    for span in recording.spans():
        texts += [span.name, repr(dict(span.attributes or {}))]
        texts += [repr(dict(event.attributes or {})) for event in span.events]
    assert caplog.records
    assert recording.spans()
    for text in texts:
        for value in SECRETS:
            assert value not in text, (value, text)


def test_sizes_count_what_is_stored(protected: Session, patients: Patients) -> None:
    Patient = patients.Patient
    patient = Patient(
        pid="1", name="n", email="e@x.org", ssn="s" * 300, notes="abc" * 30_000,
        scan=os.urandom(50_000),
    )  # fmt: skip
    protected.put(patient)
    raw = protected.client.get_item(
        TableName=patients.table.name, Key={"PK": {"S": "P#1"}, "SK": {"S": "P"}}
    )["Item"]
    with beacon_scope(protected.ctx.protection):  # the data key the session has
        assert stored_size(patient) == item_size(raw)
    assert stored_size(patient) < 2000  # the notes compressed, the scan a reference
    assert dry_run_put(patient, assume_new=True).table_units <= 2.0  # not 140 KB's worth


def test_a_stream_handler_with_a_keyring_opens_the_images(
    protected: Session, patients: Patients
) -> None:
    Patient = patients.Patient
    seen: list[Any] = []
    alice = Patient(pid="1", name="A", email="a@x.org", ssn="s-1", scan=os.urandom(4000))
    protected.put(alice)
    raw = protected.client.get_item(
        TableName=patients.table.name, Key={"PK": {"S": "P#1"}, "SK": {"S": "P"}}
    )["Item"]
    record = {
        "eventID": "1",
        "eventName": "INSERT",
        "dynamodb": {
            "Keys": {"PK": raw["PK"], "SK": raw["SK"]},
            "NewImage": raw,
            "SequenceNumber": "100",
        },
    }
    handler = stream_handler(patients.table, session=protected)(seen.append)
    assert handler({"Records": [record]}) == {"batchItemFailures": []}
    assert seen[0].new == alice
    blind = stream_handler(patients.table)(seen.append)  # no keyring: the record fails
    assert blind({"Records": [record]}) == {"batchItemFailures": [{"itemIdentifier": "100"}]}
