"""The plugin's fixtures for protected fields: ``lsiorm_keyring`` (moto's KMS and S3) and
``lsiorm_protected_session``, on the test's tables under their name prefix, as a user's tests
would use them."""

from __future__ import annotations

from typing import Annotated, Any

import boto3
import pytest

from lsiorm import Encrypted, Entity, Keyring, Offloaded, Session, Table
from lsiorm.testing import local_credentials

vault = Table("FixtureVault", partition_key="PK", sort_key="SK")


class Secret(Entity, table=vault, keys={"PK": "S#{sid}", "SK": "S"}):
    sid: str
    text: Annotated[str, Encrypted()]
    blob: Annotated[bytes | None, Offloaded(threshold=100)] = None


@pytest.fixture
def lsiorm_tables() -> list[Table]:
    return [vault]


def test_the_protected_session_seals_under_the_tests_prefix(
    lsiorm_protected_session: Session, lsiorm_keyring: Keyring, lsiorm_endpoints: Any
) -> None:
    session = lsiorm_protected_session
    live = session.table_name(vault)
    assert live.endswith("-FixtureVault")  # the test's own prefix
    secret = Secret(sid="1", text="the-plaintext", blob=b"b" * 500)
    session.put(secret)
    stored = session.client.get_item(
        TableName=live, Key={"PK": {"S": "S#1"}, "SK": {"S": "S"}}, ConsistentRead=True
    )["Item"]
    assert b"the-plaintext" not in bytes(stored["text"]["B"])
    assert len(bytes(stored["blob"]["B"])) < 100  # a reference; the value is in the bucket
    assert session.get(Secret, sid="1", consistent=True) == secret
    url = lsiorm_endpoints("moto")
    s3 = boto3.client("s3", endpoint_url=url, region_name="us-east-1", **local_credentials(url))
    listed = s3.list_objects_v2(Bucket=lsiorm_keyring.bucket)
    # Objects are named by the declared table, so a prefix or a restore under another name
    # finds them all the same.
    assert [o["Key"].split("/")[-2] for o in listed["Contents"]] == ["FixtureVault"]
