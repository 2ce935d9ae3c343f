"""The collection watcher and the 10 GB error, with responses injected at the transport layer.

Neither local engine returns ItemCollectionMetrics, so a fake client (support.fakes) stands in
for botocore's: it answers each API call from a script of responses shaped as in the DynamoDB API
reference, and records what it was sent. Every test runs through SyncDriver and AsyncDriver alike.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import ClientError
from hypothesis import given
from hypothesis import strategies as st

from lsiorm import KeyAttribute, LocalIndex, Session, Table
from lsiorm._io.drivers import AsyncDriver, SyncDriver
from lsiorm._ops.collection_guard import CollectionEstimate, CollectionWarning, CollectionWatcher
from lsiorm._ops.hooks import HookRequest
from lsiorm._ops.pipeline import Context, call
from lsiorm._ops.retry import RetryPolicy
from lsiorm._ops.service_errors import collection_key_of, from_error_response
from lsiorm._ops.steps import Operation
from lsiorm.errors import ItemCollectionSizeLimitError, ValidationError
from support.fakes import AsyncScriptedClient, Clock, ScriptedClient
from support.models import forum_table

THREADS = forum_table()
TIGHT = Table(
    "Tight",
    KeyAttribute("Shard", "N"),
    "SK",
    local_indexes=[LocalIndex("ByRank", KeyAttribute("Rank"))],
    collection_warning_gb=5.0,
)
PLAIN = Table("Plain", "PK", "SK")
TABLES = (THREADS, TIGHT, PLAIN)
QUICK_RETRY = RetryPolicy(max_attempts=5, initial=0.0, maximum=0.0)


def metric(partition: dict[str, Any], low: float, high: float) -> dict[str, Any]:
    """One ItemCollectionMetrics object, as the API reference shows it."""
    return {"ItemCollectionKey": partition, "SizeEstimateRangeGB": [low, high]}


def ec2(low: float = 0.0, high: float = 1.0) -> dict[str, Any]:
    return metric({"ForumName": {"S": "EC2"}}, low, high)


def client_error(code: str, operation: str) -> ClientError:
    response: Any = {
        "Error": {"Code": code, "Message": f"{code} happened"},
        "ResponseMetadata": {"HTTPStatusCode": 400},
    }
    return ClientError(response, operation)


class Harness:
    """Runs operations through one driver over a fake client and a context with the watcher."""

    def __init__(self, mode: str, watcher: CollectionWatcher | None) -> None:
        self.mode = mode
        self.watcher = watcher
        self.client: ScriptedClient = ScriptedClient({})

    def ctx(self) -> Context:
        return Context(QUICK_RETRY, (self.watcher,) if self.watcher is not None else ())

    def script(self, **answers: list[Any]) -> ScriptedClient:
        self.client = (ScriptedClient if self.mode == "sync" else AsyncScriptedClient)(answers)
        return self.client

    def run(self, op: Operation[Any]) -> Any:
        if self.mode == "sync":
            return SyncDriver(self.client).run(op)
        return asyncio.run(AsyncDriver(self.client).run(op))

    def send(
        self, operation: str, params: dict[str, Any], response: Any, tables: tuple[Table, ...]
    ) -> Any:
        """Script one answer, send one request through the core, return the result."""
        self.script(**{operation: [response]})
        return self.run(call(self.ctx(), operation, params, tables))

    def sent(self, n: int = 0) -> dict[str, Any]:
        return self.client.calls[n][1]


@pytest.fixture(params=["sync", "async"])
def mode(request: pytest.FixtureRequest) -> str:
    value: str = request.param
    return value


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def seen() -> list[CollectionWarning]:
    return []


@pytest.fixture
def watcher(clock: Clock, seen: list[CollectionWarning]) -> CollectionWatcher:
    return CollectionWatcher(clock=clock, callbacks=[seen.append])


@pytest.fixture
def harness(mode: str, watcher: CollectionWatcher) -> Harness:
    return Harness(mode, watcher)


# -- one request of each write operation ------------------------------------------------------


def put_params(table: Table = THREADS, forum: str = "EC2") -> dict[str, Any]:
    item = {table.partition_key.name: {"S": forum}, "Subject": {"S": "s"}}
    return {"TableName": table.name, "Item": item}


def key_params(table: Table = THREADS, forum: str = "EC2") -> dict[str, Any]:
    return {"TableName": table.name, "Key": {"ForumName": {"S": forum}, "Subject": {"S": "s"}}}


def batch_params(*tables: Table) -> dict[str, Any]:
    return {
        "RequestItems": {t.name: [{"PutRequest": {"Item": put_params(t)["Item"]}}] for t in tables}
    }


def transact_params(*tables: Table) -> dict[str, Any]:
    actions = [{"Put": put_params(t)} for t in tables]
    if tables:
        actions.append({"ConditionCheck": {**key_params(tables[0]), "ConditionExpression": "x"}})
    return {"TransactItems": actions}


SINGLE = {
    "PutItem": put_params,
    "UpdateItem": lambda t=THREADS: {**key_params(t), "UpdateExpression": "SET #r = :r"},
    "DeleteItem": key_params,
}
MULTI: dict[str, Callable[..., dict[str, Any]]] = {
    "BatchWriteItem": batch_params,
    "TransactWriteItems": transact_params,
}


@pytest.mark.parametrize("operation", sorted(SINGLE))
def test_single_writes_ask_for_metrics_on_lsi_tables_only(harness: Harness, operation: str) -> None:
    harness.send(operation, SINGLE[operation](), {}, (THREADS,))
    assert harness.sent()["ReturnItemCollectionMetrics"] == "SIZE"
    harness.send(operation, SINGLE[operation](PLAIN), {}, (PLAIN,))
    assert "ReturnItemCollectionMetrics" not in harness.sent()


@pytest.mark.parametrize("operation", sorted(MULTI))
def test_multi_table_writes_ask_when_any_table_has_lsis(harness: Harness, operation: str) -> None:
    build = MULTI[operation]
    harness.send(operation, build(PLAIN, THREADS), {}, (PLAIN, THREADS))
    assert harness.sent()["ReturnItemCollectionMetrics"] == "SIZE"
    harness.send(operation, build(PLAIN), {}, (PLAIN,))
    assert "ReturnItemCollectionMetrics" not in harness.sent()


def test_metrics_are_asked_only_of_declared_tables_and_only_on_writes(harness: Harness) -> None:
    harness.send("PutItem", put_params(), {}, ())  # no declared table: nothing known
    assert "ReturnItemCollectionMetrics" not in harness.sent()
    query = {"TableName": "Thread", "KeyConditionExpression": "x"}
    harness.send("Query", query, {"Items": []}, (THREADS,))
    assert "ReturnItemCollectionMetrics" not in harness.sent()


def test_the_callers_own_choice_is_kept(harness: Harness) -> None:
    params = {**put_params(), "ReturnItemCollectionMetrics": "NONE"}
    harness.send("PutItem", params, {}, (THREADS,))
    assert harness.sent()["ReturnItemCollectionMetrics"] == "NONE"
    assert params["ReturnItemCollectionMetrics"] == "NONE"


@pytest.mark.parametrize("operation", sorted(SINGLE))
def test_single_write_metrics_are_read_and_remembered(
    harness: Harness, watcher: CollectionWatcher, clock: Clock, operation: str
) -> None:
    response = {"Attributes": {}, "ItemCollectionMetrics": ec2(1.0, 2.0)}
    result = harness.send(operation, SINGLE[operation](), response, (THREADS,))
    assert result == response
    assert watcher.estimate(THREADS, "EC2") == CollectionEstimate(
        "Thread", "ForumName", "EC2", 1.0, 2.0, clock.now
    )


@pytest.mark.parametrize("operation", sorted(MULTI))
def test_per_table_metric_lists_are_read(
    harness: Harness, watcher: CollectionWatcher, operation: str
) -> None:
    metrics = {
        "Thread": [ec2(0.0, 1.0), metric({"ForumName": {"S": "S3"}}, 2.0, 3.0)],
        "Tight": [metric({"Shard": {"N": "7"}}, 4.0, 5.0)],
    }
    response = {"ItemCollectionMetrics": metrics}
    if operation == "BatchWriteItem":
        response["UnprocessedItems"] = {}
    result = harness.send(operation, MULTI[operation](THREADS, TIGHT), response, TABLES)
    assert result == response
    assert {k: (e.low_gb, e.high_gb) for k, e in watcher.estimates.items()} == {
        ("Thread", "EC2"): (0.0, 1.0),
        ("Thread", "S3"): (2.0, 3.0),
        ("Tight", 7): (4.0, 5.0),
    }


def test_estimate_accepts_the_key_as_python_or_as_item_collection_key(
    harness: Harness, watcher: CollectionWatcher
) -> None:
    response = {"ItemCollectionMetrics": metric({"Shard": {"N": "7"}}, 0.0, 1.0)}
    harness.send("PutItem", put_params(TIGHT), response, (TIGHT,))
    found = watcher.estimate("Tight", 7)
    assert found is not None
    assert found.collection_key == {"Shard": {"N": "7"}}
    assert watcher.estimate(TIGHT, {"Shard": {"N": "7"}}) == found
    assert watcher.estimate(TIGHT, 8) is None
    assert watcher.estimate(THREADS, 7) is None


# -- thresholds, de-duplication, bands --------------------------------------------------------


@pytest.mark.parametrize(
    ("table", "threshold", "high", "warns"),
    [
        (THREADS, None, 7.9, False),
        (THREADS, None, 8.0, True),  # at the default threshold
        (THREADS, None, 9.5, True),
        (TIGHT, None, 4.99, False),
        (TIGHT, None, 5.0, True),  # the table's own collection_warning_gb
        (TIGHT, 6.0, 5.5, False),  # the watcher's threshold overrides the table's
        (THREADS, 6.0, 6.0, True),
    ],
)
def test_warns_at_or_above_the_threshold(
    mode: str,
    clock: Clock,
    caplog: pytest.LogCaptureFixture,
    table: Table,
    threshold: float | None,
    high: float,
    warns: bool,
) -> None:
    seen: list[CollectionWarning] = []
    watcher = CollectionWatcher(threshold, clock=clock, callbacks=[seen.append])
    harness = Harness(mode, watcher)
    partition = {table.partition_key.name: {"S": "EC2"} if table is THREADS else {"N": "3"}}
    response = {"ItemCollectionMetrics": metric(partition, high - 1, high)}
    with caplog.at_level(logging.WARNING, logger="lsiorm.collections"):
        harness.send("PutItem", put_params(table), response, (table,))
    records = [r for r in caplog.records if r.name == "lsiorm.collections"]
    assert len(records) == len(seen) == int(warns)
    if warns:
        (record,) = records
        assert record.levelno == logging.WARNING
        assert record.__dict__["table"] == table.name
        assert record.__dict__["collection_key"] == partition
        assert record.__dict__["size_estimate_range_gb"] == (high - 1, high)
        assert table.name in record.getMessage()
        assert f"{high - 1:g} to {high:g} GB" in record.getMessage()
        (warning,) = seen
        assert warning.estimate.high_gb == high
        assert warning.threshold_gb == (threshold or table.collection_warning_gb)


def test_warnings_repeat_per_interval_or_in_a_higher_band(
    harness: Harness, clock: Clock, seen: list[CollectionWarning]
) -> None:
    def write(high: float, forum: str = "EC2") -> int:
        response = {"ItemCollectionMetrics": metric({"ForumName": {"S": forum}}, 0.0, high)}
        harness.send("PutItem", put_params(forum=forum), response, (THREADS,))
        return len(seen)

    assert write(8.2) == 1
    clock.now += 60
    assert write(8.9) == 1  # same band (8), inside the interval
    assert write(8.2, "S3") == 2  # another collection is watched on its own
    clock.now += 60
    assert write(9.0) == 3  # grew into band 9
    assert write(9.4) == 3
    assert write(8.5) == 3  # shrank: no news
    clock.now += 3599
    assert write(9.1) == 3
    clock.now += 1
    assert write(9.1) == 4  # the interval has passed
    assert [w.band for w in seen] == [8, 8, 9, 9]


@given(
    st.lists(
        st.tuples(st.floats(0, 5000), st.floats(0.0, 10.0)),
        min_size=1,
        max_size=30,
    )
)
def test_every_warning_is_new_news(observations: list[tuple[float, float]]) -> None:
    """A warning follows the last one by the interval or a higher band; any other repeat waits."""
    clock = Clock()
    seen: list[CollectionWarning] = []
    watcher = CollectionWatcher(clock=clock, interval_seconds=600, callbacks=[seen.append])
    request = HookRequest("PutItem", put_params(), (THREADS,))
    last: CollectionWarning | None = None
    for step, high in observations:
        clock.now += step
        before = len(seen)
        watcher.after(request, {"ItemCollectionMetrics": ec2(0.0, high)})
        if high < 8.0:
            assert len(seen) == before
            continue
        quiet = last is not None and (
            clock.now - last.estimate.seen_at < 600 and int(high) <= last.band
        )
        assert len(seen) == before + (0 if quiet else 1)
        last = seen[-1]
        assert watcher.estimate(THREADS, "EC2") == CollectionEstimate(
            "Thread", "ForumName", "EC2", 0.0, high, clock.now
        )


# -- retries ----------------------------------------------------------------------------------


def batch_until_done(ctx: Context, params: dict[str, Any]) -> Operation[list[dict[str, Any]]]:
    """Resend a batch's unprocessed items until none are left, as a batch operation does."""
    responses = []
    while True:
        response = yield from call(ctx, "BatchWriteItem", params, (THREADS,))
        responses.append(response)
        unprocessed = response.get("UnprocessedItems")
        if not unprocessed:
            return responses
        params = {"RequestItems": unprocessed}


