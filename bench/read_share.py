"""Where a typed call's client CPU goes: transport, JSON parse, wire decode and validation.

One typed GetItem (``Session.get``), one typed query of a 1,000-item partition
(``Session.all``, one page) and one PutItem (``Session.put``) are taken apart, each part run on
its own with the same inputs the whole call gives it:

* transport: the lean lane's request and answer without parsing (the body written by orjson,
  the check that nothing watches the client, SigV4 signing, the HTTP exchange on the client's
  urllib3 pool, the answer's checksum), and signing on its own;
* JSON parse: the fast path's parse of the recorded answer (``orjson.loads`` and its check of
  every AttributeValue), and ``orjson.loads`` on its own;
* decode: what the read does with the parsed items, whole (finding each item's class, the
  class's generated decoder, Pydantic), then the generated decoder with Pydantic's validation
  left out (a stand-in class whose validator hands back what it is given), and Pydantic's
  validation and construction of the models from those decoded values;
* encode, for the put: the PutItem request built from the entity (``put_request``: the
  class's encoder with its key templates and checks, the item sized).

What is left of the whole call (lsiorm's request building, the operation's steps and driver,
the hooks, the lane's own bookkeeping) and the type dispatch (the decode less the decoder and
validation) are differences. ``python -m bench`` gives the split in CPU time;
``python -m bench.read_share --callgrind`` counts instructions instead, under valgrind, which
repeat on a loaded machine.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import orjson

from lsiorm import Session, query
from lsiorm._io import fastjson, lean
from lsiorm._model.entity import decode_stored
from lsiorm._model.entity_meta import meta_of
from lsiorm._model.generated_decoder import generate_decoder, model_keys
from lsiorm._model.item_decoding import item_decoder
from lsiorm._model.number_fit import field_checks
from lsiorm._ops import batch as lsiorm_batch
from lsiorm._query.decode import decode
from lsiorm._requests.items import get_request, put_request

from .callgrind import engine, marked_counts
from .models import LSIORM_TABLE, Order, lsiorm_entities, orders, rows
from .timing import CPU, Variant, measure
from .workloads import Group, check

REGION = "us-east-1"
QUERY_SIZE = 1_000
#: Calls per sample for the single GetItem; the query's parts run once per sample.
GET_REPEAT = 20

WHOLE = "whole call"
TRANSPORT = "transport: body, check, signing, HTTP, checksum"
SIGNING = "  of which SigV4 signing"
PARSE = "JSON parse: orjson and the AttributeValue check"
LOADS = "  of which orjson.loads"
DECODE = "decode: class dispatch, generated decoder, Pydantic"
WIRE = "  of which the generated decoder without validation"
VALIDATE = "  of which Pydantic validation and construction"
DISPATCH = "  of which the rest: finding each item's class (difference)"
CONSTRUCT = "  instead of validation: model_construct, which checks nothing"
ENCODE = "encode: the request built from the entity (put_request)"
REST = "the rest: request building, steps, driver, hooks (difference)"


@dataclass
class Read:
    """One typed call taken apart: each part a callable run on what the whole call gives it."""

    name: str
    parts: dict[str, Callable[[], Any]]
    items: int


def _unvalidated(cls: type[Any]) -> Callable[[Any], dict[str, Any]]:
    """``cls``'s generated decoder with a stand-in for Pydantic that returns the values."""
    stand_in = SimpleNamespace(
        __qualname__=cls.__qualname__,
        __pydantic_validator__=SimpleNamespace(validate_python=lambda values: values),
    )
    keys = model_keys(cls)
    if keys is None:
        raise RuntimeError(f"{cls.__name__} has no generated decoder")
    meta = meta_of(cls)
    absent = tuple(cls.model_fields[n].alias or n for n in meta.absent_is_none)
    unvalidated: Callable[[Any], dict[str, Any]] = generate_decoder(
        stand_in,  # type: ignore[arg-type]
        keys,
        absent,
        field_checks(cls),
    )
    return unvalidated


