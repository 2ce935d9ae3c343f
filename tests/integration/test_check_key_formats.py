"""`lsiorm check` on a table a 0.2 development version wrote: keys of another format are found in a
sample of its items, named with the style they parse in, and each entity's key layout is shown.
On each engine.
"""

from __future__ import annotations

import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lsiorm import Session
from lsiorm._cli import EXIT_FOUND, EXIT_OK
from lsiorm._model.format_probe import probe_keys
from support.cli import app_module, run
from support.jobs import everything

#: The same shop, declared three times: with no style (printable keys, the default), and with
#: the readable and the exact style of 0.2's development versions.
SHOP_APP = """
from enum import Enum

from lsiorm import Entity, Table


class Status(str, Enum):
    OPEN = "open"
    DONE = "done"


def declare(**options):
    table = Table({name!r}, "PK", "SK", **options)

    class Order(Entity, table=table, keys={{"PK": "C#{{customer}}", "SK": "O#{{status}}#{{oid}}"}}):
        customer: str
        status: Status
        oid: str

    class Line(
        Entity, table=table, keys={{"PK": "C#{{customer}}", "SK": "L#{{oid}}#{{n:03d}}"}}
    ):
        customer: str
        oid: str
        n: int

    return table, Order, Line


shop, Order, Line = declare()
kept, KeptOrder, KeptLine = declare(key_style="readable")
exact, ExactOrder, ExactLine = declare(key_style="exact")
"""


@pytest.fixture
def shop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    name = f"check_formats_{uuid.uuid4().hex[:8]}"
    source = textwrap.dedent(SHOP_APP).format(name=name)
    for module in app_module(tmp_path, monkeypatch, source, "check_formats_app"):
        monkeypatch.syspath_prepend(str(tmp_path))
        yield __import__(module)


def _write(session: Session, order: Any, line: Any, status: Any) -> None:
    for oid in ("o1", "o 2"):
        session.put(order(customer="c", status=status.OPEN, oid=oid))
        session.put(line(customer="c", oid=oid, n=1))


def test_check_finds_keys_an_earlier_release_wrote(
    shop: Any, session: Session, endpoint_url: str
) -> None:
    url = ("--endpoint-url", endpoint_url)
    target = f"{shop.__name__}:shop"
    session.create_table(shop.shop)
    try:
        _write(session, shop.KeptOrder, shop.KeptLine, shop.Status)
        code, out = run("check", target, *url)
        assert code == EXIT_FOUND
        lines = out.splitlines()
        assert lines[0] == f"Table {shop.shop.name!r} matches its declaration."
        # O#open#o1 is the same text in both formats; the other three are not.
        assert lines[1].startswith(f"Key formats of table {shop.shop.name!r}: 4 items read; 3 hold")
        assert "e.g. SK 'L#o 2\\x00#001', SK 'L#o1\\x00#001', SK 'O#open#o 2'." in lines[1]
        # O#open# (the Enum stored as it is) parses in the readable style only.
        assert "They parse in the 'readable' key style" in lines[1]
        assert "Table(..., key_style='readable')" in lines[1]
        assert "Key layout of Order" in out
        assert "    e.g. 'O#open#a%20b' (status=Status.OPEN, oid='a b')" in out
        # Declared with the style it was written with, the table is in order.
        assert run("check", f"{shop.__name__}:kept", *url)[0] == EXIT_OK
        # --sample 0 reads no item.
        assert run("check", target, "--sample", "0", *url)[0] == EXIT_OK
    finally:
        session.delete_table(shop.shop)


def test_check_names_the_exact_style_for_lsiorm_0_2_keys(
    shop: Any, session: Session, endpoint_url: str
) -> None:
    session.create_table(shop.shop)
    try:
        _write(session, shop.ExactOrder, shop.ExactLine, shop.Status)
        code, out = run("check", f"{shop.__name__}:shop", "--endpoint-url", endpoint_url)
        assert code == EXIT_FOUND
        assert "They parse in the 'exact' key style" in out
        assert "Table(..., key_style='exact')" in out
        probe = probe_keys(shop.shop, everything(session, shop.shop.name))
        assert (probe.read, probe.found, probe.styles) == (4, 4, ("exact",))
    finally:
        session.delete_table(shop.shop)


def test_check_is_clean_on_printable_keys(shop: Any, session: Session, endpoint_url: str) -> None:
    session.create_table(shop.shop)
    try:
        _write(session, shop.Order, shop.Line, shop.Status)
        session.backfill(shop.Order)  # its ledger partition is left out of the sample
        code, out = run("check", f"{shop.__name__}:shop", "--endpoint-url", endpoint_url)
        assert code == EXIT_OK, out
        assert f"Key formats of table {shop.shop.name!r}: 4 items read; every key in PK, SK" in out
    finally:
        session.delete_table(shop.shop)