def test_each_batch_retry_response_is_read(harness: Harness, watcher: CollectionWatcher) -> None:
    left = {"Thread": [{"PutRequest": {"Item": put_params(forum="S3")["Item"]}}]}
    first = {"UnprocessedItems": left, "ItemCollectionMetrics": {"Thread": [ec2(8.0, 9.0)]}}
    s3 = metric({"ForumName": {"S": "S3"}}, 1.0, 2.0)
    second = {"UnprocessedItems": {}, "ItemCollectionMetrics": {"Thread": [s3]}}
    harness.script(BatchWriteItem=[first, second])
    params = {
        "RequestItems": {
            "Thread": [*batch_params(THREADS)["RequestItems"]["Thread"], *left["Thread"]]
        }
    }
    responses = harness.run(batch_until_done(harness.ctx(), params))
    assert responses == [first, second]
    assert [c[1]["ReturnItemCollectionMetrics"] for c in harness.client.calls] == ["SIZE"] * 2
    assert harness.client.calls[1][1]["RequestItems"] == left
    assert set(watcher.estimates) == {("Thread", "EC2"), ("Thread", "S3")}


def test_each_attempt_of_a_retried_request_asks_and_is_read(
    harness: Harness, watcher: CollectionWatcher, seen: list[CollectionWarning]
) -> None:
    throttled = client_error("ProvisionedThroughputExceededException", "PutItem")
    harness.script(PutItem=[throttled, {"ItemCollectionMetrics": ec2(8.0, 9.0)}])
    harness.run(call(harness.ctx(), "PutItem", put_params(), (THREADS,)))
    assert [c[1]["ReturnItemCollectionMetrics"] for c in harness.client.calls] == ["SIZE"] * 2
    assert len(seen) == 1
    found = watcher.estimate(THREADS, "EC2")
    assert found is not None
    assert found.high_gb == 9.0


