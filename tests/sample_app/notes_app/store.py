"""Notes, their owners' counters, and the few things the app does with them."""

from __future__ import annotations

from lsiorm import (
    ConditionCheck,
    Entity,
    KeyAttribute,
    LocalIndex,
    Put,
    Session,
    Table,
    cond,
    query,
)

notes = Table("Notes", "PK", "SK")
#: Attachments, by note and by kind: an LSI, so each note's attachments are a size-limited
#: item collection.
attachments = Table(
    "Attachments", "PK", "SK", local_indexes=[LocalIndex("ByKind", KeyAttribute("Kind"))]
)


class Note(Entity, table=notes, keys={"PK": "OWNER#{owner}", "SK": "NOTE#{nid}"}):
    owner: str
    nid: str
    text: str


class Owner(Entity, table=notes, keys={"PK": "OWNER#{owner}", "SK": "PROFILE"}):
    owner: str
    notes: int = 0
    active: bool = True


def create_note(session: Session, note: Note) -> Note:
    """Store a new note; refuse to overwrite one that exists."""
    return session.put(note, create_only=True)


def import_notes(session: Session, batch: list[Note]) -> int:
    """Store many notes at once; return how many were written."""
    return session.batch_write(puts=batch).written


def notes_of(session: Session, owner: str) -> list[Note]:
    """Every note of one owner, in one query."""
    return session.all(query(Note).where(owner=owner))


def count_note(session: Session, owner: str) -> Owner:
    """Add one to an owner's note counter (an ADD: never applied twice)."""
    return session.update(Owner, owner=owner, add={"notes": 1}, upsert=True)


def publish(session: Session, note: Note) -> None:
    """Store a note only while its owner is active, in one transaction."""
    owner = Owner(owner=note.owner)
    session.transact_write(
        [ConditionCheck(owner, condition=cond("active") == True), Put(note)]  # noqa: E712
    )


class Attachment(
    Entity, table=attachments, keys={"PK": "NOTE#{nid}", "SK": "FILE#{name}", "Kind": "{kind}"}
):
    nid: str
    name: str
    kind: str
    data: str


def attach(session: Session, attachment: Attachment) -> Attachment:
    """Store one attachment of a note."""
    return session.put(attachment)
