"""Numbers on the engines: a float field never reads a rounded number silently.

A float holds about 16 significant digits and a DynamoDB number 38. After ``add`` makes a
number a float cannot hold, reading it into a float field raises `NumberPrecisionError`, so a
read-then-put cannot write a rounded value back; a ``LossyFloat`` field reads the nearest float.
"""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Annotated, Any

import pytest

from lsiorm import Entity, LossyFloat, Table, query
from lsiorm.errors import NumberPrecisionError
from support.tables import session_with

TABLE = Table(f"numbers_{uuid.uuid4().hex[:8]}", "PK")


class Player(Entity, table=TABLE, keys={"PK": "P#{name}"}):
    name: str
    score: float = 0.0
    rough: Annotated[float, LossyFloat] = 0.0
    exact: Decimal = Decimal(0)


def test_a_float_field_refuses_a_number_it_cannot_hold(
    endpoint_url: str, dynamodb_client: Any
) -> None:
    with session_with(endpoint_url, TABLE) as session:
        session.put(Player(name="a", score=1e21, rough=1e21, exact=Decimal("1E+21")))
        # The update is applied; reading its result into the float field is refused.
        with pytest.raises(NumberPrecisionError) as refused:
            session.update(Player, name="a", add={"score": 2.5})
        assert refused.value.field == "Player.score"
        assert refused.value.value == "1000000000000000000002.5"
        stored = dynamodb_client.get_item(TableName=TABLE.name, Key={"PK": {"S": "P#a"}})
        assert stored["Item"]["score"] == {"N": "1000000000000000000002.5"}
        for read in (
            lambda: session.get(Player, name="a"),
            lambda: session.all(query(Player).where(name="a")),
            lambda: session.all(query(Player).where(name="a").select("name", "score")),
        ):
            with pytest.raises(NumberPrecisionError):
                read()
        # Fields that can hold the number read it: Decimal exactly, LossyFloat rounded.
        session.update(Player, name="a", set={"score": 1.5})
        got = session.update(Player, name="a", add={"rough": 2.5, "exact": Decimal("2.5")})
        assert got.exact == Decimal("1000000000000000000002.5")
        assert got.rough == 1e21
        assert session.get(Player, name="a") == got