# -- the 10 GB error --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("operation", "params"),
    [
        ("PutItem", put_params()),
        ("UpdateItem", {**key_params(), "UpdateExpression": "SET #r = :r"}),
    ],
)
def test_the_10_gb_error_is_typed_carries_its_collection_and_is_not_retried(
    harness: Harness, operation: str, params: dict[str, Any]
) -> None:
    harness.script(
        **{operation: [client_error("ItemCollectionSizeLimitExceededException", operation)]}
    )
    with pytest.raises(ItemCollectionSizeLimitError) as caught:
        harness.run(call(harness.ctx(), operation, params, (THREADS,)))
    assert len(harness.client.calls) == 1  # QUICK_RETRY allows 5 attempts: none was used
    assert caught.value.retryable is False
    assert caught.value.table == "Thread"
    assert caught.value.collection_key == {"ForumName": {"S": "EC2"}}
    assert caught.value.code == "ItemCollectionSizeLimitExceededException"


def test_the_10_gb_error_is_not_retried_without_the_watcher(mode: str) -> None:
    harness = Harness(mode, None)
    harness.script(PutItem=[client_error("ItemCollectionSizeLimitExceededException", "PutItem")])
    with pytest.raises(ItemCollectionSizeLimitError) as caught:
        harness.run(call(harness.ctx(), "PutItem", put_params(), (THREADS,)))
    assert len(harness.client.calls) == 1
    assert caught.value.table == "Thread"