def _exchange(lane: lean.LeanLane, operation: str, params: dict[str, Any]) -> dict[str, Any]:
    response = lane.exchange(operation, params)
    if response is None or response["status_code"] != 200:
        raise RuntimeError(f"{operation}: the lean lane declined or the engine refused it")
    return response


def _signing(
    lane: lean.LeanLane, url: str, params: dict[str, Any], operation: str = "GetItem"
) -> Callable[[], Any]:
    """Signing one request's headers and body as the lane does (a signer of its own)."""
    signer = lean.SigV4Signer(url, REGION, "dynamodb")
    body = orjson.dumps(params)
    credentials = lane.client._request_signer._credentials

    def sign() -> Any:
        headers = {
            "X-Amz-Target": f"DynamoDB_20120810.{operation}",
            "Content-Type": "application/x-amz-json-1.0",
            "User-Agent": "lsiorm-bench",
        }
        signer.sign(headers, body, credentials.get_frozen_credentials(), lean._utc_now())
        return headers

    return sign


def _orders(size: int) -> tuple[Order, list[Order]]:
    """The order the GetItem reads, and the page the query reads."""
    return lsiorm_entities(rows(1, prefix="g"))[0], lsiorm_entities(rows(size, prefix=f"h{size}-"))


def write(session: Session, size: int) -> None:
    """Write the items both reads read (creating the table when it is not there)."""
    if LSIORM_TABLE not in session.client.list_tables()["TableNames"]:
        session.create_table(orders)
    single, page = _orders(size)
    session.run(lsiorm_batch.batch_write(session.ctx, puts=[single, *page]))


def prepare(session: Session, url: str, size: int) -> list[Read]:
    """Return the two reads of what `write` wrote and the put of the GetItem's order, checked
    part by part."""
    lane = lean.lean_lane_for(session.client)
    fast = fastjson.fast_path_of(session.client)
    if lane is None or fast is None:
        raise RuntimeError("the lean lane or the fast JSON path is off for this client")
    single, page = _orders(size)
    unvalidated = _unvalidated(Order)
    validate = Order.__pydantic_validator__.validate_python
    construct = Order.model_construct
    loads = orjson.loads
    decoder = item_decoder(Order)

    # GetItem
    key = {"customer": single.customer, "order_no": single.order_no}
    get_params = get_request(meta_of(Order), key)
    get_answer = _exchange(lane, "GetItem", get_params)
    get_parsed = fast.parse("GetItem", get_answer)
    check("GetItem parsed", get_parsed is not None)
    item = get_parsed["Item"]  # type: ignore[index]
    values = unvalidated(item)
    check("GetItem decode", decode_stored(orders, item, only=(Order,)) == single)
    check("GetItem parts", validate(values) == single == decoder(item))
    get = Read(
        "Typed GetItem of one order",
        {
            WHOLE: lambda: session.get(Order, **key),
            TRANSPORT: lambda: _exchange(lane, "GetItem", get_params),
            SIGNING: _signing(lane, url, get_params),
            PARSE: lambda: fast.parse("GetItem", get_answer),
            LOADS: lambda: loads(get_answer["body"]),
            DECODE: lambda: decode_stored(orders, item, only=(Order,)),
            WIRE: lambda: unvalidated(item),
            VALIDATE: lambda: validate(values),
            CONSTRUCT: lambda: construct(**values),
        },
        1,
    )
    check("GetItem whole", session.get(Order, **key) == single)

    # One page of a query
    q = query(Order).where(customer=page[0].customer)
    plan = q.plan()
    query_params = q.compile()
    query_answer = _exchange(lane, "Query", query_params)
    query_parsed = fast.parse("Query", query_answer)
    check("Query parsed", query_parsed is not None)
    check("one page", "LastEvaluatedKey" not in query_parsed)  # type: ignore[operator]
    items = query_parsed["Items"]  # type: ignore[index]
    decoded = [unvalidated(i) for i in items]
    classes = (Order,)
    check("Query decode", [decode(plan, i, classes) for i in items] == page)
    check("Query parts", [validate(v) for v in decoded] == page)
    check("Query whole", session.all(q) == page)
    whole_query = Read(
        f"Typed query of {size:,} items, one page",
        {
            WHOLE: lambda: session.all(q),
            TRANSPORT: lambda: _exchange(lane, "Query", query_params),
            PARSE: lambda: fast.parse("Query", query_answer),
            LOADS: lambda: loads(query_answer["body"]),
            DECODE: lambda: [decode(plan, i, classes) for i in items],
            WIRE: lambda: [unvalidated(i) for i in items],
            VALIDATE: lambda: [validate(v) for v in decoded],
            CONSTRUCT: lambda: [construct(**v) for v in decoded],
        },
        size,
    )

    # PutItem of the order the GetItem reads (the same item, written again)
    put_params, stored = put_request(single)
    check("PutItem request", stored == single)
    put_answer = _exchange(lane, "PutItem", put_params)
    check("PutItem parsed", fast.parse("PutItem", put_answer) is not None)
    session.put(single)
    put = Read(
        "Typed PutItem of one order",
        {
            WHOLE: lambda: session.put(single),
            TRANSPORT: lambda: _exchange(lane, "PutItem", put_params),
            SIGNING: _signing(lane, url, put_params, "PutItem"),
            PARSE: lambda: fast.parse("PutItem", put_answer),
            LOADS: lambda: loads(put_answer["body"]),
            ENCODE: lambda: put_request(single),
        },
        1,
    )
    check("PutItem whole", session.get(Order, **key) == single)
    return [get, whole_query, put]


