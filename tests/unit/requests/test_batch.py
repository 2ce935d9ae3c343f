"""Batch requests built without I/O: exact params, chunks by count and size, refused keys."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lsiorm import Entity
from lsiorm._requests.batch import (
    MAX_BATCH_GET,
    MAX_BATCH_WRITE,
    batch_get_requests,
    batch_write_requests,
    chunked,
    key_identity,
)
from lsiorm.errors import ValidationError
from support.models import USERS, Post, Tag, User


class Doc(Entity, table=USERS, keys={"id": "DOC#{name}"}, version="v"):
    name: str
    v: int = 0


@settings(max_examples=200)
@given(
    sizes=st.lists(st.integers(min_value=0, max_value=50), max_size=120),
    max_count=st.integers(min_value=1, max_value=30),
    max_bytes=st.integers(min_value=1, max_value=200),
)
def test_chunks_keep_order_and_limits(sizes: list[int], max_count: int, max_bytes: int) -> None:
    entries = list(enumerate(sizes))
    chunks = chunked(entries, max_count, max_bytes, lambda e: e[1])
    assert [e for c in chunks for e in c] == entries
    for c in chunks:
        assert 1 <= len(c) <= max_count
        assert len(c) == 1 or sum(s for _, s in c) <= max_bytes
    # Greedy: a chunk was closed only because the next entry did not fit.
    for c, nxt in itertools.pairwise(chunks):
        assert len(c) == max_count or sum(s for _, s in c) + nxt[0][1] > max_bytes


def test_write_requests_are_exact() -> None:
    requests = batch_write_requests(
        puts=[Post(forum="a", n=1, body="x"), User(name="ann", age=3)],
        deletes=[(Tag, {"forum": "a", "tag": "t"}), User(name="bob")],
    )
    assert requests == [
        {
            "RequestItems": {
                "batch_posts": [
                    {
                        "PutRequest": {
                            "Item": {
                                "forum": {"S": "a"},
                                "n": {"N": "1"},
                                "body": {"S": "x"},
                                "pk": {"S": "F#a"},
                                "sk": {"S": "P#0001"},
                                "_type": {"S": "Post"},
                            }
                        }
                    },
                    {"DeleteRequest": {"Key": {"pk": {"S": "F#a"}, "sk": {"S": "T#t"}}}},
                ],
                "batch_users": [
                    {
                        "PutRequest": {
                            "Item": {
                                "name": {"S": "ann"},
                                "age": {"N": "3"},
                                "id": {"S": "ann"},
                                "_type": {"S": "User"},
                            }
                        }
                    },
                    {"DeleteRequest": {"Key": {"id": {"S": "bob"}}}},
                ],
            }
        }
    ]


@pytest.mark.parametrize("count", [0, 1, 25, 26, 60, 251])
def test_writes_are_chunked_by_25(count: int) -> None:
    requests = batch_write_requests([Post(forum="f", n=i) for i in range(count)])
    sizes = [len(r["RequestItems"]["batch_posts"]) for r in requests]
    assert sum(sizes) == count
    assert all(s <= MAX_BATCH_WRITE for s in sizes)
    assert len(sizes) == -(-count // MAX_BATCH_WRITE)


@pytest.mark.parametrize("consistent", [False, True])
def test_gets_are_chunked_by_100(consistent: bool) -> None:
    keys = [{"forum": "f", "n": i} for i in range(250)]
    requests = batch_get_requests(Post, keys, consistent=consistent)
    assert [len(r["RequestItems"]["batch_posts"]["Keys"]) for r in requests] == [100, 100, 50]
    assert all(
        r["RequestItems"]["batch_posts"].get("ConsistentRead", False) is consistent
        for r in requests
    )
    assert requests[0]["RequestItems"]["batch_posts"]["Keys"][3] == {
        "pk": {"S": "F#f"},
        "sk": {"S": "P#0003"},
    }
    assert MAX_BATCH_GET == 100


def test_big_items_are_chunked_within_16_mb() -> None:
    # 25 items of 390 KB stay under 16 MB, so only the count limit applies to writes; the
    # size limit is exercised by chunked() above. Here: the sizes are DynamoDB's item sizes.
    big = [Post(forum="f", n=i, body="x" * 390_000) for i in range(30)]
    requests = batch_write_requests(big)
    assert [len(r["RequestItems"]["batch_posts"]) for r in requests] == [25, 5]


def test_the_same_key_twice_in_a_get_is_refused() -> None:
    with pytest.raises(ValidationError) as caught:
        batch_get_requests([Post, Tag], [(Post, {"forum": "a", "n": 1}), Post(forum="a", n=1)])
    assert caught.value.rule == "batch.duplicate-key"


def test_same_key_in_different_tables_is_fine() -> None:
    requests = batch_write_requests([User(name="F#a")], [(Tag, {"forum": "a", "tag": "t"})])
    assert len(requests) == 1


def test_key_identity_treats_equal_numbers_as_equal() -> None:
    assert key_identity("t", {"n": {"N": "1"}}) == key_identity("t", {"n": {"N": "1.0"}})
    assert key_identity("t", {"n": {"N": "1"}}) != key_identity("u", {"n": {"N": "1"}})
    assert key_identity("t", {"b": {"B": b"x"}}) == key_identity("t", {"b": {"B": bytearray(b"x")}})


@pytest.mark.parametrize(("puts", "deletes"), [([Doc(name="d")], []), ([], [Doc(name="d", v=3)])])
def test_versioned_entities_are_refused(puts: list[Entity], deletes: list[Any]) -> None:
    with pytest.raises(ValidationError) as caught:
        batch_write_requests(puts, deletes)
    assert caught.value.rule == "batch.versioned-entity"


def test_keys_need_a_class_when_several_are_asked_for() -> None:
    with pytest.raises(ValidationError) as caught:
        batch_get_requests([Post, Tag], [{"forum": "a", "n": 1}])
    assert caught.value.rule == "batch.key-class"
    with pytest.raises(ValidationError) as caught:
        batch_get_requests(Post, [(User, {"name": "x"})])
    assert caught.value.rule == "batch.key-class"
