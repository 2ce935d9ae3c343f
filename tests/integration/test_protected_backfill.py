"""Turning encryption on for a field of an existing entity, and back-filling the items already
stored, while a writer goes on: no write lost, every value sealed at the end; `adopt` sorts the
table's items before (plain values) and after (sealed ones) alike; a relief to a file keeps
them sealed."""

from __future__ import annotations

import random
import threading
from typing import Annotated, Any

from lsiorm import Encrypted, Entity, Keyring, Offloaded, Session, Table
from lsiorm._io.jsonlines import read_relief_file
from lsiorm._model.sealing import MAGIC, REFERENCE_BYTES
from support.protection import objects

ITEMS = 30


def _declare(table_name: str, *, protected: bool) -> tuple[Table, type[Entity]]:
    table = Table(table_name, "PK", "SK")
    if protected:

        class Patient(Entity, table=table, keys={"PK": "P#{pid}", "SK": "P"}):
            pid: str
            name: str
            ssn: Annotated[str | None, Encrypted(accept_plaintext=True)] = None
            scan: Annotated[
                bytes | None, Encrypted(accept_plaintext=True), Offloaded(threshold=512)
            ] = None
            visits: int = 0

        return table, Patient

    class Plain(Entity, table=table, keys={"PK": "P#{pid}", "SK": "P"}, type_name="Patient"):
        pid: str
        name: str
        ssn: str | None = None
        scan: bytes | None = None
        visits: int = 0

    return table, Plain


def test_encryption_turned_on_and_back_filled_under_a_writer(
    endpoint_url: str, table_name: str, keyring: Keyring, s3: Any
) -> None:
    kwargs = {"endpoint_url": endpoint_url, "region_name": "us-east-1"}
    # The release before: ssn and scan stored plain.
    old_table, Plain = _declare(table_name, protected=False)
    with Session(**kwargs) as plain:
        plain.create_table(old_table)
        for n in range(ITEMS):
            plain.put(Plain(pid=str(n), name=f"n{n}", ssn=f"ssn-{n:04d}", scan=bytes([n]) * 900))
    # This release: both fields protected, plain values still read while the back-fill runs.
    table, Patient = _declare(table_name, protected=True)
    added: dict[str, int] = {}
    created: list[str] = []
    stop = threading.Event()
    errors: list[BaseException] = []

    def writer() -> None:
        rng = random.Random(7)
        try:
            with Session(**kwargs, keyring=keyring) as session:
                n = 0
                while not stop.is_set() and n < 60:
                    pid = str(rng.randrange(ITEMS))
                    session.update(Patient, pid=pid, add={"visits": 1})
                    added[pid] = added.get(pid, 0) + 1
                    if n % 10 == 0:
                        new = f"new{n}"
                        session.put(Patient(pid=new, name=new, ssn=f"s-{new}", scan=b"z" * 700))
                        created.append(new)
                    n += 1
        except BaseException as exc:  # reported by the test
            errors.append(exc)

    with Session(**kwargs, keyring=keyring) as session:
        adopted = session.adopt(Patient)  # the plain values parse (accept_plaintext)
        assert adopted.accounted, str(adopted)
        assert adopted.entities["Patient"].parsed == ITEMS
        thread = threading.Thread(target=writer)
        thread.start()
        try:
            report = session.backfill(Patient, segments=2)
        finally:
            stop.set()
            thread.join()
        assert not errors, errors
        assert report.failed == [], report
        assert report.rewritten == ITEMS, report
        again = session.backfill(Patient, segments=2)  # nothing left to seal
        assert again.rewritten == 0, again
        scanned = session.client.scan(TableName=table.name, ConsistentRead=True)["Items"]
        raw = [i for i in scanned if i.get("_type") == {"S": "Patient"}]  # not the job's ledger
        assert len(raw) == ITEMS + len(created)
        for item in raw:
            assert bytes(item["ssn"]["B"]).startswith(MAGIC)
            assert len(bytes(item["scan"]["B"])) == REFERENCE_BYTES
        for n in range(ITEMS):
            got = session.get(Patient, pid=str(n), consistent=True)
            assert got.ssn == f"ssn-{n:04d}"
            assert got.scan == bytes([n]) * 900
            assert got.visits == added.get(str(n), 0)  # no increment lost
        adopted = session.adopt(Patient)  # and so do the sealed ones
        assert adopted.accounted, str(adopted)
        assert adopted.entities["Patient"].parsed == ITEMS + len(created)
    assert len(objects(s3, keyring)) >= ITEMS


