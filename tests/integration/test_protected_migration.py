"""A live table with encrypted and offloaded fields migrated to a new table while a writer goes
on: the copy seals each item for the new table, the catch-up applies the stream's changes
(compared by plain value: the tables hold different ciphertexts of equal values), the
verification is clean, and no write is lost."""

from __future__ import annotations

import os
import random
import threading
import uuid
from typing import Annotated, Any

from lsiorm import Encrypted, Entity, Keyring, Offloaded, Session, Table
from lsiorm._model.sealing import MAGIC, REFERENCE_BYTES
from support.tables import table_request

ITEMS = 24


def _declare(table: Table) -> type[Entity]:
    class Patient(Entity, table=table, keys={"PK": "P#{pid}", "SK": "P"}):
        pid: str
        ssn: Annotated[str, Encrypted()]
        scan: Annotated[bytes | None, Encrypted(), Offloaded(threshold=600)] = None
        visits: int = 0

    return Patient


def test_a_table_with_protected_fields_migrates_under_a_writer(
    endpoint_url: str, dynamodb_client: Any, keyring: Keyring
) -> None:
    tag = uuid.uuid4().hex[:10]
    source, dest = f"src_{tag}", f"dst_{tag}"
    stream = {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"}
    dynamodb_client.create_table(**table_request(source, "PK", "SK", StreamSpecification=stream))
    dynamodb_client.get_waiter("table_exists").wait(TableName=source)
    Old = _declare(Table(source, "PK", "SK"))  # the release before, on the source table
    new_table = Table.with_reserved_lsi_slots(dest, "PK", "SK")
    New = _declare(new_table)
    kwargs = {"endpoint_url": endpoint_url, "region_name": "us-east-1", "keyring": keyring}
    expected: dict[str, tuple[str, bytes | None, int]] = {}
    lock = threading.Lock()
    with Session(**kwargs) as old:
        for n in range(ITEMS):
            scan = os.urandom(900) if n % 2 else None
            old.put(Old(pid=str(n), ssn=f"ssn-{n}", scan=scan))
            expected[str(n)] = (f"ssn-{n}", scan, 0)
    stop = threading.Event()
    errors: list[BaseException] = []

    def writer() -> None:
        rng = random.Random(3)
        try:
            with Session(**kwargs) as session:
                while not stop.wait(0.02):
                    pid = str(rng.randrange(ITEMS + 6))
                    choice = rng.random()
                    with lock:
                        if choice < 0.4 and pid in expected:
                            got = session.update(Old, pid=pid, add={"visits": 1})
                            expected[pid] = (got.ssn, got.scan, got.visits)
                        elif choice < 0.8:
                            scan = os.urandom(700)
                            item = Old(pid=pid, ssn=f"w-{rng.random()}", scan=scan)
                            session.put(item)
                            expected[pid] = (item.ssn, scan, 0)
                        else:
                            session.delete(Old, pid=pid)
                            expected.pop(pid, None)
        except BaseException as exc:  # reported by the test
            errors.append(exc)

    with Session(**kwargs) as session:
        thread = threading.Thread(target=writer)
        thread.start()
        try:
            session.migrate_table(new_table, source, segments=2)  # copy, catch-up under writes
        finally:
            stop.set()
            thread.join()
        assert not errors, errors
        report = session.migrate_table(new_table, source)  # the writer's last changes
        assert report.ready, str(report)
        final = session.migrate_table(new_table, source, finish=True)
        assert final.phase == "switched", str(final)
        assert final.verify is not None
        assert final.verify.clean, str(final)
        raw = dynamodb_client.scan(TableName=dest, ConsistentRead=True)["Items"]
        held = {i["pid"]["S"]: i for i in raw if "pid" in i}
        assert set(held) == set(expected)  # none lost, none resurrected
        for pid, (ssn, scan, visits) in expected.items():
            stored = held[pid]
            assert bytes(stored["ssn"]["B"]).startswith(MAGIC)
            if scan is not None:
                assert len(bytes(stored["scan"]["B"])) == REFERENCE_BYTES
            got = session.get(New, pid=pid, consistent=True)
            assert (got.ssn, got.scan, got.visits) == (ssn, scan, visits)
    dynamodb_client.delete_table(TableName=source)
    dynamodb_client.delete_table(TableName=dest)


def test_dual_writes_seal_each_table_for_itself(
    endpoint_url: str, dynamodb_client: Any, keyring: Keyring
) -> None:
    tag = uuid.uuid4().hex[:10]
    source, dest = f"src_{tag}", f"dst_{tag}"
    stream = {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"}
    dynamodb_client.create_table(**table_request(source, "PK", "SK", StreamSpecification=stream))
    dynamodb_client.get_waiter("table_exists").wait(TableName=source)
    Old = _declare(Table(source, "PK", "SK"))
    new_table = Table.with_reserved_lsi_slots(dest, "PK", "SK")
    New = _declare(new_table)
    kwargs = {"endpoint_url": endpoint_url, "region_name": "us-east-1", "keyring": keyring}
    with Session(**kwargs) as session:
        for n in range(4):
            session.put(Old(pid=str(n), ssn=f"ssn-{n}"))
        assert session.migrate_table(new_table, source).ready
        dual = session.dual_writes(new_table, source)
        scan = os.urandom(900)
        dual.put(New(pid="9", ssn="dual-secret", scan=scan))
        dual.update(New, {"pid": "1"}, set={"ssn": "changed-secret"})
        dual.delete(New, {"pid": "2"})
        assert dual.dual is not None
        assert sum(dual.dual.fallbacks.values()) == 0, dual.dual  # every write mirrored
        expected = {"0": "ssn-0", "1": "changed-secret", "3": "ssn-3", "9": "dual-secret"}
        for name, Entity_ in ((source, Old), (dest, New)):
            raw = dynamodb_client.scan(TableName=name, ConsistentRead=True)["Items"]
            held = {i["pid"]["S"]: i for i in raw if "pid" in i}
            assert set(held) == set(expected), name
            for pid, ssn in expected.items():
                stored = bytes(held[pid]["ssn"]["B"])
                assert stored.startswith(MAGIC)
                assert ssn.encode() not in stored
                got = session.get(Entity_, pid=pid, consistent=True)
                assert got.ssn == ssn
            assert len(bytes(held["9"]["scan"]["B"])) == REFERENCE_BYTES
            assert session.get(Entity_, pid="9", consistent=True).scan == scan
        final = session.migrate_table(new_table, source, finish=True)
        assert final.phase == "switched", str(final)
    dynamodb_client.delete_table(TableName=source)
    dynamodb_client.delete_table(TableName=dest)
