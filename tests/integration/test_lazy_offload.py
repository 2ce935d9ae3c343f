"""Lazy offloaded values (``Offloaded(eager=False)``): reads leave the S3 object unfetched, an
explicit load fetches and checks it, a write-back of an unloaded value keeps the stored
reference, and misuse is refused with a named rule. On both engines, with moto's KMS and S3."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Annotated, Any

import pytest
from pydantic_core import PydanticSerializationError

from lsiorm import (
    ConfigurationError,
    Encrypted,
    Entity,
    Get,
    Keyring,
    Offloaded,
    OffloadedRef,
    ProtectionError,
    Session,
    Table,
    ValidationError,
    dry_run_put,
    query,
    stored_size,
)
from lsiorm._model.sealing import REFERENCE_BYTES
from lsiorm.testing import FaultInjector
from support.protection import objects


@dataclass
class Docs:
    table: Table
    Doc: type[Entity]


def declare_docs() -> Docs:
    table = Table(f"lz_{uuid.uuid4().hex[:10]}", "PK", "SK")

    class Doc(Entity, table=table, keys={"PK": "D#{did}", "SK": "D"}):
        did: str
        title: str = ""
        body: Annotated[bytes | None, Encrypted(), Offloaded(threshold=512, eager=False)] = None
        text: Annotated[str, Offloaded(threshold=512, eager=False)] = ""
        visits: int = 0

    return Docs(table, Doc)


@pytest.fixture
def docs(endpoint_url: str) -> Iterator[Docs]:
    declared = declare_docs()
    with Session(endpoint_url=endpoint_url, region_name="us-east-1") as admin:
        admin.create_table(declared.table)
        try:
            yield declared
        finally:
            admin.delete_table(declared.table, wait=False)


SECRET = b"QQLAZY-SECRET-" * 100


def _session(endpoint_url: str, keyring: Keyring) -> Session:
    return Session(endpoint_url=endpoint_url, region_name="us-east-1", keyring=keyring)


def test_a_read_leaves_the_object_unfetched_and_load_fetches_it(
    endpoint_url: str, docs: Docs, keyring: Keyring
) -> None:
    Doc = docs.Doc
    with _session(endpoint_url, keyring) as session:
        doc = Doc(did="1", title="t", body=SECRET, text="x" * 3000)
        session.put(doc)
        with FaultInjector() as seen:
            got = session.get(Doc, did="1", consistent=True)
            listed = session.all(query(Doc).where(did="1"))
            (batched,) = session.batch_get(Doc, [{"did": "1"}])
            (transacted,) = session.transact_get([Get(Doc, {"did": "1"})])
        assert "GetObject" not in seen.operations  # nothing fetched from S3
        assert "Decrypt" not in seen.operations  # nor any data key unwrapped
        for read in (got, listed[0], batched, transacted):
            assert read is not None
            assert isinstance(read.body, OffloadedRef)
            assert isinstance(read.text, OffloadedRef)
            assert read.title == "t"
        ref = got.body
        assert ref.encrypted
        assert not got.text.encrypted
        assert ref.bucket == keyring.bucket
        assert ref.object_key in objects_of(keyring, endpoint_url)
        assert len(ref.digest) == 64
        assert ref.size > len(SECRET) // 2
        assert b"QQLAZY" not in repr(got).encode()
        assert "QQLAZY" not in repr(ref)
        with FaultInjector() as fetched:
            loaded = session.load(got)
        assert fetched.operations.count("GetObject") == 2
        assert loaded == doc
        assert isinstance(got.body, OffloadedRef)  # load returns a copy
        only = session.load(got, "text")
        assert only.text == doc.text
        assert isinstance(only.body, OffloadedRef)
        assert session.load(loaded) is loaded  # nothing to load


def objects_of(keyring: Keyring, endpoint_url: str) -> set[str]:
    import boto3

    from lsiorm.testing import local_credentials

    del endpoint_url
    url = keyring.s3_endpoint_url
    s3 = boto3.client("s3", endpoint_url=url, region_name="us-east-1", **local_credentials(url))
    return set(objects(s3, keyring))


def test_small_values_stay_inline_and_read_as_values(
    endpoint_url: str, docs: Docs, keyring: Keyring
) -> None:
    Doc = docs.Doc
    with _session(endpoint_url, keyring) as session:
        session.put(Doc(did="s", body=b"small", text="short"))
        got = session.get(Doc, did="s", consistent=True)
        assert (got.body, got.text) == (b"small", "short")  # under the threshold: no reference


def test_writing_back_an_unloaded_value_keeps_the_reference(
    endpoint_url: str, docs: Docs, keyring: Keyring, s3: Any
) -> None:
    Doc = docs.Doc
    key = {"PK": {"S": "D#1"}, "SK": {"S": "D"}}
    with _session(endpoint_url, keyring) as session:
        session.put(Doc(did="1", title="a", body=SECRET, text="y" * 3000))
        before = session.client.get_item(TableName=docs.table.name, Key=key)["Item"]
        stored = set(objects(s3, keyring))
        got = session.get(Doc, did="1", consistent=True)
        with FaultInjector() as seen:
            session.put(got.model_copy(update={"title": "b", "visits": 1}))
        assert "GetObject" not in seen.operations
        assert "PutObject" not in seen.operations
        assert "GenerateDataKey" not in seen.operations
        # Each kept object is renewed (copied onto itself, no bytes moved) before the item.
        assert seen.operations == ["CopyObject", "CopyObject", "PutItem"]
        after = session.client.get_item(TableName=docs.table.name, Key=key)["Item"]
        assert after["body"] == before["body"]
        assert after["text"] == before["text"]
        assert after["title"] == {"S": "b"}
        assert set(objects(s3, keyring)) == stored  # no new object
        # An update that does not touch the field leaves it alone.
        session.update(Doc, did="1", set={"visits": 2})
        again = session.client.get_item(TableName=docs.table.name, Key=key)["Item"]
        assert again["body"] == before["body"]
        whole = session.load(session.get(Doc, did="1", consistent=True))
        assert (whole.body, whole.text, whole.visits) == (SECRET, "y" * 3000, 2)
        # Assigning a new value uploads it: the object first, then the item.
        with FaultInjector() as seen:
            session.put(whole.model_copy(update={"body": b"N" * 4000}))
        assert seen.operations.index("PutObject") < seen.operations.index("PutItem")
        assert session.load(session.get(Doc, did="1", consistent=True)).body == b"N" * 4000


def test_a_kept_reference_whose_object_is_gone_writes_no_item(
    endpoint_url: str, docs: Docs, keyring: Keyring, s3: Any
) -> None:
    Doc = docs.Doc
    with _session(endpoint_url, keyring) as session:
        session.put(Doc(did="1", title="a", body=SECRET))
        got = session.get(Doc, did="1", consistent=True)
        s3.delete_object(Bucket=keyring.bucket, Key=got.body.object_key)
        with FaultInjector() as seen, pytest.raises(ProtectionError) as caught:
            session.put(got.model_copy(update={"title": "b"}))
        assert caught.value.rule == "offload.missing"
        assert "PutItem" not in seen.operations  # no item references a missing object
        with pytest.raises(ProtectionError) as missing:
            session.load(got)
        assert missing.value.rule == "offload.missing"


def test_a_moved_value_is_sealed_again_for_its_new_item(
    endpoint_url: str, docs: Docs, keyring: Keyring
) -> None:
    Doc = docs.Doc
    with _session(endpoint_url, keyring) as session:
        session.put(Doc(did="1", body=SECRET, text="z" * 2000))
        got = session.get(Doc, did="1", consistent=True)
        with FaultInjector() as seen:
            session.put(got.model_copy(update={"did": "2"}))  # the reference of item 1
        assert "GetObject" in seen.operations  # opened under item 1's binding...
        assert seen.operations.index("PutObject") < seen.operations.index("PutItem")
        moved = session.load(session.get(Doc, did="2", consistent=True))
        assert (moved.body, moved.text) == (SECRET, "z" * 2000)  # ...sealed for item 2


def test_sizes_and_capacity_count_the_reference(
    endpoint_url: str, docs: Docs, keyring: Keyring
) -> None:
    Doc = docs.Doc
    with _session(endpoint_url, keyring) as session:
        big = os.urandom(300_000)  # over 400 KB with the text below, were it inline
        session.put(Doc(did="1", body=big, text="t" * 200_000))
        got = session.get(Doc, did="1", consistent=True)
        assert isinstance(got.body, OffloadedRef)
        size = stored_size(got)
        raw = session.client.get_item(
            TableName=docs.table.name, Key={"PK": {"S": "D#1"}, "SK": {"S": "D"}}
        )["Item"]
        from lsiorm import item_size

        assert size == item_size(raw)
        assert len(raw["body"]["B"]) == len(raw["text"]["B"]) == REFERENCE_BYTES
        assert dry_run_put(got, assume_new=True).total == 1.0  # 1 KB or less, as stored
        session.put(got)  # the 400 KB check counts the reference: accepted


def test_misuse_is_refused_with_a_rule(endpoint_url: str, docs: Docs, keyring: Keyring) -> None:
    Doc = docs.Doc
    with _session(endpoint_url, keyring) as session:
        session.put(Doc(did="1", body=SECRET, text="q" * 3000))
        got = session.get(Doc, did="1", consistent=True)
        ref = got.body

        def dumped() -> object:
            return got.model_dump_json()

        for misuse in (
            lambda: bytes(ref),
            lambda: len(ref),
            lambda: ref.value,
            lambda: ref.decode(),
            lambda: ref + b"x",
            lambda: list(ref),
            lambda: b"Q" in ref,
            lambda: got.text.upper(),
            dumped,
        ):
            with pytest.raises((ProtectionError, PydanticSerializationError)) as caught:
                misuse()
            error = caught.value
            # Pydantic wraps what a serializer raises; the rule is named either way.
            assert "[rule: offload.not-loaded]" in str(error), error
            assert isinstance(error, ProtectionError) or misuse is dumped
            assert "QQLAZY" not in str(error)
        with pytest.raises(ValidationError) as named:
            session.load(got, "title")
        assert named.value.rule == "load.not-lazy"
        with pytest.raises(ValidationError) as unknown:
            session.load(got, "nope")
        assert unknown.value.rule == "load.unknown-field"
        other = replace(keyring, bucket="another-bucket")
        with _session(endpoint_url, other) as elsewhere:
            with FaultInjector() as seen, pytest.raises(ValidationError) as store:
                elsewhere.load(got)
            assert store.value.rule == "offload.other-store"
            assert not seen.operations
        with Session(endpoint_url=endpoint_url, region_name="us-east-1") as bare:
            with pytest.raises(ConfigurationError) as none:
                bare.load(got)
            assert none.value.rule == "keyring.none"
        copied = got.model_copy(update={"text": got.body})  # body's reference in text
        with pytest.raises(ValidationError) as swapped:
            session.load(copied, "text")
        assert swapped.value.rule == "offload.other-field"


def test_a_swapped_reference_fails_its_binding(
    endpoint_url: str, docs: Docs, keyring: Keyring
) -> None:
    Doc = docs.Doc
    with _session(endpoint_url, keyring) as session:
        session.put(Doc(did="1", body=SECRET))
        session.put(Doc(did="2", body=b"other" * 300))
        key1 = {"PK": {"S": "D#1"}, "SK": {"S": "D"}}
        key2 = {"PK": {"S": "D#2"}, "SK": {"S": "D"}}
        one = session.client.get_item(TableName=docs.table.name, Key=key1)["Item"]
        session.client.update_item(
            TableName=docs.table.name,
            Key=key2,
            UpdateExpression="SET body = :b",
            ExpressionAttributeValues={":b": one["body"]},
        )
        got = session.get(Doc, did="2", consistent=True)  # lazily: no check yet
        with pytest.raises(ProtectionError) as caught:
            session.load(got)
        assert caught.value.rule == "protect.integrity"
        assert "QQLAZY" not in str(caught.value)


def test_eager_fields_and_writes_still_fetch(
    endpoint_url: str, docs: Docs, keyring: Keyring
) -> None:
    Doc = docs.Doc
    with _session(endpoint_url, keyring) as session:
        session.put(Doc(did="1", body=SECRET, text="w" * 3000))
        updated = session.update(Doc, did="1", set={"visits": 3})
        # What a write returns is read whole (its outcome is checked against what it wrote).
        assert updated.body == SECRET
        assert updated.visits == 3


async def test_the_async_session_reads_lazily_and_loads(
    endpoint_url: str, docs: Docs, keyring: Keyring
) -> None:
    from lsiorm import AsyncSession

    Doc = docs.Doc
    async with AsyncSession(
        endpoint_url=endpoint_url, region_name="us-east-1", keyring=keyring
    ) as session:
        doc = Doc(did="7", body=SECRET, text="a" * 4000)
        await session.put(doc)
        got = await session.get(Doc, did="7", consistent=True)
        assert isinstance(got.body, OffloadedRef)
        assert await session.load(got) == doc
        await session.put(got.model_copy(update={"title": "kept"}))
        again = await session.load(await session.get(Doc, did="7", consistent=True))
        assert again == doc.model_copy(update={"title": "kept"})


def test_a_versioned_write_back_whose_answer_was_lost_reports_success(
    endpoint_url: str, keyring: Keyring
) -> None:
    table = Table(f"lv_{uuid.uuid4().hex[:10]}", "PK", "SK")

    class Note(Entity, table=table, keys={"PK": "N#{nid}", "SK": "N"}, version="v"):
        nid: str
        title: str = ""
        body: Annotated[bytes | None, Offloaded(threshold=256, eager=False)] = None
        v: int = 0

    with _session(endpoint_url, keyring) as session:
        session.create_table(table)
        try:
            session.put(Note(nid="1", body=SECRET))
            got = session.get(Note, nid="1", consistent=True)
            assert isinstance(got.body, OffloadedRef)
            assert got.v == 1
            with FaultInjector() as faults:
                faults.lose_answer("PutItem", times=1)
                # Sent again, the write finds its own item: the kept reference is compared as
                # stored, so the outcome is the truth (written), not a version conflict.
                written = session.put(got.model_copy(update={"title": "b"}))
            assert faults.operations.count("PutItem") == 2
            assert written.v == 2
            back = session.load(session.get(Note, nid="1", consistent=True))
            assert (back.title, back.body, back.v) == ("b", SECRET, 2)
        finally:
            session.delete_table(table, wait=False)
