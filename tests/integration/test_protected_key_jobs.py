"""The key jobs on a table with protected fields (encrypted, and encrypted offloaded to S3), on
both engines with moto's KMS and S3: the key audit and its repair, a re-key that moves items to
new primary keys (so every encrypted value is sealed again for its new key) under a concurrent
writer and a kill and resume, the orphan collection of encrypted offloaded values (lazy ones
among them), and adoption; no plaintext in log lines, span attributes or errors."""

from __future__ import annotations

import logging
import os
import random
import threading
from typing import Annotated, Any

import pytest

from lsiorm import (
    Encrypted,
    Entity,
    GlobalIndex,
    KeyAttribute,
    Keyring,
    LsiormError,
    Offloaded,
    OffloadedRef,
    Projection,
    RetryPolicy,
    Session,
    Table,
)
from lsiorm._model.sealing import MAGIC, REFERENCE_BYTES
from lsiorm.testing import FaultInjector
from support.otel import Recording
from support.protection import objects

SECRET = "QQJOB-SSN"
SCAN = b"QQJOB-SCAN-"
ITEMS = 24
#: Half the ids hold a space: their printable keys differ from their plain ones (a move).
IDS = [f"d {n}" if n % 2 else f"d{n}" for n in range(ITEMS)]


def _declare(name: str, *, old: bool, lazy: bool = False) -> tuple[Table, type[Entity]]:
    options: dict[str, Any] = {"key_style": "plain"} if old else {"rekeying_from": "plain"}
    table = Table(
        name,
        "PK",
        "SK",
        global_indexes=[
            GlobalIndex("ByTag", KeyAttribute("GPK"), KeyAttribute("GSK"), Projection.all())
        ],
        **options,
    )
    gpk = "T#{tag}" if old else "TAG#{tag}"  # the index key's template changed: a repair

    class Doc(Entity, table=table, keys={"PK": "D#{did}", "SK": "D", "GPK": gpk, "GSK": "{did}"}):
        did: str
        tag: str
        ssn: Annotated[str | None, Encrypted()] = None
        scan: Annotated[bytes | None, Encrypted(), Offloaded(threshold=400, eager=not lazy)] = None
        visits: int = 0

    return table, Doc


def _scan_of(n: int) -> bytes:
    return SCAN + bytes([n]) * 700


def _leaks(texts: list[str]) -> list[str]:
    return [t for t in texts if SECRET in t or "QQJOB-SCAN" in t]


def _observed(caplog: pytest.LogCaptureFixture, recording: Recording) -> list[str]:
    texts = [r.getMessage() for r in caplog.records]
    for span in recording.spans():
        texts += [span.name, repr(dict(span.attributes or {}))]
        texts += [repr(dict(event.attributes or {})) for event in span.events]
    return texts


def test_audit_repair_and_rekey_under_a_writer_and_a_kill(
    endpoint_url: str,
    table_name: str,
    keyring: Keyring,
    caplog: pytest.LogCaptureFixture,
) -> None:
    kwargs: dict[str, Any] = {"endpoint_url": endpoint_url, "region_name": "us-east-1"}
    old_table, Old = _declare(table_name, old=True)
    recording = Recording()
    with Session(**kwargs, keyring=keyring) as before:
        before.create_table(old_table)
        for n, did in enumerate(IDS):
            before.put(Old(did=did, tag=f"t{n % 3}", ssn=f"{SECRET}-{n}", scan=_scan_of(n)))
    table, Doc = _declare(table_name, old=False)
    added: dict[str, int] = {}
    stop = threading.Event()
    errors: list[BaseException] = []

    def writer() -> None:
        rng = random.Random(3)
        try:
            with Session(**kwargs, keyring=keyring) as session:
                for _ in range(40):
                    if stop.is_set():
                        break
                    did = rng.choice(IDS)
                    session.update(Doc, did=did, add={"visits": 1})
                    added[did] = added.get(did, 0) + 1
        except BaseException as exc:  # reported by the test
            errors.append(exc)

    once = RetryPolicy(max_attempts=1)
    with (
        caplog.at_level(logging.DEBUG),
        Session(**kwargs, keyring=keyring, telemetry=recording.telemetry) as session,
    ):
        audit = session.audit_keys(Doc, segments=2)
        assert audit.entities["Doc"].stale_items == ITEMS, audit  # every item: a move or a repair
        thread = threading.Thread(target=writer)
        thread.start()
        killed: LsiormError | None = None
        try:
            # The kill: the job's eighth write of an item fails for good (one attempt).
            writes = {"n": 0}

            def eighth(operation: str, params: Any) -> bool:
                if "~lsiorm#jobs" in repr(params.get("Key") or params.get("TransactItems")):
                    return False
                writes["n"] += 1
                return writes["n"] == 8

            fragile = Session(**kwargs, keyring=keyring, retry=once)
            with fragile, FaultInjector(session=fragile) as faults:
                faults.server_error(["UpdateItem", "PutItem", "TransactWriteItems"], when=eighth)
                with pytest.raises(LsiormError) as stopped:
                    fragile.backfill(Doc, segments=2, concurrency=1)
                killed = stopped.value
            resumed = session.backfill(Doc, segments=2)  # the same call resumes the run
        finally:
            stop.set()
            thread.join()
        assert not errors, errors
        assert resumed.failed == [], resumed
        assert session.backfill(Doc, segments=2).rewritten == 0
        clean = session.audit_keys(Doc, segments=2)
        assert clean.entities["Doc"].stale_items == 0, clean
        for n, did in enumerate(IDS):
            got = session.get(Doc, did=did, consistent=True)
            assert got is not None, did
            assert (got.ssn, got.scan) == (f"{SECRET}-{n}", _scan_of(n))
            assert got.visits == added.get(did, 0)  # no increment lost
        raw = session.client.scan(TableName=table.name, ConsistentRead=True)["Items"]
        docs = [i for i in raw if i.get("_type") == {"S": "Doc"}]
        assert len(docs) == ITEMS  # no twin left behind by a move
        for item in docs:
            assert bytes(item["ssn"]["B"]).startswith(MAGIC)
            assert len(bytes(item["scan"]["B"])) == REFERENCE_BYTES
            assert item["GPK"]["S"].startswith("TAG#")
        assert killed is not None
        texts = [str(killed), repr(killed), *_observed(caplog, recording)]
    assert caplog.records
    assert recording.spans()
    assert _leaks(texts) == []