def size_error_response() -> dict[str, Any]:
    error = client_error("ItemCollectionSizeLimitExceededException", "PutItem")
    response: dict[str, Any] = error.response
    return response


def test_error_mapping_finds_the_partition_key_through_the_declared_table() -> None:
    put = from_error_response(size_error_response(), "PutItem", put_params(), (THREADS,))
    assert isinstance(put, ItemCollectionSizeLimitError)
    assert (put.table, put.collection_key) == ("Thread", {"ForumName": {"S": "EC2"}})
    delete = from_error_response(size_error_response(), "DeleteItem", key_params(), (THREADS,))
    assert isinstance(delete, ItemCollectionSizeLimitError)
    assert delete.collection_key == {"ForumName": {"S": "EC2"}}
    # Without the declaration a put's item does not say which attribute is the partition key.
    undeclared = from_error_response(size_error_response(), "PutItem", put_params())
    assert isinstance(undeclared, ItemCollectionSizeLimitError)
    assert (undeclared.table, undeclared.collection_key) == ("Thread", None)


def test_collection_key_of_a_batch_is_known_only_when_unique() -> None:
    one = batch_params(THREADS, PLAIN)
    assert collection_key_of("BatchWriteItem", one, TABLES) == (
        "Thread",
        {"ForumName": {"S": "EC2"}},
    )
    two = {
        "RequestItems": {
            "Thread": [
                {"PutRequest": {"Item": put_params(forum="EC2")["Item"]}},
                {"DeleteRequest": {"Key": key_params(forum="S3")["Key"]}},
            ]
        }
    }
    assert collection_key_of("BatchWriteItem", two, TABLES) == ("Thread", None)
    assert collection_key_of("DeleteItem", {"TableName": "X", "Key": {"A": {"S": "a"}}}) == (
        "X",
        {"A": {"S": "a"}},
    )


