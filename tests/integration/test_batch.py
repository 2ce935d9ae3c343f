"""Batch writes and gets on the engines: several tables and types in one batch, refused chunks."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from lsiorm import Entity, Session, Table
from lsiorm._ops.batch import BatchWriteResult, batch_get, batch_write
from lsiorm.errors import BatchWriteIncompleteError
from support.models import declare_posts
from support.tables import session_with

live_posts = Table(f"batch_live_{uuid.uuid4().hex[:8]}", "pk", "sk")
live_users = Table(f"batch_live_users_{uuid.uuid4().hex[:8]}", "id")
LivePost, LiveTag, LiveUser = declare_posts(live_posts, live_users)


@pytest.fixture(scope="module")
def live(endpoint_url: str) -> Iterator[Session]:
    with session_with(endpoint_url, live_posts, live_users, wait=False) as session:
        yield session


def test_batch_write_and_get_on_the_engine(live: Session) -> None:
    forum = uuid.uuid4().hex[:6]
    posts_ = [LivePost(forum=forum, n=i, body=f"b{i}") for i in range(70)]
    tags = [LiveTag(forum=forum, tag=f"t{i}") for i in range(20)]
    users_ = [LiveUser(name=f"{forum}-{i}") for i in range(15)]
    result = live.run(batch_write(live.ctx, [*posts_, *tags, *users_]))
    assert result == BatchWriteResult(105, 5)

    keys: list[Any] = [(LivePost, {"forum": forum, "n": i}) for i in range(75)]  # 70..74 absent
    keys += [LiveTag(forum=forum, tag="t3"), LiveUser(name=f"{forum}-9")]
    keys.append((LiveTag, {"forum": forum, "tag": "P#0001"}))  # a key whose item is not a tag
    found = live.run(batch_get(live.ctx, [LivePost, LiveTag, LiveUser], keys, consistent=True))
    assert found == [*posts_, tags[3], users_[9]]

    deleted = live.run(
        batch_write(
            live.ctx,
            deletes=[*posts_[:30], *[(LiveTag, {"forum": forum, "tag": t.tag}) for t in tags]],
        )
    )
    assert deleted.written == 50
    left = live.run(batch_get(live.ctx, LivePost, [p for p in posts_], consistent=True))
    assert left == posts_[30:]
    tags_left = live.run(
        batch_get(live.ctx, LiveTag, [{"forum": forum, "tag": t.tag} for t in tags])
    )
    assert tags_left == []


def test_a_chunk_refused_by_the_engine_is_reported_item_by_item(live: Session) -> None:
    forum = uuid.uuid4().hex[:6]
    posts_ = [LivePost(forum=forum, n=i) for i in range(30)]
    ghosts = [Ghost(name=f"g{i}") for i in range(5)]
    # Chunk 1: posts 0..24. Chunk 2: posts 25..29 and the ghosts, whose table does not exist,
    # so the engine refuses that whole request.
    with pytest.raises(BatchWriteIncompleteError) as caught:
        live.run(batch_write(live.ctx, [*posts_, *ghosts], concurrency=1))
    assert caught.value.unprocessed == [*posts_[25:], *ghosts]
    assert caught.value.cause_code == "ResourceNotFoundException"
    stored = live.run(batch_get(live.ctx, LivePost, posts_, consistent=True))
    assert stored == posts_[:25]


ghost_table = Table(f"batch_ghost_{uuid.uuid4().hex[:8]}", "id")


class Ghost(Entity, table=ghost_table, keys={"id": "{name}"}):
    name: str
