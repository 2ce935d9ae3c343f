"""Experiment: would AWS's common runtime (awscrt) beat the lean lane's request path?

Not part of ``make bench``: ``make bench-crt`` runs it (it puts awscrt into .cache/bench-crt,
outside the project's venv: with awscrt importable botocore signs with it too, which would
change every other measurement). It starts DynamoDB Local, writes one order and a partition of
1,000, and sends the same GetItem, PutItem and 1,000-item Query (one page) three ways:

* ``lean lane``: lsiorm's lane as it is (orjson body, lsiorm's SigV4 signer, handed to
  botocore's urllib3 pool by its direct send; `lsiorm._io.lean`, `lsiorm._io.direct_send`);
* ``lean lane, botocore's send``: the same lane with its direct send off, as it was before it
  had one (the request goes through botocore's ``URLLib3Session.send``);
* ``awscrt``: the same body bytes, signed by awscrt's SigV4 signer (``awscrt.auth``) and sent
  on an awscrt HTTP/1.1 connection (``awscrt.http``);
* ``urllib3``: the lean lane's body and signer, sent on a plain urllib3 pool of its own (no
  botocore at all: what the direct send can at best come to);
* ``awscrt HTTP, lsiorm's signer``: the same headers signed as the lean lane signs them, sent
  on the awscrt connection, which tells signing and transport apart.

Every way's response bytes go through the same checks (``x-amz-crc32``), the same orjson
parser and the same generated decoder, and every way must read the same items. Client CPU per
call is this process's CPU time (every thread, awscrt's event loop included); wall time per
call is taken in the same interleaved rounds. ``--callgrind`` counts instructions per call
instead, under valgrind, which repeats on a loaded machine. ``--ways lean,botocore-send``
measures only those ways (without awscrt installed).
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import time
from typing import Any
from urllib.parse import urlsplit

import orjson

from lsiorm import Session
from lsiorm._io import fastjson, integrity, lean
from lsiorm._model.entity import decode_item
from lsiorm._model.item_encoding import wire_item
from lsiorm._ops import batch as lsiorm_batch

from .callgrind import engine, marked_counts
from .models import LSIORM_TABLE, Order, lsiorm_entities, orders, rows
from .timing import CPU, WALL, Variant, measure

REGION = "us-east-1"
QUERY_SIZE = 1_000


def _unsigned(lane: Any, operation: str, params: Any) -> tuple[bytes, dict[str, str]]:
    """The body and the headers before signing, after the lean lane's check that it may send."""
    if not lane.usable(operation):
        raise RuntimeError("something watches the client's requests")
    headers = {
        "X-Amz-Target": f"DynamoDB_20120810.{operation}",
        "Content-Type": "application/x-amz-json-1.0",
    }
    return orjson.dumps(params), headers


class CrtLane:
    """GetItem, PutItem and Query through awscrt's HTTP client, one connection, kept open."""

    def __init__(self, url: str, client: Any, *, crt_signing: bool) -> None:
        from awscrt import auth, http

        # What the lean lane does per request besides sending, done here too: the check that
        # nothing watches the client's requests, and credentials read for every request (the
        # client's, which may refresh; awscrt's signer asks for them through a delegate).
        self._lane = lean.LeanLane(client)
        self._credentials = client._request_signer._credentials
        user_agent = client._user_agent_creator.to_string()

        def frozen() -> Any:
            now = self._credentials.get_frozen_credentials()
            return auth.AwsCredentials(now.access_key, now.secret_key, now.token)

        parts = urlsplit(url)
        self._http = http
        self._auth = auth
        self._host = parts.netloc
        self._path = parts.path or "/"
        self._user_agent = user_agent
        self._address = (parts.hostname or "localhost", parts.port or 80)
        self._connection = http.HttpClientConnection.new(*self._address).result(10)
        self._config = auth.AwsSigningConfig(
            algorithm=auth.AwsSigningAlgorithm.V4,
            signature_type=auth.AwsSignatureType.HTTP_REQUEST_HEADERS,
            credentials_provider=auth.AwsCredentialsProvider.new_delegate(frozen),
            region=REGION,
            service="dynamodb",
        )
        self._python_signer = None if crt_signing else lean.SigV4Signer(url, REGION, "dynamodb")

    def exchange(self, operation: str, params: Any) -> dict[str, Any]:
        """Send one request; return the response as botocore's response dict holds it."""
        body, headers = _unsigned(self._lane, operation, params)
        if self._python_signer is not None:
            headers["User-Agent"] = self._user_agent
            credentials = self._credentials.get_frozen_credentials()
            self._python_signer.sign(headers, body, credentials, lean._utc_now())
            request = self._request(headers, body)
        else:
            request = self._request(headers, body)
            self._auth.aws_sign_request(request, self._config).result(10)
            request.headers.add("User-Agent", self._user_agent)  # unsigned, as botocore's
        answer: dict[str, Any] = {}
        chunks: list[bytes] = []

        def on_response(status_code: int, headers: Any, **_: Any) -> None:
            answer["status_code"] = status_code
            answer["headers"] = {name.lower(): value for name, value in headers}

        def on_body(chunk: bytes, **_: Any) -> None:
            chunks.append(chunk)

        if not self._connection.is_open():  # the engine closed it (a slow run under valgrind)
            self._connection = self._http.HttpClientConnection.new(*self._address).result(10)
        stream = self._connection.request(request, on_response, on_body)
        stream.activate()
        stream.completion_future.result(30)
        answer["body"] = integrity.verified_body(answer["headers"], b"".join(chunks))
        return answer

    def _request(self, headers: dict[str, str], body: bytes) -> Any:
        http = self._http
        pairs = [("Host", self._host), ("Content-Length", str(len(body))), *headers.items()]
        return http.HttpRequest("POST", self._path, http.HttpHeaders(pairs), io.BytesIO(body))

    def close(self) -> None:
        """Close the connection."""
        self._connection.close().result(10)