def test_orphans_of_encrypted_offloaded_values_lazy_and_eager(
    endpoint_url: str, table_name: str, keyring: Keyring, s3: Any
) -> None:
    from dataclasses import replace

    table, Doc = _declare(table_name, old=False, lazy=True)
    kwargs: dict[str, Any] = {"endpoint_url": endpoint_url, "region_name": "us-east-1"}
    quick = replace(keyring, grace_seconds=0)
    with Session(**kwargs, keyring=quick) as session:
        session.create_table(table)
        for n in range(6):
            session.put(Doc(did=f"d{n}", tag="t", ssn=f"{SECRET}-{n}", scan=_scan_of(n)))
        kept = session.get(Doc, did="d0", consistent=True)
        assert isinstance(kept.scan, OffloadedRef)
        session.put(kept.model_copy(update={"visits": 5}))  # the reference kept, renewed
        session.put(Doc(did="d1", tag="t", scan=os.urandom(900)))  # an overwrite: 1 orphan
        session.delete(Doc, did="d2")  # a delete: 1 orphan
        moved = session.get(Doc, did="d3", consistent=True)
        session.put(moved.model_copy(update={"did": "d9"}))  # sealed again for d9: no orphan
        assert len(objects(s3, keyring)) == 8
        report = session.collect_orphans(table, segments=2)
        assert (report.objects, report.referenced, report.deleted) == (8, 6, 2), report
        for did in ("d0", "d3", "d4", "d5", "d9"):
            got = session.load(session.get(Doc, did=did, consistent=True))
            assert got.scan is not None
            assert got.scan.startswith(SCAN)


def test_adoption_of_a_table_with_encrypted_values(
    endpoint_url: str, table_name: str, keyring: Keyring
) -> None:
    table, Doc = _declare(table_name, old=False)
    kwargs: dict[str, Any] = {"endpoint_url": endpoint_url, "region_name": "us-east-1"}
    with Session(**kwargs, keyring=keyring) as session:
        session.create_table(table)
        for n in range(5):
            session.put(Doc(did=f"d{n}", tag="t", ssn=f"{SECRET}-{n}", scan=_scan_of(n)))
        report = session.adopt(Doc)
        assert report.accounted, str(report)
        assert report.entities["Doc"].parsed == 5
        assert _leaks([str(report), repr(report)]) == []


def test_adoption_counts_plain_values_of_an_encrypted_field_as_not_parsing(
    endpoint_url: str, table_name: str, keyring: Keyring
) -> None:
    table, Doc = _declare(table_name, old=False)
    # The same items, written by a release that stored ssn plain.
    plain_table = Table(
        table_name,
        "PK",
        "SK",
        global_indexes=[
            GlobalIndex("ByTag", KeyAttribute("GPK"), KeyAttribute("GSK"), Projection.all())
        ],
    )

    class Plain(
        Entity,
        table=plain_table,
        keys={"PK": "D#{did}", "SK": "D", "GPK": "TAG#{tag}", "GSK": "{did}"},
        type_name="Doc",
    ):
        did: str
        tag: str
        ssn: str | None = None

    kwargs: dict[str, Any] = {"endpoint_url": endpoint_url, "region_name": "us-east-1"}
    with Session(**kwargs, keyring=keyring) as session:
        session.create_table(table)
        for n in range(3):
            session.put(Doc(did=f"d{n}", tag="t", ssn=f"{SECRET}-{n}"))
        for n in range(3, 5):
            session.put(Plain(did=f"d{n}", tag="t", ssn=f"{SECRET}-{n}"))
        # Without accept_plaintext, a plain value is refused: counted, with the reason, and
        # the scan goes on (it stopped the whole job before).
        report = session.adopt(Doc)
        adoption = report.entities["Doc"]
        assert (adoption.items, adoption.parsed, adoption.unparsed) == (5, 3, 2), str(report)
        assert adoption.examples
        assert all("protect.plaintext" in e.reason for e in adoption.examples)
        assert _leaks([str(report), repr(report)]) == []