def _settle() -> None:
    """Collect garbage, then keep what lives out of later collections (``gc.freeze``).

    Run before each part is timed: a collection in a part then only walks what that part
    allocated, not the heap the parts before it left, which would fall on whichever part
    happens to cross the collector's threshold.
    """
    gc.collect()
    gc.freeze()


def _derived(name: str, value: float) -> Variant:
    """A row of one figure: a part's median, or a difference of medians."""
    variant = Variant(name, lambda _: None)
    variant.samples.append(value)
    return variant


def split(title: str, items: int, key: str, medians: dict[str, float], clock: Any) -> Group:
    """The parts of one call as a group (ratios are shares of the whole call), with the
    differences; ``medians`` holds each part's median, in the call's order (a read's parts
    have a decode, a put's an encode)."""
    variants = []
    for name, value in medians.items():
        variants.append(_derived(name, value))
        if name == VALIDATE:
            rest = medians[DECODE] - medians[WIRE] - medians[VALIDATE]
            variants.append(_derived(DISPATCH, max(0.0, rest)))
    entity = medians[DECODE] if DECODE in medians else medians[ENCODE]
    parts = medians[TRANSPORT] + medians[PARSE] + entity
    variants.append(_derived(REST, max(0.0, medians[WHOLE] - parts)))
    return Group(key, f"Where the client CPU goes: {title}", clock, WHOLE, variants, items)


KEYS = ("share-get", "share-query", "share-put")


def read_share(url: str, size: int, rounds: int) -> list[Group]:
    """Client CPU time of each part of the three calls, interleaved in every round."""
    with Session(endpoint_url=url, region_name=REGION) as session:
        fastjson.install(session.client)
        write(session, size)
        reads = prepare(session, url, size)
        groups = []
        for read, key in zip(reads, KEYS, strict=True):
            repeat = GET_REPEAT if read.items == 1 else 1
            variants = [
                Variant(name, lambda _, f=f: f(), setup=_settle) for name, f in read.parts.items()
            ]
            measure(variants, rounds=rounds, warmup=1, repeat=repeat, clock=CPU)
            medians = {v.name: v.median for v in variants}
            group = split(read.name, read.items, key, medians, CPU)
            for row in group.variants:  # the measured rows keep their samples (and spread)
                row.samples = next((v.samples for v in variants if v.name == row.name), row.samples)
            group.notes.append(
                "Each part is timed on its own, in interleaved rounds, on the input the whole "
                "call gives it (the answer of the transport row is recorded for the parse "
                "rows); the differences are medians less medians. Garbage is collected before "
                "each part and what lives is frozen (gc.freeze), so a collection walks only what "
                "the part itself allocated."
            )
            groups.append(group)
    return groups


