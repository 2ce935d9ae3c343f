"""Two writers of one wiki page: the loser of each race sees what won, with no extra read.

Run it with ``.venv/bin/python examples/conflicts.py`` (embedded moto), or set
LSIORM_ENDPOINT_URL to run it on DynamoDB Local. Every conditional write lsiorm sends asks
DynamoDB to return the stored item when the condition fails, so a `StaleVersionError` says which
version is stored and holds that item as its entity, a `ConditionFailedError` holds the item
that made a create fail, and each reason of a cancelled transaction holds its action's item.
"""

from __future__ import annotations

import uuid

from lsiorm import Entity, Put, Session, Table, Update, cond
from lsiorm.errors import ConditionFailedError, StaleVersionError, TransactionCanceledError
from lsiorm.testing import example_endpoint

wiki = Table(f"Wiki-{uuid.uuid4().hex[:8]}", "PK", "SK")


class Page(Entity, table=wiki, keys={"PK": "PAGE#{slug}", "SK": "PAGE"}, version="version"):
    """A wiki page, versioned: each write checks the version it was based on."""

    slug: str
    text: str
    editor: str
    version: int = 0


class Reads:
    """Counts the reads a session sends (GetItem, Query): the conflicts below need none."""

    def __init__(self) -> None:
        self.count = 0

    def before(self, request: object) -> None:
        if getattr(request, "operation", "") in ("GetItem", "Query", "Scan"):
            self.count += 1


def main(endpoint_url: str) -> None:
    reads = Reads()
    with Session(endpoint_url=endpoint_url, region_name="us-east-1", hooks=[reads]) as session:
        session.create_table(wiki)
        try:
            page = session.put(Page(slug="home", text="Welcome", editor="ann"))
            print(f"put home v{page.version} by {page.editor}: {page.text!r}")
            anns_copy = page
            bens = session.update(page, set={"text": "Welcome, all", "editor": "ben"})
            print(f"ben saved v{bens.version}: {bens.text!r}")
            try:
                session.update(anns_copy, set={"text": "Hello"})
            except StaleVersionError as exc:
                winner = exc.item
                assert isinstance(winner, Page)
                expected, stored = exc.expected_version, exc.stored_version
                print(f"ann's save refused: expected v{expected}, stored v{stored}")
                print(f"stored text is {winner.text!r} by {winner.editor}")
                merged = session.update(winner, set={"text": winner.text + " (and hello)"})
                print(f"ann merged onto v{winner.version}: v{merged.version} {merged.text!r}")
            try:
                session.put(Page(slug="home", text="Start", editor="cy"))
            except ConditionFailedError as exc:
                found = exc.item
                assert isinstance(found, Page)
                print(f"cy's new page refused: home exists at v{found.version}")
            try:
                session.transact_write(
                    [
                        Put(Page(slug="about", text="About us", editor="cy")),
                        Update(
                            Page,
                            {"slug": "home"},
                            set={"editor": "cy"},
                            condition=cond("editor") == "ann",
                        ),
                    ]
                )
            except TransactionCanceledError as exc:
                for reason in exc.failed:
                    held = reason.item
                    assert isinstance(held, Page)
                    print(f"transaction action {reason.index}: {reason.code}; ", end="")
                    print(f"stored editor {held.editor}")
            print(f"reads sent to learn all this: {reads.count}")
        finally:
            session.delete_table(wiki)
            print(f"deleted table {wiki.name!r}")


if __name__ == "__main__":
    with example_endpoint() as url:
        main(url)
