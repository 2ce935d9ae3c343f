"""The clientless lane on the engines: a session's first requests without a botocore client,
the same requests and results as botocore's lane, and the client built only when needed."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from lsiorm import Session, Table, query
from lsiorm._io.clientless_lane import ClientlessLane
from lsiorm._io.lazy_client import LazyClient
from lsiorm.errors import ConditionFailedError
from support.lanes import normal, recorded
from support.models import declare_scored_doc

_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def scored(endpoint_url: str) -> Iterator[tuple[Table, type]]:
    """A fresh scored-doc table, created and deleted by a session of botocore's lane."""
    table, doc = declare_scored_doc(f"cl_{uuid.uuid4().hex[:10]}")
    with Session(endpoint_url=endpoint_url, region_name="us-east-1", lean=False) as admin:
        admin.create_table(table)
        yield table, doc
        admin.delete_table(table)


def _lane(session: Session) -> ClientlessLane:
    lane = session.driver.lane
    assert isinstance(lane, ClientlessLane), "the session did not start on the clientless lane"
    return lane


def _scenario(session: Session, doc: type) -> None:
    docs = [doc(owner=f"o{i % 2}", n=i, blob=bytes([i]), blobs={bytes([i])}) for i in range(30)]
    session.put(docs[0])
    with pytest.raises(ConditionFailedError):
        session.put(docs[0], create_only=True)
    session.batch_write(puts=docs[1:])
    assert session.get(doc, owner="o0", n=0) == docs[0]
    assert session.get(doc, owner="o0", n=999) is None
    session.update(doc, owner="o1", n=1, set={"note": "changed"})
    assert len(session.batch_get(doc, [{"owner": "o1", "n": i} for i in range(1, 30, 2)])) == 15
    assert len(session.all(query(doc).where(owner="o0").page_size(4))) == 15
    session.delete(doc, owner="o0", n=2)


@pytest.mark.integration
def test_the_clientless_lane_sends_what_botocore_sends_and_builds_no_client(
    endpoint_url: str, scored: tuple[Table, type]
) -> None:
    table, doc = scored
    runs = []
    for clientless in (False, True):
        env = {} if clientless else {"LSIORM_CLIENTLESS": "0"}
        with pytest.MonkeyPatch.context() as patch:
            for name, value in env.items():
                patch.setenv(name, value)
            session = Session(endpoint_url=endpoint_url, region_name="us-east-1")
        with session, recorded(session) as notes:
            if clientless:
                lane = _lane(session)
                assert isinstance(session._client, LazyClient)
            else:
                assert not isinstance(session.driver.lane, ClientlessLane)
            _scenario(session, doc)
            if clientless:
                # Every request went out on the lane, the refused write's error included, and
                # no botocore client was built for any of them.
                assert session._client.built_or_none() is None
                assert lane.sent == len(notes.seen)
                assert lane.declined == 0
            runs.append(notes.seen)
        with Session(endpoint_url=endpoint_url, region_name="us-east-1", lean=False) as admin:
            for i in range(30):
                admin.delete(doc, owner=f"o{i % 2}", n=i)
    assert normal(runs[1], table.name) == normal(runs[0], table.name)


@pytest.mark.integration
def test_a_request_the_lane_leaves_to_botocore_builds_the_client_and_hands_over(
    endpoint_url: str, scored: tuple[Table, type]
) -> None:
    table, doc = scored
    with Session(endpoint_url=endpoint_url, region_name="us-east-1") as session:
        lane = _lane(session)
        session.put(doc(owner="a", n=1))
        assert session._client.built_or_none() is None
        session.check_table(table)  # not a data-plane request: botocore sends it
        built = session._client.built_or_none()
        assert built is not None
        assert session.client is built
        handed = lane.handed_to()
        assert handed is not None
        assert handed is not lane
        assert handed.client is built
        assert session.get(doc, owner="a", n=1) == doc(owner="a", n=1)
        assert handed.sent == 1


@pytest.mark.integration
def test_reading_session_client_builds_it_and_its_handlers_are_respected(
    endpoint_url: str, scored: tuple[Table, type]
) -> None:
    _, doc = scored
    with Session(endpoint_url=endpoint_url, region_name="us-east-1") as session:
        lane = _lane(session)
        seen: list[str] = []
        session.client.meta.events.register(
            "before-send.dynamodb.PutItem", lambda request, **_: seen.append(request.url)
        )
        session.put(doc(owner="b", n=1))
        assert seen, "a user's before-send handler did not see the request"
        assert lane.sent == 0


#: lsiorm's modules a session loads when a batch, a table operation or an audit first runs.
FIRST_USE_OF_A_SESSION = (
    "lsiorm._ops.audit",
    "lsiorm._ops.batch",
    "lsiorm._ops.pages",
    "lsiorm._ops.tables",
    "lsiorm._requests.batch",
    "lsiorm._requests.pages",
)


@pytest.mark.integration
def test_first_get_in_a_fresh_interpreter_imports_no_botocore_client(
    endpoint_url: str, scored: tuple[Table, type]
) -> None:
    table, doc = scored
    with Session(endpoint_url=endpoint_url, region_name="us-east-1", lean=False) as admin:
        admin.put(doc(owner="c", n=7))
    program = textwrap.dedent(
        f"""
        import sys
        from lsiorm import Session
        from support.models import declare_scored_doc
        table, doc = declare_scored_doc({table.name!r})
        session = Session(endpoint_url={endpoint_url!r}, region_name="us-east-1")
        found = session.get(doc, owner="c", n=7)
        assert found is not None and found.n == 7, found
        built = getattr(session._client, "built_or_none", lambda: session._client)()
        print(type(session.driver.lane).__name__, built is None,
              "botocore.client" in sys.modules, "boto3" in sys.modules)
        print(*sorted(sys.modules))
        """
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("LSIORM_CLIENTLESS")}
    env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"] = "testing", "testing"
    env["PYTHONPATH"] = os.pathsep.join([str(_ROOT / "tests"), str(_ROOT / "src")])
    done = subprocess.run(
        [sys.executable, "-c", program], env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    first, loaded = done.stdout.splitlines()
    assert first.split() == ["ClientlessLane", "True", "False", "False"]
    # Batches, table operations and collection audits load when first used, not for a get.
    assert sorted(set(FIRST_USE_OF_A_SESSION) & set(loaded.split())) == []