# -- instructions, counted by callgrind ------------------------------------------------------------


def _count(url: str, size: int, calls: int) -> None:
    """What runs under valgrind: each part ``calls`` times (a tenth, at least 2, for the
    query), between markers (``time.tzset``, whose C function nothing else here calls)."""
    with Session(endpoint_url=url, region_name=REGION) as session:
        fastjson.install(session.client)
        reads = prepare(session, url, size)
        for read in reads:
            times = calls if read.items == 1 else max(2, calls // 10)
            for name, part in read.parts.items():
                part()  # warm: connection, decoders, caches
                _settle()
                time.tzset()
                for _ in range(times):
                    part()
                time.tzset()
                print(f"{read.name}\t{read.items}\t{name}\t{times}", flush=True)


def callgrind(url: str, size: int, calls: int) -> list[Group]:
    """Instructions per part (per call), counted by callgrind in a child process."""
    with Session(endpoint_url=url, region_name=REGION) as session:
        write(session, size)
    arguments = ["--url", url, "--size", str(size), "--calls", str(calls), "--count"]
    output, totals = marked_counts("bench.read_share", arguments)
    blocks = [line.split("\t") for line in output.splitlines() if line.count("\t") == 3]
    # Dump 1 is everything before the first marker; then each block and the gap after it.
    per_call: dict[tuple[str, int], dict[str, float]] = {}
    for number, (read, items, name, times) in enumerate(blocks):
        per_call.setdefault((read, int(items)), {})[name] = totals[2 + 2 * number] / int(times)
    return [
        split(title, items, key, medians, INSTRUCTIONS)
        for ((title, items), medians), key in zip(per_call.items(), KEYS, strict=True)
    ]


#: Stands for the instruction count in a group's clock (shown in millions, not seconds).
INSTRUCTIONS = object()


def show(group: Group) -> str:
    """The group as lines for the terminal: per call, per item and share of the whole call."""
    whole = group.variant(WHOLE).median
    counted = group.clock is INSTRUCTIONS
    unit = "instructions" if counted else "CPU time"
    lines = [f"\n{group.title} ({unit}; share of the whole call)"]
    for v in group.variants:
        value = v.median
        if counted:
            shown = f"{value / 1e6:9.3f} M"
            each = f"{value / group.items / 1e3:8.1f} k/item" if group.items > 1 else ""
        else:
            shown = f"{value * 1e3:9.3f} ms"
            each = f"{value / group.items * 1e6:8.2f} µs/item" if group.items > 1 else ""
        lines.append(f"  {v.name:<62} {shown} {each:>16} {value / whole:6.1%}")
    lines.extend(f"  note: {note}" for note in group.notes)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Print the split of the three calls, in CPU time or (``--callgrind``) instructions."""
    parser = argparse.ArgumentParser(prog="python -m bench.read_share", description=__doc__)
    parser.add_argument("--url", help="an engine already running (default: start one)")
    parser.add_argument("--size", type=int, default=QUERY_SIZE, help="items in the query page")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--calls", type=int, default=GET_REPEAT, help="GetItem calls per block")
    parser.add_argument("--callgrind", action="store_true")
    parser.add_argument("--count", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    with engine(args.url) as url:
        if args.count:
            _count(url, args.size, args.calls)
            return 0
        if args.callgrind:
            groups = callgrind(url, args.size, args.calls)
        else:
            groups = read_share(url, args.size, args.rounds)
    for group in groups:
        print(show(group), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
