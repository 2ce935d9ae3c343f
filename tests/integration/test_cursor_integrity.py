"""An edited cursor is refused on the engine before any request, and the true one still reads on."""

from __future__ import annotations

from typing import Any

import pytest

from lsiorm import CursorError, Entity, Page, Session, Table, query
from support.cursors import pack, raw

table = Table("cursor_items", "pk", "sk")


class Row(Entity, table=table, keys={"pk": "G#{g}", "sk": "N#{n:05d}"}):
    g: str
    n: int


class Counting:
    def __init__(self) -> None:
        self.sent = 0

    def before(self, request: Any) -> None:
        self.sent += 1


def test_an_edited_cursor_is_refused_before_any_request(endpoint_url: str) -> None:
    counting = Counting()
    with Session(endpoint_url=endpoint_url, hooks=[counting]) as session:
        session.create_table(table)
        try:
            for n in range(6):
                session.put(Row(g="a", n=n))
            q = query(Row).where(g="a").page_size(2)
            first = session.page(q.limit(2))
            assert first.cursor is not None
            key = session.ctx.cursor_key
            data = raw(first.cursor)
            data["s"][0]["sk"] = {"S": "N#00004"}
            forged = [
                pack(data),
                first.cursor[:-3],
                pack({**raw(first.cursor), "s": [{"pk": {"S": "G#a"}, "sk": 4}]}, key),
                pack({**raw(first.cursor), "s": [{"pk": {"S": "G#a"}, "sk": {"Q": "x"}}]}, key),
            ]
            for cursor in forged:
                sent = counting.sent
                with pytest.raises(CursorError):
                    session.all(q.after(cursor))
                assert counting.sent == sent
            rest = session.all(q.after(first.cursor))
            assert [r.n for r in rest] == [2, 3, 4, 5]
        finally:
            session.delete_table(table)


# The key every cursor was signed with when no secret was set: public, so anyone could sign.
PUBLIC_KEY = b"lsiorm cursor integrity v2"


def first_of_four(session: Session) -> tuple[Any, Page[Any]]:
    """Four rows written; the query of them and its first page of two, which has a cursor."""
    for n in range(4):
        session.put(Row(g="a", n=n))
    q = query(Row).where(g="a").page_size(2)
    first = session.page(q.limit(2))
    assert first.cursor is not None
    return q, first


def test_without_a_secret_only_the_session_that_made_a_cursor_reads_it(
    endpoint_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LSIORM_CURSOR_SECRET", raising=False)
    counting = Counting()
    with (
        Session(endpoint_url=endpoint_url) as maker,
        Session(endpoint_url=endpoint_url, hooks=[counting]) as other,
    ):
        maker.create_table(table)
        try:
            q, first = first_of_four(maker)
            # A cursor moved to a later item and signed with the once-public key is a forgery.
            moved = {**raw(first.cursor), "s": [{"pk": {"S": "G#a"}, "sk": {"S": "N#00003"}}]}
            for cursor in (first.cursor, pack(moved, PUBLIC_KEY)):
                for session in (maker, other):
                    if session is maker and cursor == first.cursor:
                        continue
                    sent = counting.sent
                    with pytest.raises(CursorError) as caught:
                        session.all(q.after(cursor))
                    assert caught.value.rule == "cursor.tampered"
                    assert counting.sent == sent
            assert [r.n for r in maker.all(q.after(first.cursor))] == [2, 3]
        finally:
            maker.delete_table(table)


@pytest.mark.parametrize("how", ["argument", "environment"])
def test_sessions_with_the_same_secret_read_each_others_cursors(
    endpoint_url: str, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    given: dict[str, Any] = {}
    if how == "argument":
        monkeypatch.delenv("LSIORM_CURSOR_SECRET", raising=False)
        given = {"cursor_secret": "shared by every reader"}
    else:
        monkeypatch.setenv("LSIORM_CURSOR_SECRET", "shared by every reader")
    with (
        Session(endpoint_url=endpoint_url, **given) as maker,
        Session(endpoint_url=endpoint_url, **given) as reader,
        Session(endpoint_url=endpoint_url, cursor_secret="another secret") as stranger,
    ):
        maker.create_table(table)
        try:
            q, first = first_of_four(maker)
            assert [r.n for r in reader.all(q.after(first.cursor))] == [2, 3]
            with pytest.raises(CursorError):
                stranger.all(q.after(first.cursor))
        finally:
            maker.delete_table(table)
