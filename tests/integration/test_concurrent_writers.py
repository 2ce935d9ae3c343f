"""Every key job against a random concurrent writer: no write is lost, nothing is resurrected.

The writer (`support.writers.RandomWriter`) writes between the job's requests: it sets and
removes declared fields, adds to numbers, adds attributes no model declares, deletes items
and puts them back. After the job, every stored item is compared with the writer's model,
attribute by attribute (a brute-force replay of the writes DynamoDB applied).

The writer writes each item where the job reads it, at its original key; a re-put goes where
the current declaration puts it. (A write to a moved item's new key in the instant between the
delete of its original and the hand-over of attributes added just before that delete is the
one documented window: see `lsiorm._ops.unchanged`.)
"""

from __future__ import annotations

import os
import random
import uuid
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lsiorm import Session, Table, read_relief_file
from lsiorm._model.wire import item_to_wire
from support.engine_examples import engine_examples
from support.jobs import everything, session_on
from support.models import declare_dated_doc, declare_readings
from support.writers import OPERATIONS, RandomWriter

#: ``LSIORM_SCALE`` sets the size: 1 is full size (1,500 items, 150 writers' runs per test);
#: the default fraction is the size CI runs, 30 items and 3 runs.
SCALE = float(os.environ.get("LSIORM_SCALE", "0.02"))
ITEMS = max(30, int(1500 * SCALE))
EXAMPLES = engine_examples(max(3, int(150 * SCALE)))
CUTOFF = date(2024, 3, 1)


def wire(entity: Any) -> dict[str, Any]:
    return item_to_wire(entity.to_item())


def ident(item: dict[str, Any]) -> int:
    return int(item["n"])


def key_job(session: Session, endpoint_url: str, name: str, rng: random.Random, width: int) -> None:
    """Backfill (``width`` 4: a new LSI slot) or re-key (``width`` 6: a new sort key)."""
    old_table, old_doc = declare_dated_doc(name, lsi3=False)
    session.create_table(old_table)
    try:
        old = {
            n: old_doc(user=f"u{n % 3}", n=n, day=date(2024, 1 + n % 5, 1 + n), body=f"b{n}")
            for n in range(ITEMS)
        }
        session.batch_write(list(old.values()))
        table, doc = declare_dated_doc(name, lsi3=True, width=width)
        new = {n: wire(doc(**e.model_dump())) for n, e in old.items()}

        def keys(n: int) -> list[dict[str, Any]]:
            # The writer writes each item at its original key (see the module docstring).
            stored = wire(old[n])
            return [{"PK": stored["PK"], "SK": stored["SK"]}]

        writer = RandomWriter(
            session,
            name,
            rng,
            {n: wire(e) for n, e in old.items()},
            keys=keys,
            fresh=lambda n: {**new[n], "body": {"S": "again"}},
            derived={*table.key_attributes, table.type_attribute},
            field="body",
            number="hits",
        )
        with session_on(endpoint_url, writer) as job:
            report = job.backfill(doc, segments=1, page_size=7)
        writer.active = False
        assert report.failed == []
        writer.check(everything(session, name), ident)
        assert session.audit_keys(doc).clean  # every derived key is correct
    finally:
        session.delete_table(old_table)


@pytest.mark.slow
@pytest.mark.parametrize("width", [4, 6], ids=["backfill", "rekey"])
@EXAMPLES
@given(seed=st.integers(0, 2**32))
def test_backfill_and_rekey_lose_no_concurrent_write(
    session: Session, endpoint_url: str, table_name: str, width: int, seed: int
) -> None:
    rng = random.Random(seed)
    key_job(session, endpoint_url, f"{table_name}_{width}_{rng.randrange(10**6)}", rng, width)


def relief_case(
    session: Session,
    endpoint_url: str,
    name: str,
    rng: random.Random,
    file: Path | None,
) -> None:
    table, reading = declare_readings(name)
    archive = Table(f"{name}_a", "PK", "SK")
    session.create_table(table)
    if file is None:
        session.create_table(archive)
    try:
        readings = {
            n: reading(sensor="s", n=n, day=date(2024, 1 + n % 4, 1), note=f"n{n}")
            for n in range(ITEMS)
        }
        session.batch_write(list(readings.values()))
        writer = RandomWriter(
            session,
            name,
            rng,
            {n: wire(e) for n, e in readings.items()},
            keys=lambda n: [{k: wire(readings[n])[k] for k in ("PK", "SK")}],
            fresh=lambda n: {**wire(readings[n]), "note": {"S": "again"}},
            derived={*table.key_attributes, table.type_attribute},
            field="note",
            number="visits",
            # A file keeps the lines of items deleted while they moved (stale copies).
            operations=OPERATIONS if file is None else ("set", "add", "remove", "new-attribute"),
        )
        with session_on(endpoint_url, writer) as job:
            report = job.relieve_collection(
                table,
                "S#s",
                entity=reading,
                match=lambda r: r.day < CUTOFF,
                to_table=archive if file is None else None,
                to_file=file,
                page_size=4,
            )
        writer.active = False
        assert report.failed == []
        if file is None:
            moved = everything(session, archive.name)
        else:
            moved = list({i["SK"]["S"]: i for i in read_relief_file(file)}.values())
        writer.check([*everything(session, name), *moved], ident)
        assert all(i["D"]["S"] < CUTOFF.isoformat() for i in moved)
    finally:
        session.delete_table(table)
        if file is None:
            session.delete_table(archive)


@pytest.mark.slow
@pytest.mark.parametrize("to", ["table", "file"])
@EXAMPLES
@given(seed=st.integers(0, 2**32))
def test_relief_loses_no_concurrent_write(
    session: Session, endpoint_url: str, table_name: str, tmp_path: Path, to: str, seed: int
) -> None:
    rng = random.Random(seed)
    target = tmp_path / f"{uuid.uuid4().hex}.jsonl" if to == "file" else None
    relief_case(session, endpoint_url, f"{table_name}_{to}_{rng.randrange(10**6)}", rng, target)