def test_a_relief_to_a_file_keeps_protected_values_sealed(
    endpoint_url: str, table_name: str, keyring: Keyring, tmp_path: Any
) -> None:
    table = Table(table_name, "PK", "SK")

    class Visit(Entity, table=table, keys={"PK": "P#{pid}", "SK": "V#{n:03d}"}):
        pid: str
        n: int
        note: Annotated[str, Encrypted()]

    target = tmp_path / "visits.jsonl"
    kwargs = {"endpoint_url": endpoint_url, "region_name": "us-east-1", "keyring": keyring}
    with Session(**kwargs) as session:
        session.create_table(table)
        visits = [Visit(pid="1", n=n, note=f"private-note-{n}") for n in range(6)]
        session.batch_write(puts=visits)
        report = session.relieve_collection(table, "P#1", entity=Visit, to_file=target)
        assert (report.moved, report.failed) == (6, []), report
        assert session.get(Visit, pid="1", n=0, consistent=True) is None
        text = target.read_text()
        assert "private-note" not in text  # the file holds what the table held: ciphertext
        # Put back as they are, the lines are the very items: they open in the table again.
        for line in read_relief_file(target):
            session.client.put_item(TableName=table_name, Item=line)
        for visit in visits:
            assert session.get(Visit, pid="1", n=visit.n, consistent=True) == visit


def test_a_relief_to_another_table_never_writes_plaintext(
    endpoint_url: str, table_name: str, keyring: Keyring
) -> None:
    table = Table(table_name, "PK", "SK")
    bare = Table(f"{table_name}_bare", "PK", "SK")  # declares nothing: copies stay as stored
    declared = Table(f"{table_name}_arch", "PK", "SK")  # protects them: sealed for itself

    def visit(on: Table) -> type[Entity]:
        class Visit(Entity, table=on, keys={"PK": "P#{pid}", "SK": "V#{n:03d}"}):
            pid: str
            n: int
            note: Annotated[str, Encrypted()]

        return Visit

    Visit, Archived = visit(table), visit(declared)
    kwargs = {"endpoint_url": endpoint_url, "region_name": "us-east-1", "keyring": keyring}
    with Session(**kwargs) as session:
        for each in (table, bare, declared):
            session.create_table(each)
        visits = [Visit(pid=pid, n=n, note=f"private-{pid}-{n}") for pid in "12" for n in range(4)]
        session.batch_write(puts=visits)
        to_bare = session.relieve_collection(table, "P#1", entity=Visit, to_table=bare)
        to_declared = session.relieve_collection(table, "P#2", entity=Visit, to_table=declared)
        assert (to_bare.moved, to_bare.failed, to_declared.moved, to_declared.failed) == (
            4,
            [],
            4,
            [],
        )
        for each in (bare, declared):
            items = session.client.scan(TableName=each.name, ConsistentRead=True)["Items"]
            copies = [i for i in items if i["PK"]["S"].startswith("P#")]
            assert len(copies) == 4
            for copy in copies:
                assert bytes(copy["note"]["B"]).startswith(MAGIC)
                assert b"private" not in bytes(copy["note"]["B"])
        for n in range(4):
            assert session.get(Archived, pid="2", n=n, consistent=True) == Archived(
                pid="2", n=n, note=f"private-2-{n}"
            )
        # The bare archive's copies are the originals' envelopes: put back, they open.
        for copy in session.client.scan(TableName=bare.name, ConsistentRead=True)["Items"]:
            if copy["PK"]["S"].startswith("P#"):
                session.client.put_item(TableName=table_name, Item=copy)
        for n in range(4):
            assert session.get(Visit, pid="1", n=n, consistent=True) == visits[n]
