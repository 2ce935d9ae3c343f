"""lsiorm.testing.table_fixture: users' tests get a Session with their table, empty each time."""

from __future__ import annotations

import pytest

from lsiorm import Entity, Session, Table
from lsiorm.testing import table_fixture

fixture_table = Table("FixtureUsers", partition_key="PK", sort_key="SK")


class User(Entity, table=fixture_table, keys={"PK": "USER#{uid}", "SK": "PROFILE"}):
    uid: str
    name: str


users = table_fixture(fixture_table)
users_local = table_fixture(fixture_table, engine="dynamodb-local")


@pytest.mark.parametrize("round_", [1, 2])
def test_table_exists_and_starts_empty(users: Session, round_: int) -> None:
    assert users.get(User, uid="u1") is None  # the other round's item is gone
    users.put(User(uid="u1", name=f"round {round_}"))
    assert users.get(User, uid="u1", consistent=True) == User(uid="u1", name=f"round {round_}")


def test_dynamodb_local_fixture(users_local: Session) -> None:
    users_local.put(User(uid="u2", name="local"))
    assert users_local.check_table(fixture_table).ok
