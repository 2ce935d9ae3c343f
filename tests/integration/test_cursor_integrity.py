"""An edited cursor is refused on the engine before any request, and the true one still reads on."""

from __future__ import annotations

from typing import Any

import pytest

from lsiorm import CursorError, Entity, Session, Table, query
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
            data = raw(first.cursor)
            data["s"][0]["sk"] = {"S": "N#00004"}
            forged = [
                pack(data, sign=False),
                first.cursor[:-3],
                pack({**raw(first.cursor), "s": [{"pk": {"S": "G#a"}, "sk": 4}]}),
                pack({**raw(first.cursor), "s": [{"pk": {"S": "G#a"}, "sk": {"Q": "x"}}]}),
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
