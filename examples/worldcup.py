"""World Cup goals per country and game, with a Number LSI key, on moto or any endpoint.

Run it with ``.venv/bin/python examples/worldcup.py``. The table is keyed by Country and Game;
three LSIs share the Number sort key Goals and differ only in projection (KEYS_ONLY, INCLUDE
Matches as in GoalsIndex, and ALL), so explain() shows what each one fetches for the
same query. A descending query with limit 1 finds each country's top-scoring game. Set
LSIORM_ENDPOINT_URL to run it against another endpoint (DynamoDB Local, AWS).
"""

from __future__ import annotations

import uuid

from pydantic import Field

from lsiorm import (
    Entity,
    KeyAttribute,
    LocalIndex,
    Projection,
    Session,
    Table,
    ge,
    missing_fields,
    query,
)
from lsiorm.testing import example_endpoint

GOALS = KeyAttribute("Goals", "N")

# A fresh name per run: the example may share an engine with other runs (the tests do).
world_cup = Table(
    f"WorldCup-{uuid.uuid4().hex[:8]}",
    partition_key="Country",
    sort_key="Game",
    local_indexes=[
        LocalIndex("GoalsKeysOnly", GOALS, Projection.keys_only()),
        LocalIndex("GoalsIndex", GOALS, Projection.include("Matches")),
        LocalIndex("GoalsAll", GOALS, Projection.all()),
    ],
)


class Game(
    Entity,
    table=world_cup,
    keys={"Country": "{country}", "Game": "{game}", "Goals": "{goals}"},
):
    """One country's record in one tournament; Goals is stored as a DynamoDB Number key."""

    country: str
    game: str
    goals: int
    matches: int = Field(alias="Matches")
    venue: str = Field(alias="Venue")


RECORDS = [
    ("France", "FIFA-2022", 16, 7, "Qatar"),
    ("France", "FIFA-2018", 14, 7, "Russia"),
    ("France", "FIFA-2014", 10, 5, "Brazil"),
    ("France", "FIFA-2006", 9, 7, "Germany"),
    ("Argentina", "FIFA-2022", 15, 7, "Qatar"),
    ("Argentina", "FIFA-2018", 6, 4, "Russia"),
    ("Argentina", "FIFA-2014", 8, 7, "Brazil"),
    ("Brazil", "FIFA-2022", 8, 5, "Qatar"),
    ("Brazil", "FIFA-2014", 11, 7, "Brazil"),
    ("Brazil", "FIFA-2002", 18, 7, "Korea/Japan"),
]


def main(endpoint_url: str) -> None:
    """Run the World Cup walkthrough against one endpoint."""
    with Session(endpoint_url=endpoint_url, region_name="us-east-1") as session:
        session.create_table(world_cup)
        lsis = ", ".join(
            f"{i.name} ({i.projection.type}{' Matches' if i.projection.attributes else ''})"
            for i in world_cup.local_indexes
        )
        print(f"created table {world_cup.name!r} with LSIs on Goals (N): {lsis}")
        try:
            walkthrough(session)
        finally:
            session.delete_table(world_cup)
            print(f"deleted table {world_cup.name!r}")


def walkthrough(session: Session) -> None:
    """Write the records, compare the three projections, and find the top-scoring games."""
    session.batch_write(
        [Game(country=c, game=g, goals=goals, matches=m, venue=v) for c, g, goals, m, v in RECORDS]
    )
    for c, g, goals, m, v in RECORDS:
        print(f"put  {c:<9} {g}  goals={goals:<2} matches={m} venue={v}")

    got = session.get(Game, country="France", game="FIFA-2022")
    assert got is not None
    print(f"\nget  France / FIFA-2022 -> {got.goals} goals in {got.matches} matches")

    print("\nthe same query (France, most goals first) on each projection:")
    for index in ("GoalsKeysOnly", "GoalsIndex", "GoalsAll"):
        plan = query(Game).where(country="France").using(index).descending().plan()
        held = world_cup.projected_attributes(world_cup.index(index))
        holds = "every attribute" if held is None else ", ".join(sorted(held))
        fetched = ", ".join(plan.fetched) or "nothing"
        print(f"  {index:<13} holds {holds}; a full Game fetches {fetched}")

    # Goals, Game and Matches are all in GoalsIndex: this read needs no fetch.
    light = (
        query(Game)
        .where(country="France")
        .using("GoalsIndex")
        .select("game", "goals", "matches")
        .descending()
    )
    print("\nFrance's games by goals, descending, from GoalsIndex (INCLUDE Matches):")
    print(light.explain())
    for game in session.all(light):
        print(f"  by goals: {game.game} {game.goals} goals in {game.matches} matches")

    print("\neach country's top-scoring game (GoalsIndex, descending, limit 1):")
    for country in ("France", "Argentina", "Brazil"):
        top_scorer = (
            query(Game)
            .where(country=country)
            .using("GoalsIndex")
            .select("game", "goals")
            .descending()
            .limit(1)
        )
        top = session.first(top_scorer)
        assert top is not None
        print(f"  top for {country}: {top.game} with {top.goals} goals")

    # With a range on Goals the planner picks the index itself: all three absorb both
    # conditions, and GoalsAll is the one that needs no fetch for a whole Game.
    big = query(Game).where(country="France", goals=ge(14))
    print("\nFrance's games with 14 goals or more (the planner picks the index):")
    print(big.explain())
    for game in session.all(big):
        print(f"  14 or more: {game.game} {game.goals} goals, venue {game.venue}")

    keys_only = query(Game).where(country="Brazil").using("GoalsKeysOnly").select("game", "goals")
    print("\nBrazil's games by goals from GoalsKeysOnly (keys only; no fetch for game and goals):")
    for game in session.all(keys_only):
        gone = ", ".join(sorted(missing_fields(game)))
        print(f"  keys only: {game.game} {game.goals} goals (not read: {gone})")


if __name__ == "__main__":
    with example_endpoint() as url:
        main(url)
