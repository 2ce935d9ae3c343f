"""The lean lane's direct send: the same pool, request bytes, answers and errors as botocore's send.

Every case sends on loopback only: a small server that records each request and answers as
DynamoDB does, a closed port, or a socket that never answers. botocore's ``URLLib3Session.send``
is the oracle: both sends get the same signed headers and body and must put the same bytes on
the wire, return the same response dict and raise the same exceptions.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from concurrent.futures import CancelledError
from typing import Any

import boto3
import pytest
import urllib3
from botocore.awsrequest import AWSPreparedRequest
from botocore.config import Config
from botocore.endpoint import convert_to_response_dict
from botocore.exceptions import ConnectionError as BotocoreConnectionError
from botocore.httpsession import URLLib3Session, get_cert_path
from moto import mock_aws
from urllib3 import exceptions as ux

from lsiorm import AsyncSession, RetryPolicy, Session, query
from lsiorm._io import direct_send, lean
from lsiorm.errors import TransportError
from lsiorm.testing.loopback import LoopbackHandler, LoopbackServer
from support.models import declare_grouped

GET = {"TableName": "t", "Key": {"pk": {"S": "a"}}}


class _Recorder(LoopbackHandler):
    """Answers every POST with ``{}``; records its request line, headers, body and client port."""

    server: _Server

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.server.seen.append((self.requestline, list(self.headers.items()), body))
        self.server.ports.append(self.client_address[1])
        self.reply(200, b"{}", headers={"X-Twice": "a"})

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _Server(LoopbackServer):
    def __init__(self) -> None:
        self.seen: list[tuple[str, list[tuple[str, str]], bytes]] = []
        self.ports: list[int] = []
        super().__init__(_Recorder, max_connections=4)


@pytest.fixture
def server() -> Iterator[_Server]:
    running = _Server()
    thread = threading.Thread(target=running.serve_forever, daemon=True)
    thread.start()
    try:
        yield running
    finally:
        running.shutdown()
        running.server_close()


def _url(server: _Server) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}"


def _client(url: str, **config: Any) -> Any:
    return boto3.client(
        "dynamodb",
        region_name="us-east-1",
        endpoint_url=url,
        aws_access_key_id="AKID",
        aws_secret_access_key="secret",
        config=Config(retries={"total_max_attempts": 1}, **config),
    )


def _lane(url: str, **config: Any) -> lean.LeanLane:
    lane = lean.lean_lane_for(_client(url, **config))
    assert lane is not None
    return lane


def _direct(lane: lean.LeanLane) -> direct_send.DirectSend:
    assert lane.direct is not None
    return lane.direct


def _signed(lane: lean.LeanLane) -> tuple[dict[str, str], bytes]:
    body = b'{"TableName":"t","Key":{"pk":{"S":"a"}}}'
    credentials = lane._credentials.get_frozen_credentials()
    return lane._signed_headers("GetItem", body, credentials), body


def _botocore_send(lane: lean.LeanLane, headers: dict[str, str], body: bytes) -> dict[str, Any]:
    request = AWSPreparedRequest("POST", lane._url, dict(headers), body, stream_output=False)
    answer = lane._http.send(request)
    return convert_to_response_dict(answer, lane._service.operation_model("GetItem"))  # type: ignore[no-any-return]


# -- the pool ---------------------------------------------------------------------------------


def test_the_pool_is_the_one_botocores_send_takes_with_its_config() -> None:
    config = {"max_pool_connections": 3, "connect_timeout": 2, "read_timeout": 7}
    lane = _lane("https://127.0.0.1:9", **config)
    pool = _direct(lane)._pool
    http = lane._http
    assert pool is http._manager.connection_from_url(lane._url)
    assert isinstance(pool, urllib3.HTTPSConnectionPool)
    assert (pool.pool.maxsize, pool.timeout.connect_timeout, pool.timeout.read_timeout) == (
        3,
        2,
        7,
    )
    # botocore's CA bundle: AWS_CA_BUNDLE's, or certifi's
    assert (pool.cert_reqs, pool.ca_certs) == ("CERT_REQUIRED", get_cert_path(http._verify))


@pytest.mark.parametrize("verify", [False, "/some/ca.pem"])
def test_tls_verification_is_set_as_botocore_sets_it(verify: Any) -> None:
    client = boto3.client(
        "dynamodb",
        region_name="us-east-1",
        endpoint_url="https://127.0.0.1:9",
        verify=verify,
        config=Config(retries={"total_max_attempts": 1}),
    )
    lane = lean.lean_lane_for(client)
    assert lane is not None
    pool = _direct(lane)._pool
    expected = ("CERT_NONE", None) if verify is False else ("CERT_REQUIRED", verify)
    assert (pool.cert_reqs, pool.ca_certs) == expected


def test_a_proxy_keeps_botocores_send(monkeypatch: pytest.MonkeyPatch) -> None:
    url = "http://127.0.0.1:9"
    assert _lane(url, proxies={"http": "http://127.0.0.1:3128"}).direct is None
    assert _lane(url, proxies={"https": "http://127.0.0.1:3128"}).direct is not None
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:3128")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    assert _lane(url).direct is None  # botocore read the proxy when the client was made
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    assert _lane(url).direct is not None


def test_the_switch_and_the_async_lane_keep_botocores_send(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert _lane("http://127.0.0.1:9").direct is not None
    monkeypatch.setenv(direct_send.DISABLE_ENV, "off")
    assert _lane("http://127.0.0.1:9").direct is None


async def test_the_async_lane_has_no_direct_send() -> None:
    async with AsyncSession(endpoint_url="http://127.0.0.1:9", region_name="us-east-1") as s:
        assert isinstance(s.driver.lane, lean.AsyncLeanLane)
        assert s.driver.lane.direct is None


def test_a_session_of_another_kind_keeps_its_send() -> None:
    class Mine(URLLib3Session):
        pass

    assert direct_send.direct_send_for(Mine(), "http://127.0.0.1:9") is None
    http = URLLib3Session()
    http.send = lambda request: None  # type: ignore[method-assign]
    assert direct_send.direct_send_for(http, "http://127.0.0.1:9") is None


# -- the wire ---------------------------------------------------------------------------------


def test_both_sends_put_the_same_bytes_on_the_wire_and_read_the_same_answer(
    server: _Server,
) -> None:
    lane = _lane(_url(server))
    headers, body = _signed(lane)
    expected = _botocore_send(lane, headers, body)
    found = _direct(lane).send(headers, body, "GetItem")
    assert server.seen[0] == server.seen[1]
    assert ("Content-Length", str(len(body))) in server.seen[1][1]
    assert found["headers"] == {k.lower(): v for k, v in expected["headers"].items()}
    assert found["headers"]["x-twice"] == "a"
    assert {k: v for k, v in found.items() if k != "headers"} == {
        k: v for k, v in expected.items() if k != "headers"
    }
    assert found["body"] == b"{}"


def test_the_connection_goes_back_to_the_pool(server: _Server) -> None:
    lane = _lane(_url(server))
    for _ in range(5):
        assert lane.send("GetItem", GET) is not None
    assert lane.sent == lane.sent_direct == 5
    assert len(set(server.ports)) == 1  # one connection, kept alive and reused
    pool = _direct(lane)._pool
    assert (pool.num_connections, pool.pool.qsize()) == (1, pool.pool.maxsize)


def test_the_pool_is_looked_up_by_its_key_not_taken_again(
    server: _Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    lane = _lane(_url(server))
    manager = lane._http._manager
    taken: list[str] = []
    take = manager.connection_from_url
    monkeypatch.setattr(manager, "connection_from_url", lambda url: taken.append(url) or take(url))
    for _ in range(3):
        assert lane.send("GetItem", GET) is not None
    assert (lane.sent_direct, taken) == (3, [])


@pytest.mark.parametrize("how", ["closed", "evicted", "new-manager"])
def test_a_pool_the_session_let_go_is_taken_again(server: _Server, how: str) -> None:
    lane = _lane(_url(server))
    assert lane.send("GetItem", GET) is not None
    first = _direct(lane)._pool
    http = lane._http
    if how == "closed":
        http.close()  # the session forgets its pools: botocore's next send opens another
    elif how == "evicted":  # the manager keeps 10 pools, the most recently used
        for port in range(1, 11):
            http._manager.connection_from_url(f"http://127.0.0.{port + 1}:9")
    else:
        http._manager = urllib3.PoolManager(**http._get_pool_manager_kwargs())
        http._manager.pool_classes_by_scheme = http._pool_classes_by_scheme
    assert lane.send("GetItem", GET) is not None
    assert lane.sent_direct == 2
    pool = _direct(lane)._pool
    assert pool is not first
    assert pool is http._manager.connection_from_url(lane._url)  # the one botocore takes
    assert (pool.cert_reqs, pool.ca_certs) == ("CERT_NONE", None)  # set, as botocore sets them


@pytest.mark.parametrize("how", ["class", "instance", "proxy-host-env"])
def test_botocores_send_replaced_later_takes_the_request(
    server: _Server, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    lane = _lane(_url(server))
    calls: list[Any] = []
    send = URLLib3Session.send

    def spy(http: Any, request: Any) -> Any:
        calls.append(request)
        return send(http, request)

    if how == "class":
        monkeypatch.setattr(URLLib3Session, "send", spy)
    elif how == "instance":
        monkeypatch.setattr(lane._http, "send", lambda request: spy(lane._http, request))
    else:  # botocore reads it on every send: the direct send leaves such a request to it
        monkeypatch.setenv("BOTO_EXPERIMENTAL__ADD_PROXY_HOST_HEADER", "true")
    assert lane.send("GetItem", GET) is not None
    assert (lane.sent, lane.sent_direct) == (1, 0)
    assert len(calls) == (how != "proxy-host-env")
    monkeypatch.undo()
    assert lane.send("GetItem", GET) is not None
    assert (lane.sent, lane.sent_direct) == (2, 1)


# -- errors -----------------------------------------------------------------------------------


def _both_raise(lane: lean.LeanLane) -> tuple[BaseException, BaseException]:
    headers, body = _signed(lane)
    raised = []
    for send in (
        lambda: _botocore_send(lane, headers, body),
        lambda: _direct(lane).send(headers, body, "GetItem"),
    ):
        try:
            send()
        except Exception as exc:  # what each send raises, compared by the caller
            raised.append(exc)
    assert len(raised) == 2, "both sends must fail"
    return raised[0], raised[1]


def _same_error(expected: BaseException, found: BaseException) -> None:
    assert type(found) is type(expected)
    assert str(found) == str(expected)
    kwargs = getattr(expected, "kwargs", {})
    assert set(getattr(found, "kwargs", {})) == set(kwargs)
    for name, value in kwargs.items():
        if name == "request":  # a request object of its own, with the same contents
            seen = found.kwargs[name]  # type: ignore[attr-defined]
            assert (seen.method, seen.url, dict(seen.headers), seen.body) == (
                value.method,
                value.url,
                dict(value.headers),
                value.body,
            )
        else:
            assert found.kwargs[name] == value  # type: ignore[attr-defined]


def _failures() -> list[BaseException]:
    conn = urllib3.connection.HTTPConnection("127.0.0.1", 9)
    return [
        ux.SSLError("certificate verify failed"),
        ux.NewConnectionError(conn, "Failed to establish a new connection: refused"),
        ux.NameResolutionError("nowhere.invalid", conn, socket.gaierror(-2, "unknown")),
        socket.gaierror(-2, "Name or service not known"),
        ux.ProxyError("Unable to connect to proxy", OSError("refused")),
        ux.ConnectTimeoutError(conn, "Connection to 127.0.0.1 timed out."),
        ux.ReadTimeoutError(None, "/", "Read timed out. (read timeout=1)"),  # type: ignore[arg-type]
        ux.ProtocolError("Connection aborted.", ConnectionResetError(104, "reset")),
        ux.IncompleteRead(3, 10),
        ux.LocationParseError("http://[bad"),
        ValueError("something else"),
        CancelledError(),
    ]


@pytest.mark.parametrize("failure", _failures(), ids=lambda e: type(e).__name__)
@pytest.mark.parametrize("where", ["urlopen", "body"])
def test_each_failure_is_raised_as_botocores_send_raises_it(
    failure: BaseException, where: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    lane = _lane("http://127.0.0.1:9")
    pool = _direct(lane)._pool

    class Answer:
        status = 200
        headers = urllib3.HTTPHeaderDict({"Content-Length": "2"})

        def stream(self, *args: Any, **kwargs: Any) -> Iterator[bytes]:
            raise failure
            yield b""  # a generator, as urllib3's stream()

    def urlopen(*args: Any, **kwargs: Any) -> Any:
        if where == "urlopen":
            raise failure
        return Answer()

    monkeypatch.setattr(pool, "urlopen", urlopen)
    expected, found = _both_raise(lane)
    if isinstance(failure, CancelledError):
        assert expected is found is failure
    else:
        _same_error(expected, found)
        assert found.__cause__ is failure


def test_a_closed_port_is_an_endpoint_connection_error() -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    lane = _lane(f"http://127.0.0.1:{port}")
    expected, found = _both_raise(lane)
    assert type(found).__name__ == "EndpointConnectionError"
    assert type(found) is type(expected)
    assert str(found) == str(expected)


def test_an_answer_that_never_comes_is_a_read_timeout() -> None:
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # connections are accepted by the kernel, never answered
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        lane = _lane(url, read_timeout=0.05, connect_timeout=1)
        expected, found = _both_raise(lane)
    assert type(found).__name__ == "ReadTimeoutError"
    assert type(found) is type(expected)
    assert str(found) == str(expected)


@pytest.mark.parametrize("setting", ["on", "0"])
def test_the_session_types_a_refused_connection_alike(
    setting: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, doc = declare_grouped("refused")
    monkeypatch.setenv(direct_send.DISABLE_ENV, setting)
    once = RetryPolicy(max_attempts=1)
    with Session(endpoint_url="http://127.0.0.1:9", region_name="us-east-1", retry=once) as s:
        driver = getattr(s.driver, "inner", s.driver)
        assert (driver.lane.direct is not None) is (setting == "on")
        with pytest.raises(TransportError) as caught:
            s.get(doc, group="g", n=1)
    assert caught.value.code == "EndpointConnectionError"
    assert isinstance(caught.value.__cause__, BotocoreConnectionError)


# -- moto's mock_aws -----------------------------------------------------------------------------


def test_mock_aws_started_after_the_session_sees_every_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the direct send was used while moto's mock_aws was on")

    monkeypatch.setattr(direct_send.DirectSend, "send", refuse)
    table, item = declare_grouped("mocked")
    with Session(region_name="us-east-1") as session:  # AWS itself, were the mock not seen
        lane = getattr(session.driver, "inner", session.driver).lane
        assert lane.direct is not None
        with mock_aws():
            session.create_table(table)
            session.put(item(group="g", n=1))
            session.batch_write([item(group="g", n=n) for n in range(2, 6)])
            assert session.get(item, group="g", n=1) == item(group="g", n=1)
            assert len(session.all(query(item).where(group="g"))) == 5
            raw = boto3.client("dynamodb", region_name="us-east-1")
            assert raw.scan(TableName=table.name)["Count"] == 5
        assert (lane.sent, lane.sent_direct) == (0, 0)
        assert lane.declined >= 4