class Urllib3Lane(CrtLane):
    """The lean lane's body and signer, sent on a urllib3 pool directly (no botocore send)."""

    def __init__(self, url: str, client: Any) -> None:
        import urllib3

        parts = urlsplit(url)
        self._lane = lean.LeanLane(client)
        self._credentials = client._request_signer._credentials
        self._user_agent = client._user_agent_creator.to_string()
        self._path = parts.path or "/"
        self._python_signer = lean.SigV4Signer(url, REGION, "dynamodb")
        self._pool = urllib3.HTTPConnectionPool(parts.hostname or "localhost", parts.port or 80)

    def exchange(self, operation: str, params: Any) -> dict[str, Any]:
        """Send one request; return the response as botocore's response dict holds it."""
        body, headers = _unsigned(self._lane, operation, params)
        headers["User-Agent"] = self._user_agent
        credentials = self._credentials.get_frozen_credentials()
        self._python_signer.sign(headers, body, credentials, lean._utc_now())
        response = self._pool.urlopen("POST", self._path, body=body, headers=headers)
        headers = {name.lower(): value for name, value in response.headers.items()}
        body = integrity.verified_body(headers, response.data)
        return {"status_code": response.status, "headers": headers, "body": body}

    def close(self) -> None:
        """Close the pool."""
        self._pool.close()


class Ways:
    """The ways of sending, and the parse and decode they share."""

    def __init__(self, url: str, ways: list[str]) -> None:
        self.session = Session(endpoint_url=url, region_name=REGION)
        client = self.session.client
        fastjson.install(client)
        lane = lean.lean_lane_for(client)
        fast = fastjson.fast_path_of(client)
        if lane is None or fast is None or lane.direct is None:
            raise RuntimeError("the lean lane, its direct send or the fast JSON path is off")
        self.lanes = {"lean": lane, "botocore-send": lean.LeanLane(client, direct=False)}
        self.fast = fast
        makers = {
            "crt": lambda: CrtLane(url, client, crt_signing=True),
            "crt-http": lambda: CrtLane(url, client, crt_signing=False),
            "urllib3": lambda: Urllib3Lane(url, client),
        }
        self.others: dict[str, Any] = {w: makers[w]() for w in ways if w in makers}

    def parsed(self, operation: str, response: dict[str, Any]) -> dict[str, Any]:
        """What the lean lane makes of a 2xx response: the orjson parse, as it runs it."""
        if response["status_code"] >= 300:
            raise RuntimeError(f"{operation}: HTTP {response['status_code']}: {response['body']!r}")
        found = self.fast.parse(operation, response)
        if found is None:
            raise RuntimeError(f"{operation}: the fast path declined the response")
        found["ResponseMetadata"] = lean._metadata(response)
        return found

    def call(self, way: str, operation: str, params: Any) -> dict[str, Any]:
        """One request the given way, parsed."""
        lane = self.lanes.get(way)
        if lane is not None:
            found = lane.send(operation, params)
            if found is None:
                raise RuntimeError("the lean lane declined")
            return found
        return self.parsed(operation, self.others[way].exchange(operation, params))

    def close(self) -> None:
        """Close every connection."""
        for other in self.others.values():
            other.close()
        self.session.close()


WAYS = {
    "lean": "lean lane (direct send to botocore's urllib3 pool)",
    "botocore-send": "lean lane, botocore's URLLib3Session.send",
    "crt": "awscrt HTTP + awscrt SigV4",
    "crt-http": "awscrt HTTP + lsiorm's SigV4",
    "urllib3": "urllib3 pool directly + lsiorm's SigV4",
}


