"""lsiorm.testing.table_fixture: users' tests get a Session with their table, empty each time; the
plugin's lsiorm_aws_like starts AWS-like engines in front of the test's engine."""

from __future__ import annotations

from typing import Any

import pytest

from lsiorm import Entity, Session, Table
from lsiorm.testing import PartitionLimits, table_fixture

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


# -- the plugin's AWS-like engine ---------------------------------------------------------------

aws_like_table = Table("AwsLikeNotes", partition_key="PK", sort_key="SK")


class Note(Entity, table=aws_like_table, keys={"PK": "N#{owner}", "SK": "N#{nid:03d}"}):
    owner: str
    nid: int


@pytest.fixture
def lsiorm_tables() -> list[Table]:
    return [aws_like_table]


def test_the_aws_like_fixture_starts_engines_in_front_of_the_tests_engine(
    lsiorm_aws_like: Any,
) -> None:
    engine = lsiorm_aws_like(partition_limits=PartitionLimits(write_units=1))
    with Session(**lsiorm_aws_like.session_kwargs(engine)) as session:
        assert session.table_name(aws_like_table).endswith("-AwsLikeNotes")  # the test's prefix
        session.put(Note(owner="ann", nid=1))
        assert session.get(Note, owner="ann", nid=1, consistent=True) == Note(owner="ann", nid=1)
    assert engine.running
    assert engine.stats["requests"] >= 2
    assert lsiorm_aws_like.started == [engine]
