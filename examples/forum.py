"""Seed 000: the forum Thread table with LastPostIndex, on embedded moto or any endpoint.

Run it with ``make demo``. It creates the table, puts threads, reads one back, moves a thread's
LastPostIndex key with an update, and shows a non-projected attribute (Tags) being fetched.
Set LSIORM_ENDPOINT_URL to run it against another endpoint (DynamoDB Local, AWS).
"""

from __future__ import annotations

import os
from contextlib import ExitStack
from datetime import datetime, timezone

from pydantic import Field

from lsiorm import Entity, KeyAttribute, LocalIndex, Projection, Session, Table

threads = Table(
    "Thread",
    partition_key="ForumName",
    sort_key="Subject",
    local_indexes=[
        LocalIndex(
            "LastPostIndex",
            sort_key=KeyAttribute("LastPostDateTime", "S"),
            projection=Projection.include("Replies"),
        )
    ],
)


class Thread(
    Entity,
    table=threads,
    keys={
        "ForumName": "{forum}",
        "Subject": "{subject}",
        "LastPostDateTime": "{last_post}",
    },
):
    """A discussion thread: Replies is projected into LastPostIndex, Tags is not."""

    forum: str
    subject: str
    last_post: datetime | None = None
    replies: int = Field(default=0, alias="Replies")
    tags: list[str] = Field(default_factory=list, alias="Tags")


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
    """Return an aware UTC datetime."""
    return datetime(year, month, day, hour, minute, tzinfo=timezone.utc)


def main(endpoint_url: str) -> None:
    """Run the forum walkthrough against one endpoint."""
    with Session(endpoint_url=endpoint_url, region_name="us-east-1") as session:
        session.create_table(threads)
        print(f"created table {threads.name!r} with LSI LastPostIndex (INCLUDE Replies)")

        for subject, last_post, replies, tags in [
            ("How do LSIs work?", utc(2015, 9, 1, 10, 0), 4, ["lsi", "basics"]),
            ("Projection choices", utc(2015, 9, 20, 8, 30), 12, ["projection"]),
            ("10 GB limit", utc(2015, 10, 2, 17, 45), 7, ["limits"]),
        ]:
            session.put(
                Thread(forum="S3", subject=subject, last_post=last_post, replies=replies, tags=tags)
            )
            print(f"put  S3 / {subject!r} last_post={last_post.isoformat()} replies={replies}")

        got = session.get(Thread, forum="S3", subject="Projection choices", consistent=True)
        assert got is not None
        print(f"get  S3 / {got.subject!r} -> replies={got.replies} tags={got.tags}")

        moved = session.update(got, set={"last_post": utc(2015, 11, 5, 9, 15), "replies": 13})
        assert moved.last_post is not None
        print(
            f"update moved LastPostDateTime to {moved.last_post.isoformat()} "
            f"(replies={moved.replies}); the LSI key was rewritten in the same UpdateItem"
        )
        raw = session.client.get_item(
            TableName=threads.name,
            Key={"ForumName": {"S": "S3"}, "Subject": {"S": "Projection choices"}},
        )["Item"]
        print(f"stored LastPostDateTime = {raw['LastPostDateTime']['S']}")


if __name__ == "__main__":
    with ExitStack() as stack:
        url = os.environ.get("LSIORM_ENDPOINT_URL")
        if not url:
            from lsiorm.testing import MotoServer

            url = stack.enter_context(MotoServer()).endpoint_url
            print(f"embedded moto at {url}")
        os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
        os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
        main(url)