def workloads(ways: Ways, entity: Order, partition: str) -> dict[str, Any]:
    """The three calls, each returning what a user gets (entities), for each way."""
    wire = wire_item(entity)
    key = {"pk": wire["pk"], "sk": wire["sk"]}
    query = {
        "TableName": LSIORM_TABLE,
        "KeyConditionExpression": "pk = :p",
        "ExpressionAttributeValues": {":p": {"S": partition}},
        "Limit": QUERY_SIZE,
    }

    def get(way: str) -> Any:
        item = ways.call(way, "GetItem", {"TableName": LSIORM_TABLE, "Key": key})["Item"]
        return decode_item(orders, item, only=(Order,))

    def put(way: str) -> Any:
        return ways.call(way, "PutItem", {"TableName": LSIORM_TABLE, "Item": wire})

    def query_page(way: str) -> Any:
        items = ways.call(way, "Query", query)["Items"]
        return [decode_item(orders, item, only=(Order,)) for item in items]

    return {"GetItem": get, "PutItem": put, f"Query of {QUERY_SIZE}": query_page}


def _prepare(url: str, chosen: list[str]) -> tuple[Ways, dict[str, Any], list[Order]]:
    ways = Ways(url, chosen)
    session = ways.session
    if LSIORM_TABLE not in session.client.list_tables()["TableNames"]:
        session.create_table(orders)
    single = lsiorm_entities(rows(1, prefix="s"))[0]
    page = lsiorm_entities(rows(QUERY_SIZE, prefix="q"))
    session.run(lsiorm_batch.batch_write(session.ctx, puts=[single, *page]))
    calls = workloads(ways, single, f"CUST#{page[0].customer}")
    for way in chosen:  # every way reads the same items
        if calls["GetItem"](way) != single or calls[f"Query of {QUERY_SIZE}"](way) != page:
            raise AssertionError(f"{way} read other items than were written")
        calls["PutItem"](way)
    return ways, calls, page


def _calls(name: str, calls: int) -> int:
    """Calls per sample: a twentieth for the 1,000-item query."""
    return max(1, calls // 20) if name.startswith("Query") else calls


def timed(url: str, rounds: int, calls_per_sample: int, chosen: list[str]) -> None:
    """Client CPU and wall time per call, every way interleaved in each round."""
    ways, calls, _ = _prepare(url, chosen)
    print(f"load average before: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    try:
        for name, call in calls.items():
            repeat = _calls(name, calls_per_sample)
            for clock, what in ((CPU, "client CPU"), (WALL, "wall")):
                variants = [Variant(WAYS[way], lambda _, w=way, c=call: c(w)) for way in chosen]
                measure(variants, rounds=rounds, warmup=1, repeat=repeat, clock=clock)
                base = variants[0].median
                print(f"\n{name}: {what} per call (median of {rounds} rounds of {repeat} calls)")
                for v in variants:
                    print(f"  {v.name:<48} {v.median * 1e6:9.0f} µs  {v.median / base:5.2f}x")
    finally:
        ways.close()
    print(f"\nload average after: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")


#: What a process under valgrind runs: ``calls`` calls of each workload, one way, with a
#: marker (``time.tzset``, whose C function nothing else here calls) before each block.
def _count(url: str, way: str, calls: int) -> None:
    ways, workload_calls, _ = _prepare(url, [way])
    for name, call in workload_calls.items():
        time.tzset()
        for _ in range(_calls(name, calls)):
            call(way)
    time.tzset()
    ways.close()


def callgrind(url: str, calls: int, chosen: list[str]) -> None:
    """Instructions per call of each way, counted by callgrind between markers."""
    for way in chosen:
        arguments = ["--url", url, "--count", way, "--calls", str(calls)]
        _, totals = marked_counts("bench.crt_lane", arguments)
        print(f"{WAYS[way]}: {[totals[n] for n in sorted(totals)]}")


def main(argv: list[str] | None = None) -> int:
    """Run the experiment; see the module."""
    parser = argparse.ArgumentParser(prog="python -m bench.crt_lane", description=__doc__)
    parser.add_argument("--url", help="an engine already running (default: start one)")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--calls", type=int, default=40, help="calls per sample")
    parser.add_argument("--callgrind", action="store_true")
    parser.add_argument(
        "--ways", default=",".join(WAYS), help=f"the ways to measure (of {', '.join(WAYS)})"
    )
    parser.add_argument("--count", choices=list(WAYS), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    chosen = [way.strip() for way in args.ways.split(",")]
    if not chosen or any(way not in WAYS for way in chosen):
        parser.error(f"--ways takes some of {', '.join(WAYS)}")
    with engine(args.url) as url:
        if args.count:
            _count(url, args.count, args.calls)
        elif args.callgrind:
            callgrind(url, args.calls, chosen)
        else:
            timed(url, args.rounds, args.calls, chosen)
    return 0


if __name__ == "__main__":
    sys.exit(main())