# -- staying out of the way -------------------------------------------------------------------


def test_a_raising_callback_is_logged_and_the_others_still_run(
    mode: str, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    calls: list[str] = []

    def broken(warning: CollectionWarning) -> None:
        calls.append("broken")
        raise RuntimeError("callback bug")

    callbacks = [lambda w: calls.append("first"), broken, lambda w: calls.append("last")]
    watcher = CollectionWatcher(clock=clock, callbacks=callbacks)
    harness = Harness(mode, watcher)
    response = {"ItemCollectionMetrics": ec2(9.0, 10.0)}
    with caplog.at_level(logging.WARNING, logger="lsiorm.collections"):
        result = harness.send("PutItem", put_params(), response, (THREADS,))
    assert result == response
    assert calls == ["first", "broken", "last"]
    failures = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(failures) == 1
    assert failures[0].exc_info is not None
    assert "callback bug" in str(failures[0].exc_info[1])


@pytest.mark.parametrize(
    "metrics",
    [
        {"ItemCollectionKey": {"ForumName": {"S": "EC2"}}},  # no range
        {"ItemCollectionKey": {}, "SizeEstimateRangeGB": [0.0, 1.0]},
        {"Thread": "not a list"},
        {"Thread": [{"SizeEstimateRangeGB": [9.0, 10.0]}, ec2(1.0, 2.0)]},
        "garbage",
    ],
)
def test_malformed_metrics_never_raise_nor_change_the_response(
    harness: Harness, watcher: CollectionWatcher, metrics: Any
) -> None:
    response = {"Attributes": {"a": {"S": "b"}}, "ItemCollectionMetrics": metrics}
    assert harness.send("PutItem", put_params(), response, (THREADS,)) == response
    assert set(watcher.estimates) <= {("Thread", "EC2")}


def test_a_later_good_metric_is_read_after_a_bad_one(
    harness: Harness, watcher: CollectionWatcher
) -> None:
    bad_then_good = {"Thread": [{"SizeEstimateRangeGB": [9.0, 10.0]}, ec2(1.0, 2.0)]}
    harness.send(
        "BatchWriteItem",
        batch_params(THREADS),
        {"ItemCollectionMetrics": bad_then_good},
        (THREADS,),
    )
    found = watcher.estimate(THREADS, "EC2")
    assert found is not None
    assert found.high_gb == 2.0


def test_memory_keeps_the_most_recently_reported_collections(mode: str, clock: Clock) -> None:
    watcher = CollectionWatcher(clock=clock, max_collections=2)
    harness = Harness(mode, watcher)
    for forum in ("a", "b", "a", "c"):
        response = {"ItemCollectionMetrics": metric({"ForumName": {"S": forum}}, 0.0, 1.0)}
        harness.send("PutItem", put_params(forum=forum), response, (THREADS,))
    assert list(watcher.estimates) == [("Thread", "a"), ("Thread", "c")]


def test_install_attaches_the_watcher_to_a_session(seen: list[CollectionWarning]) -> None:
    client = ScriptedClient({"PutItem": [{"ItemCollectionMetrics": ec2(8.0, 9.0)}]})
    session = Session(client)
    watcher = CollectionWatcher(callbacks=[seen.append]).install(session)
    assert watcher in session.ctx.hooks
    session.run(call(session.ctx, "PutItem", put_params(), (THREADS,)))
    assert client.calls[0][1]["ReturnItemCollectionMetrics"] == "SIZE"
    assert len(seen) == 1


@pytest.mark.parametrize(
    ("kwargs", "rule"),
    [
        ({"threshold_gb": 0.0}, "collections.threshold"),
        ({"threshold_gb": 10.5}, "collections.threshold"),
        ({"interval_seconds": -1.0}, "collections.interval"),
        ({"max_collections": 0}, "collections.max-collections"),
    ],
)
def test_bad_settings_are_refused(kwargs: dict[str, Any], rule: str) -> None:
    with pytest.raises(ValidationError) as caught:
        CollectionWatcher(**kwargs)
    assert caught.value.rule == rule
