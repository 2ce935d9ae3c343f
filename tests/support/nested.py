"""People whose contact details nest None at every depth, and a reader that rejects NULL.

Neither PynamoDB nor ElectroDB writes NULL, and ElectroDB refuses to write back a null it read
(``Invalid value type at entity path "contact.phone"``). `reject_null` reads as such a tool
does: it fails on a NULL anywhere in an item. `null_form` is an item as lsiorm wrote it before
None became absence inside nested models too (NULL there), which must still read back.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from pydantic import BaseModel

from lsiorm import Entity, Table
from lsiorm._model.item_encoding import wire_item
from lsiorm._model.wire import to_wire

__all__ = [
    "Address",
    "Contact",
    "Phone",
    "contacts",
    "declare_people",
    "null_form",
    "phones",
    "reject_null",
]


class Phone(BaseModel):
    #: Required, and None allowed: an absent attribute must read as None.
    number: str | None
    #: A default other than None: an absent attribute must still read as None.
    ext: str | None = "0"


class Address(BaseModel):
    city: str
    zip: str | None = None
    phone: Phone | None = None


class Contact(BaseModel):
    email: str | None = None
    phone: Phone | None = None
    address: Address | None = None
    phones: list[Phone] = []
    by_kind: dict[str, Phone] = {}


def declare_people(name: str) -> tuple[Table, type[Any]]:
    """Table ``name`` (keys PK and SK) and a person on it with a contact and a backup one."""
    table = Table(name, "PK", "SK")

    class Person(Entity, table=table, keys={"PK": "P#{pid}", "SK": "PERSON"}):
        pid: str
        contact: Contact
        backup: Contact | None = None

    return table, Person


texts = st.none() | st.text(alphabet="abé", max_size=3)
phones = st.builds(Phone, number=texts, ext=texts)
addresses = st.builds(
    Address, city=st.text(alphabet="xyz", min_size=1, max_size=3), zip=texts, phone=phones
)
contacts = st.builds(
    Contact,
    email=texts,
    phone=st.none() | phones,
    address=st.none() | addresses,
    phones=st.lists(phones, max_size=2),
    by_kind=st.dictionaries(st.sampled_from(["home", "work"]), phones, max_size=2),
)


def reject_null(item: Any, where: str = "") -> None:
    """Fail on a NULL anywhere in a wire item or value, as a tool that never writes one reads."""
    if not isinstance(item, dict):
        return
    for name, value in item.items():
        path = f"{where}.{name}" if where else str(name)
        if name == "NULL":
            raise AssertionError(f"NULL at {where or 'the top'}")
        if name == "L":
            for n, element in enumerate(value):
                reject_null(element, f"{where}[{n}]")
        elif name == "M":
            reject_null(value, where)
        elif isinstance(value, dict):
            reject_null(value, path)


def null_form(entity: Entity) -> dict[str, Any]:
    """The wire item of ``entity`` as lsiorm wrote it before: a None inside a model as NULL."""
    wire = wire_item(entity)
    for name, value in entity.model_dump(mode="python", by_alias=True).items():
        if isinstance(value, dict):
            wire[name] = to_wire(value)
    return wire
