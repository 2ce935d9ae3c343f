"""Dogs, cats and parrots overloading one LSI sort key, on moto or any endpoint.

Run it with ``.venv/bin/python examples/animals.py``. Three entity types write one attribute,
``index1``, each under its own namespace (``dog:command:``, ``cat:treeclimbed:``,
``parrot:words:`` with zero-padded counts), so one LSI answers begins_with queries per namespace
and numeric ranges over parrots that no dog or cat can leak into. An address book in another
partition uses the same index for a London:Westminster:Downing St hierarchy. Set
LSIORM_ENDPOINT_URL to run it against another endpoint (DynamoDB Local, AWS).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from lsiorm import (
    Entity,
    KeyAttribute,
    LocalIndex,
    Projection,
    Query,
    Session,
    Table,
    begins_with,
    between,
    gt,
    lt,
    query,
)
from lsiorm.testing import example_endpoint

SHELTER = "Battersea"

# A fresh name per run: the example may share an engine with other runs (the tests do).
animals = Table(
    f"Animals-{uuid.uuid4().hex[:8]}",
    partition_key="PK",
    sort_key="SK",
    local_indexes=[LocalIndex("Index1", KeyAttribute("index1"), Projection.all())],
)


class Dog(
    Entity,
    table=animals,
    keys={"PK": "SHELTER#{shelter}", "SK": "DOG#{name}", "index1": "dog:command:{command}"},
):
    """A dog and the command it follows."""

    shelter: str
    name: str
    command: str


class Cat(
    Entity,
    table=animals,
    keys={"PK": "SHELTER#{shelter}", "SK": "CAT#{name}", "index1": "cat:treeclimbed:{tree}"},
):
    """A cat and the tree it climbed (cats ignore commands)."""

    shelter: str
    name: str
    tree: str


class Parrot(
    Entity,
    table=animals,
    keys={"PK": "SHELTER#{shelter}", "SK": "PARROT#{name}", "index1": "parrot:words:{words:06d}"},
):
    """A parrot and how many different words it says, zero-padded so text order is numeric."""

    shelter: str
    name: str
    words: int


class Address(
    Entity,
    table=animals,
    keys={"PK": "BOOK#{book}", "SK": "ADDRESS#{name}", "index1": "{city}:{district}:{street}"},
):
    """An address; index1 holds the hierarchy City:District:Street, most specific last."""

    book: str
    name: str
    city: str
    district: str
    street: str


def main(endpoint_url: str) -> None:
    """Run the overloaded-index walkthrough against one endpoint."""
    with Session(endpoint_url=endpoint_url, region_name="us-east-1") as session:
        session.create_table(animals)
        print(f"created table {animals.name!r} with LSI Index1 on the overloaded 'index1'")
        try:
            pets(session)
            addresses(session)
        finally:
            session.delete_table(animals)
            print(f"deleted table {animals.name!r}")


def pets(session: Session) -> None:
    """Write dogs, cats and parrots into one partition and query each namespace of Index1."""
    residents: list[Dog | Cat | Parrot] = [
        Dog(shelter=SHELTER, name="Rex", command="roll over"),
        Dog(shelter=SHELTER, name="Fido", command="sit"),
        Dog(shelter=SHELTER, name="Buddy", command="beg"),
        Dog(shelter=SHELTER, name="Max", command="speak"),
        Cat(shelter=SHELTER, name="Tom", tree="spruce"),
        Cat(shelter=SHELTER, name="Felix", tree="elm"),
        Cat(shelter=SHELTER, name="Luna", tree="oak"),
        Parrot(shelter=SHELTER, name="Polly", words=3),
        Parrot(shelter=SHELTER, name="Echo", words=5),
        Parrot(shelter=SHELTER, name="Coco", words=6),
        Parrot(shelter=SHELTER, name="Kiwi", words=101),
        Parrot(shelter=SHELTER, name="Rio", words=201),
    ]
    session.batch_write(residents)
    for r in residents:
        print(f"put  {type(r).__name__:<6} {r.name:<6} index1={r.to_item()['index1']!r}")

    dogs = query(Dog).where(shelter=SHELTER).using("Index1")
    print("\nevery dog, by command (begins_with 'dog:command:' on Index1):")
    print(dogs.explain())
    for dog in session.all(dogs):
        print(f"  any command: dog {dog.name} follows {dog.command!r}")

    s_commands = query(Dog).where(shelter=SHELTER, command=begins_with("s"))
    print("\ndogs whose command begins with 's':")
    for dog in session.all(s_commands):
        print(f"  s-command: dog {dog.name} follows {dog.command!r}")

    cats = query(Cat).where(shelter=SHELTER).using("Index1")
    print("\nevery cat, by tree (begins_with 'cat:treeclimbed:'):")
    for cat in session.all(cats):
        print(f"  any tree: cat {cat.name} climbed {cat.tree!r}")

    more = query(Parrot).where(shelter=SHELTER, words=gt(5))
    print("\nparrots with more than 5 words (5 itself excluded; no dog or cat can match):")
    print(more.explain())
    shown("more than 5", session.all(more))

    two_to_five = query(Parrot).where(shelter=SHELTER, words=between(2, 5))
    print("\nparrots with 2 to 5 words (between is inclusive):")
    shown("2 to 5", session.all(two_to_five))

    fewer = query(Parrot).where(shelter=SHELTER, words=lt(5))
    print("\nparrots with fewer than 5 words:")
    shown("fewer than 5", session.all(fewer))

    # The usual hand-written BETWEEN 'parrot:words:000005' AND 'parrot:words:999999' is inclusive,
    # so it answers ">= 5", not "> 5"; lsiorm's gt(5) starts after every key of 5 instead.
    raw = session.client.query(
        TableName=animals.name,
        IndexName="Index1",
        KeyConditionExpression="PK = :pk AND index1 BETWEEN :lo AND :hi",
        ExpressionAttributeValues={
            ":pk": {"S": f"SHELTER#{SHELTER}"},
            ":lo": {"S": "parrot:words:000005"},
            ":hi": {"S": "parrot:words:999999"},
        },
    )["Items"]
    names = ", ".join(item["name"]["S"] for item in raw)
    print(f"\na hand-written BETWEEN 000005 AND 999999 returns: {names}")

    everyone = query(Dog, Cat, Parrot).where(shelter=SHELTER).using("Index1")
    print("\nthe whole partition through Index1, each item decoded as its own class:")
    kinds = [type(a).__name__ for a in session.all(everyone)]
    print(f"  {len(kinds)} items: {kinds.count('Dog')} Dog, {kinds.count('Cat')} Cat, ", end="")
    print(f"{kinds.count('Parrot')} Parrot")


def shown(label: str, parrots: Sequence[Parrot]) -> None:
    """Print the parrots found, or say there are none."""
    for p in parrots:
        print(f"  {label}: parrot {p.name} says {p.words} words")
    if not parrots:
        print(f"  {label}: none")


def addresses(session: Session) -> None:
    """Query the address hierarchy with begins_with at each level."""
    book = "uk"
    places = [
        Address(book=book, name="10", city="London", district="Westminster", street="Downing St"),
        Address(book=book, name="11", city="London", district="Westminster", street="Downing St"),
        Address(
            book=book,
            name="Buckingham Palace",
            city="London",
            district="Westminster",
            street="The Mall",
        ),
        Address(book=book, name="221B", city="London", district="Marylebone", street="Baker St"),
        Address(book=book, name="1", city="Manchester", district="Ancoats", street="Jersey St"),
    ]
    session.batch_write(places)
    print()
    for a in places:
        print(f"put  address {a.name!r} index1={a.to_item()['index1']!r}")

    for label, conditions in [
        ("in London", {"city": "London"}),
        ("in London:Westminster", {"city": "London", "district": "Westminster"}),
        (
            "on London:Westminster:Downing St",
            {"city": "London", "district": "Westminster", "street": "Downing St"},
        ),
    ]:
        q = query(Address).where(book=book, **conditions)
        found = session.all(q)
        print(f"\naddresses {label}: {len(found)}, by {key_condition(q)}")
        for a in found:
            print(f"  {label}: {a.name}, {a.street}, {a.district}, {a.city}")


def key_condition(q: Query[Address]) -> str:
    """Return the key condition a query sends, with its names and values filled in."""
    plan = q.plan()
    text = plan.key_condition or ""
    for placeholder in sorted(plan.names, key=len, reverse=True):
        text = text.replace(placeholder, plan.names[placeholder])
    for placeholder in sorted(plan.values, key=len, reverse=True):
        (value,) = plan.values[placeholder].values()
        text = text.replace(placeholder, repr(value))
    return text


if __name__ == "__main__":
    with example_endpoint() as url:
        main(url)
