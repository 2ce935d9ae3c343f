"""One session, several places to send a call: a replica, a deadline, and a cancelled write.

Run it with ``.venv/bin/python examples/routing.py`` (embedded moto), or set
LSIORM_ENDPOINT_URL to run it on DynamoDB Local. The home engine is the endpoint the example is
given; a second engine (an embedded moto server) stands in for another region's replica or
another account. The script routes calls to it with ``session.using(...)``, gives calls a
``timeout=``, and cancels async writes at every point of their way to the engine, printing what
each reported and checking it against what the engine holds.
"""

from __future__ import annotations

import asyncio
import uuid

from lsiorm import AsyncSession, Entity, RetryPolicy, Session, Table
from lsiorm.errors import CallTimeoutError, OutcomeUnknownError
from lsiorm.testing import MotoServer, example_endpoint

profiles = Table(f"Profiles-{uuid.uuid4().hex[:8]}", "PK", "SK")


class Profile(Entity, table=profiles, keys={"PK": "USER#{user}", "SK": "PROFILE"}):
    """A user's profile, kept in two places."""

    user: str
    name: str


def replicate(home_url: str, replica_url: str) -> None:
    with Session(endpoint_url=home_url, region_name="us-east-1") as home:
        # The replica is another engine in another region (the embedded moto servers of one
        # process share their tables, but keep each region's apart).
        replica = home.using(endpoint_url=replica_url, region_name="eu-west-1")
        home.create_table(profiles)
        replica.create_table(profiles)
        try:
            ann = home.put(Profile(user="ann", name="Ann"))
            replica.put(ann)
            print(f"home has ann: {home.get(Profile, user='ann') is not None}")
            print(f"replica has ann: {replica.get(Profile, user='ann') is not None}")
            home.put(Profile(user="ben", name="Ben"))
            print(f"replica has ben: {replica.get(Profile, user='ben') is not None}")
            again = home.using(endpoint_url=replica_url, region_name="eu-west-1")
            print(f"same session object for the same place: {again is replica}")

            print(f"get within 5 s: {home.get(Profile, user='ann', timeout=5.0) == ann}")
            try:
                home.put(Profile(user="cy", name="Cy"), timeout=1e-9)
            except CallTimeoutError as exc:
                print(f"put with no time left: {type(exc).__name__} ", end="")
                print(f"before sending {exc.operation}")
            print(f"cy written anyway: {home.get(Profile, user='cy') is not None}")
        finally:
            replica.delete_table(profiles)
            home.delete_table(profiles)


async def cancel_writes(home_url: str) -> None:
    outcomes: dict[str, int] = {"cancelled": 0, "unknown": 0, "done": 0}
    truthful = True
    async with (
        AsyncSession(
            endpoint_url=home_url, region_name="us-east-1", retry=RetryPolicy(max_attempts=1)
        ) as session,
        AsyncSession(endpoint_url=home_url, region_name="us-east-1") as reader,
    ):
        await session.create_table(profiles)
        try:
            for turn in range(0, 400, 2):
                user = f"u{turn}"
                task = asyncio.ensure_future(session.put(Profile(user=user, name="x")))
                for _ in range(turn):
                    await asyncio.sleep(0)
                task.cancel()
                try:
                    await task
                    outcome = "done"
                except asyncio.CancelledError:
                    outcome = "cancelled"
                except OutcomeUnknownError:
                    outcome = "unknown"
                outcomes[outcome] += 1
                await asyncio.sleep(0.05)
                stored = await reader.get(Profile, user=user, consistent=True)
                if outcome == "cancelled" and stored is not None:
                    truthful = False
                if outcome == "done":
                    if stored is None:
                        truthful = False
                    break
        finally:
            await session.delete_table(profiles)
    print(f"async puts cancelled at each point: {outcomes}")
    print(f"every clean cancel left nothing, every done put was stored: {truthful}")


def main(home_url: str) -> None:
    with MotoServer() as replica_engine:
        replicate(home_url, replica_engine.endpoint_url)
    asyncio.run(cancel_writes(home_url))
    print(f"deleted table {profiles.name!r}")


if __name__ == "__main__":
    with example_endpoint() as url:
        main(url)
