"""The performance goals of lsiorm's development, and how one run did against each.

Every function here is pure: it takes the run's timed groups and returns `Target` rows. A
goal's reason (printed when it is missed) is built from figures of the same run only: the
goal's budget (the goal times the figure it is measured against), lsiorm's own figure, and the
parts of lsiorm's call that the run timed on their own (`bench.read_share` for a get, a put
and a query page; the async batch's encoding before its first request; the cold start's
parts). Where the run did not take something apart, the reason says so instead of guessing.
"""

from __future__ import annotations

from collections.abc import Mapping

from . import async_calls, cold_start, dynamoxy_peer, read_share, workloads
from .report import Target
from .timing import Variant
from .workloads import Group

#: The read_share group that takes apart each call of a CPU or wall-time group.
SPLITS = {"get": "share-get", "put": "share-put", "query": "share-query"}
#: The goal for lsiorm's own CPU per written item to a stub client, in seconds.
WRITE_CPU_GOAL = 15e-6


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:,.0f} µs"


def _us1(seconds: float) -> str:
    return f"{seconds * 1e6:,.1f} µs"


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:,.2f} ms"


def _s(seconds: float) -> str:
    """Seconds for a batch's wall time, milliseconds below one second (a small batch)."""
    if abs(seconds) >= 1:
        return f"{seconds:,.2f} s"
    return f"{seconds * 1e3:,.0f} ms"


def _over(value: float, budget: float, unit: str = "µs") -> str:
    """How far ``value`` is over (or under) ``budget``, in the unit's words."""
    show = {"µs": _us, "ms": _ms, "s": _s}[unit]
    if value > budget:
        return f"{show(value - budget)} over it"
    return f"{show(budget - value)} under it"


def _peer(group: Group, prefix: str) -> Variant:
    """The first row of ``group`` whose name starts with ``prefix`` (a peer library's)."""
    return next(v for v in group.variants if v.name.startswith(prefix))


def _has(group: Group, prefix: str) -> bool:
    return any(v.name.startswith(prefix) for v in group.variants)


def _medians(group: Group | None) -> dict[str, float]:
    return {} if group is None else {v.name: v.median for v in group.variants}


def _split_of(groups: Mapping[str, Group], call: str) -> dict[str, float]:
    """The medians of the read_share split of ``call`` ("get", "put", "query"), or nothing."""
    return _medians(groups.get(SPLITS[call]))


# -- CPU and wall time of single calls ------------------------------------------------------------


def _entity_part(split: Mapping[str, float]) -> tuple[str, float]:
    if read_share.DECODE in split:
        return "decode", split[read_share.DECODE]
    return "encode", split[read_share.ENCODE]


def cpu_reason(
    mine: float,
    peer: float,
    peer_name: str,
    goal: float,
    split: Mapping[str, float],
    call: str,
    asynchronous: bool,
) -> str:
    """Why lsiorm's client CPU per ``call`` is or is not within ``goal`` times the peer's:
    the budget, and each part of lsiorm's call (``split``: read_share's medians of the sync
    call) set against it; the transport, signing and HTTP in Python, is the floor."""
    budget = goal * peer
    text = (
        f"{peer_name}'s whole call takes {_us(peer)} of client CPU, so the goal allows "
        f"{_us(budget)}; lsiorm's takes {_us(mine)}, {_over(mine, budget)}."
    )
    if not split:
        return text + f" This run did not take lsiorm's {call} apart (bench.read_share)."
    transport = split[read_share.TRANSPORT]
    parse, rest = split[read_share.PARSE], split[read_share.REST]
    entity, amount = _entity_part(split)
    which = f"the sync {call}" + (", the async one is not taken apart" if asynchronous else "")
    text += (
        f" Taken apart ({which}; bench.read_share): transport {_us(transport)} "
        f"(SigV4 signing alone {_us(split[read_share.SIGNING])}), JSON parse {_us(parse)}, "
        f"{entity} {_us(amount)}, the rest (request building, steps, driver, hooks) "
        f"{_us(rest)}."
    )
    if transport > budget:
        return text + (
            f" The floor is the transport: in Python (body, signing, HTTP, checksum) it alone "
            f"takes {_us(transport)}, {transport / peer:.0%} of {peer_name}'s whole call, "
            f"{_us(transport - budget)} over the whole budget."
        )
    left = budget - transport
    others = {"JSON parse": parse, entity: amount, "the rest": rest}
    largest = max(others, key=others.__getitem__)
    text += (
        f" The floor is the transport: in Python (body, signing, HTTP, checksum) it takes "
        f"{_us(transport)}, {transport / peer:.0%} of {peer_name}'s whole call, which leaves "
        f"{_us(left)} of the budget for the other parts; they take "
        f"{_us(parse + amount + rest)}, the largest {largest} ({_us(others[largest])})"
    )
    if others[largest] > left:
        return text + ", alone over what is left."
    return text + "."


def wall_reason(
    mine: float,
    peer: float,
    peer_name: str,
    goal: float,
    cpu: tuple[float, float] | None,
    transport: float | None,
) -> str:
    """Why lsiorm's wall time per call is or is not within ``goal`` times the peer's: the
    budget, and the client CPU of both in the same run (``cpu``: lsiorm's, the peer's)."""
    budget = goal * peer
    text = (
        f"lsiorm's call takes {_us(mine)} of wall time against {peer_name}'s {_us(peer)}, so "
        f"the goal allows {_us(budget)}; lsiorm is {_over(mine, budget)}."
    )
    if cpu is None:
        return text + " This run did not time the client CPU of these calls."
    mine_cpu, peer_cpu = cpu
    gap = mine_cpu - peer_cpu
    text += (
        f" Client CPU per call in this run: lsiorm {_us(mine_cpu)}, {peer_name} "
        f"{_us(peer_cpu)} ({'+' if gap >= 0 else '-'}{_us(abs(gap))} for lsiorm)"
    )
    if transport is not None:
        text += (
            f"; of lsiorm's, the transport in Python (body, signing, HTTP, checksum; the sync "
            f"call taken apart) alone takes {_us(transport)}"
        )
    text += "."
    if mine > budget and gap > 0:
        more = "more" if gap >= mine - budget else "less"
        text += (
            f" lsiorm's extra client CPU ({_us(gap)}) is {more} than what it is over the "
            f"goal ({_us(mine - budget)})."
        )
    return text


def _cpu_of(
    groups: Mapping[str, Group], key: str, mine: str, peer: str
) -> tuple[float, float] | None:
    """lsiorm's and the peer's client CPU per call, from the CPU group ``key``, if timed."""
    group = groups.get(key)
    if group is None or not _has(group, peer) or not any(v.name == mine for v in group.variants):
        return None
    return group.variant(mine).median, _peer(group, peer).median


def _wall_target(
    groups: Mapping[str, Group],
    name: str,
    key: str,
    mine: str,
    peer: str,
    peer_name: str,
    goal_text: str,
    measured_extra: str = "",
) -> Target:
    """A single call's wall time against a peer's (goal 1.00x), with its reason."""
    group = groups[key]
    call = "get" if key.startswith("get") else "put"
    wall_mine, wall_peer = group.variant(mine).median, _peer(group, peer).median
    cpu = _cpu_of(groups, f"cpu-{call}", mine, peer)
    split = _split_of(groups, call)
    ratio = wall_mine / wall_peer
    return Target(
        name,
        goal_text,
        f"{ratio:.2f}x {peer_name}{measured_extra}",
        ratio <= 1.0,
        wall_reason(
            wall_mine,
            wall_peer,
            peer_name,
            1.0,
            cpu,
            split.get(read_share.TRANSPORT),
        ),
    )


# -- queries and decoding -------------------------------------------------------------------------


def _query_split(split: Mapping[str, float], items: int, asynchronous: bool) -> str:
    whole = split[read_share.WHOLE] or 1.0

    def part(name: str) -> str:
        return f"{_ms(split[name])} ({split[name] / whole:.0%})"

    which = "the sync query" + (", the async one is not taken apart" if asynchronous else "")
    return (
        f" In client CPU ({which}, one page of {items:,}; bench.read_share): JSON parse "
        f"{part(read_share.PARSE)}, decode {part(read_share.DECODE)} (the generated decoder "
        f"{_ms(split[read_share.WIRE])}, Pydantic {_ms(split[read_share.VALIDATE])}, finding "
        f"each item's class {_ms(split[read_share.DISPATCH])}), transport "
        f"{part(read_share.TRANSPORT)}, the rest {part(read_share.REST)}."
    )


def query_reason(
    mine: float,
    raw: float,
    raw_name: str,
    goal: float,
    fast: float | None,
    split: Mapping[str, float],
    items: int,
    asynchronous: bool,
) -> str:
    """Why a typed query is or is not within ``goal`` times the raw client's wall time: the
    fast path alone (``fast``, raw client with lsiorm's JSON parse, no decode) and the split
    of lsiorm's query page."""
    budget = goal * raw
    text = (
        f"the goal allows {_ms(budget)} ({goal:.2f}x {raw_name}'s {_ms(raw)}); lsiorm takes "
        f"{_ms(mine)}, {_over(mine, budget, 'ms')}."
    )
    if fast is not None:
        text += (
            f" The fast path alone (boto3's client with lsiorm's JSON parse, wire dicts, "
            f"nothing decoded) takes {_ms(fast)}, {fast / raw:.2f}x"
        )
        if fast > budget:
            text += ": alone over the budget."
        else:
            text += (
                f", which leaves {_ms(budget - fast)} for the typed decode and the session's "
                f"steps; they take {_ms(mine - fast)} (the difference)."
            )
    if split:
        text += _query_split(split, items, asynchronous)
        decode = split[read_share.DECODE]
        if decode > budget:
            text += f" The decode alone is over the whole budget by {_ms(decode - budget)}."
    else:
        text += " This run did not take the query apart (bench.read_share)."
    return text


def _per_item(split: Mapping[str, float], items: int) -> dict[str, float]:
    return {name: value / items for name, value in split.items()}


def decode_reason(
    mine: float, budget: float, goal_text: str, split: Mapping[str, float], split_items: int
) -> str:
    """Why a typed decode (per item, seconds) is or is not within ``budget`` per item: the
    parts of the query path's decode that read_share timed on their own."""
    text = f"{goal_text} allows {_us1(budget)} per item; lsiorm takes {_us1(mine)}."
    if not split:
        return text + " This run did not take the decode apart (bench.read_share)."
    each = _per_item(split, split_items)
    parts = {
        "the generated decoder without validation": each[read_share.WIRE],
        "Pydantic's validation and construction": each[read_share.VALIDATE],
        "finding each item's class": each[read_share.DISPATCH],
    }
    text += (
        " Taken apart on the query path (bench.read_share, timed apart from this section), "
        "per item: " + ", ".join(f"{name} {_us1(value)}" for name, value in parts.items()) + "."
    )
    over = [name for name, value in parts.items() if value > budget]
    if over:
        return text + f" Alone over the budget, as timed there: {', '.join(over)}."
    total = sum(parts.values())
    return text + (
        f" No part alone is over the budget; together they take {_us1(total)}, "
        f"{total / budget:.0%} of it."
    )


def _decode_targets(groups: Mapping[str, Group]) -> list[Target]:
    g = groups["decode"]
    split = _split_of(groups, "query")
    split_items = groups["share-query"].items if split else 1
    base_name = g.baseline
    base = g.variant(base_name).median / g.items
    mine = g.variant("lsiorm decode_item").median / g.items
    pynamodb = g.variant("PynamoDB from_raw_data").median / g.items
    query_path = g.variant("lsiorm query result decoding (what Session.all calls)").median
    query_path /= g.items
    return [
        Target(
            "Typed decode vs boto3",
            "≤ 0.50x TypeDeserializer to dicts",
            f"{mine / base:.2f}x",
            mine <= 0.5 * base,
            decode_reason(
                mine, 0.5 * base, f"0.50x {base_name} ({_us1(base)})", split, split_items
            ),
        ),
        Target(
            "Typed decode vs PynamoDB",
            "≥ 5x faster",
            f"{pynamodb / mine:.1f}x faster",
            pynamodb >= 5 * mine,
            decode_reason(
                mine, pynamodb / 5, f"A fifth of PynamoDB's {_us1(pynamodb)}", split, split_items
            ),
        ),
        Target(
            "Typed decode on the query path (what Session.all calls)",
            "≤ 0.50x TypeDeserializer to dicts",
            f"{query_path / base:.2f}x",
            query_path <= 0.5 * base,
            decode_reason(
                query_path, 0.5 * base, f"0.50x {base_name} ({_us1(base)})", split, split_items
            ),
        ),
    ]


# -- batches --------------------------------------------------------------------------------------


def async_batch_reason(mine: float, raw: float, goal: float, before: float | None, n: int) -> str:
    """Why the async batch is or is not within ``goal`` times the raw client's whole run: what
    lsiorm spends encoding and checking the entities before its first request (``before``)."""
    budget = goal * raw
    text = (
        f"the goal allows {_s(budget)} ({goal:.2f}x the raw client's {_s(raw)}, handed ready "
        f"wire items); lsiorm takes {_s(mine)}, {_over(mine, budget, 's')}."
    )
    if before is None:
        return text + " This run did not time the encoding before the first request."
    sending = mine - before
    text += (
        f" Before its first request lsiorm encodes and checks all {n:,} entities: "
        f"{_s(before)} (timed on its own in the same rounds), {before / raw:.0%} of the raw "
        f"client's whole run, while the engine waits. The sending after it takes about "
        f"{_s(sending)} (the difference), {sending / raw:.2f}x the raw client's run"
    )
    if sending > budget:
        return text + ": the sending alone is over the budget."
    return text + f", within the budget; with the encoding lsiorm is {_over(mine, budget, 's')}."


def _batch_targets(groups: Mapping[str, Group]) -> list[Target]:
    out = []
    if "batch-sync" in groups:
        g = groups["batch-sync"]
        mine = g.variant(workloads.LEAN_BATCH).median
        raw = g.variant(g.baseline).median
        pydynox = _peer(g, "pydynox").median
        text = (
            f"the goal allows {_s(min(0.6 * raw, 1.05 * pydynox))} (0.60x raw boto3's "
            f"{_s(raw)}, 1.05x pydynox's {_s(pydynox)}); lsiorm takes {_s(mine)}."
        )
        stub = groups.get("write-cpu")
        if stub is not None and stub.items == g.items:
            own = stub.variant(workloads.STUB_WRITE).median
            text += (
                f" lsiorm's own CPU for the same {g.items:,} items to a stub client is "
                f"{_s(own)}, {own / mine:.0%} of its wall time here; the rest (the requests: "
                "HTTP and the engine's answers) is not taken apart."
            )
        else:
            text += " This run did not time lsiorm's own CPU for this batch (stub client)."
        out.append(
            Target(
                "Sync batch write vs raw boto3 and pydynox",
                "≤ 0.60x raw boto3 handed wire items, ≤ 1.05x pydynox",
                f"{mine / raw:.2f}x raw, {mine / pydynox:.2f}x pydynox",
                mine <= 0.6 * raw and mine <= 1.05 * pydynox,
                text,
            )
        )
    if "batch-async" in groups:
        g = groups["batch-async"]
        raw, mine = g.variant(g.baseline).median, g.variant(workloads.ASYNC_BATCH).median
        fresh = g.variant(workloads.ASYNC_BATCH_NEW_SESSION).median
        out.append(
            Target(
                "Async batch write vs raw aioboto3, 8 in flight",
                "≤ 0.70x raw aioboto3 (8 writers of ready wire items), entities in, written out",
                f"{mine / raw:.2f}x, {fresh / raw:.2f}x with a new session per batch",
                mine <= 0.7 * raw,
                async_batch_reason(mine, raw, 0.7, g.aside.get(workloads.ENCODE_BEFORE), g.items),
            )
        )
    return out


def _write_cpu_target(groups: Mapping[str, Group]) -> Target:
    g = groups["write-cpu"]
    per_item = g.variant(workloads.STUB_WRITE).median / g.items
    serializer = g.variant(g.baseline).median / g.items
    text = (
        f"the goal allows {_us1(WRITE_CPU_GOAL)} per item; lsiorm takes {_us1(per_item)}. "
        f"The TypeSerializer alone, dicts to wire items with no request, takes "
        f"{_us1(serializer)} per item here."
    )
    encode = groups.get("encode")
    if encode is not None:
        wire = encode.variant("lsiorm wire_item").median / encode.items
        text += (
            f" lsiorm's encoding alone (wire_item, the encode section) takes {_us1(wire)} per "
            f"item, {wire / WRITE_CPU_GOAL:.0%} of the budget; the other "
            f"{_us1(max(0.0, per_item - wire))} (the difference: keys and duplicates checked, "
            "chunks, hooks, the watcher) are not taken apart in this run."
        )
    return Target(
        "lsiorm's own CPU per written item (stub client)",
        "≤ 15 µs",
        f"{per_item * 1e6:.1f} µs ({g.ratio(workloads.STUB_WRITE):.2f}x the TypeSerializer)",
        per_item <= WRITE_CPU_GOAL,
        text,
    )


# -- the goals ------------------------------------------------------------------------------------


def _single_sync(groups: Mapping[str, Group]) -> list[Target]:
    out = []
    for key, mine, name in (
        ("put", workloads.LEAN_PUT, "Single put, sync"),
        ("get", workloads.LEAN_GET, "Single typed get, sync"),
    ):
        if key not in groups:
            continue
        g = groups[key]
        out.append(
            _wall_target(
                groups,
                f"{name} vs pydynox",
                key,
                mine,
                _peer(g, "pydynox").name,
                "pydynox",
                "≤ 1.00x pydynox's sync call (dynamoxy has no sync call: see the async row)",
                f", {g.ratio(mine):.2f}x raw boto3",
            )
        )
    return out


def _imports(imports: workloads.ImportResult) -> list[Target]:
    g = imports.group
    ms = g.variant(workloads.LSIORM_IMPORT).median
    boto3 = g.variant("import boto3").median
    pydynox = g.variant("import pydynox").median if _has(g, "import pydynox") else None
    figures = f"{workloads.LSIORM_IMPORT} takes {_ms(ms)}, import boto3 alone {_ms(boto3)}" + (
        f", import pydynox {_ms(pydynox)}" if pydynox is not None else ""
    )
    figures += "; this run does not split lsiorm's import by module (python -X importtime does)."
    aiohttp = imports.lsiorm_imports_aiohttp
    return [
        Target(
            workloads.LSIORM_IMPORT,
            "≤ 250 ms, without aiohttp",
            f"{ms * 1e3:.0f} ms{', imports aiohttp' if aiohttp else ''}",
            ms <= 0.250 and not aiohttp,
            f"the goal allows 250 ms; {figures}" + (" It loaded aiohttp." if aiohttp else ""),
        ),
        Target(
            f"{workloads.LSIORM_IMPORT} vs import boto3",
            "≤ 120 ms more",
            f"{(ms - boto3) * 1e3:+.0f} ms",
            ms - boto3 <= 0.120,
            f"the goal allows {_ms(boto3 + 0.120)}; {figures}",
        ),
    ]


def _cold(g: Group) -> Target:
    cold, peer = g.variant(cold_start.LSIORM_SYNC).median, g.variant(cold_start.PYDYNOX).median
    why = (
        cold_start.reason(g)
        if isinstance(g, cold_start.ColdGroup) and g.parts
        else "this run did not split the cold starts into their parts."
    )
    return Target(
        "Cold start to the first GetItem vs pydynox",
        "≤ 1.5x pydynox's (the aim: 1.2x)",
        f"{cold / peer:.2f}x pydynox ({cold * 1e3:.0f} ms against {peer * 1e3:.0f} ms)",
        cold <= 1.5 * peer,
        f"the goal allows {_ms(1.5 * peer)}; " + why,
    )


def _query(groups: Mapping[str, Group]) -> Target:
    g = groups["query"]
    mine = g.variant("lsiorm Session.all (fast path)").median
    raw = g.variant(g.baseline).median
    pydynox = g.variant("pydynox Model.sync_query (Rust core, typed)").median
    fast = g.variant("boto3 client + lsiorm.fastjson (wire dicts)").median
    return Target(
        f"Full typed query of {g.items} items",
        "≤ 0.50x the raw boto3 client call, ahead of pydynox's typed query",
        f"{mine / raw:.2f}x, pydynox {pydynox / raw:.2f}x",
        mine <= 0.5 * raw and mine < pydynox,
        query_reason(
            mine, raw, "the raw boto3 client", 0.5, fast, _split_of(groups, "query"), g.items, False
        )
        + f" pydynox's typed query takes {_ms(pydynox)}.",
    )


def _compile(g: Group) -> Target:
    plan, trip = g.variants[1].median, g.variants[0].median
    return Target(
        "Query compile + index choice",
        "< 3% of a DynamoDB Local round trip",
        f"{plan / trip:.1%}",
        plan < 0.03 * trip,
        f"the goal allows {_us(0.03 * trip)} (3% of a {_ms(trip)} GetItem round trip); "
        f"building the query, choosing its index and compiling the request take {_us(plan)}. "
        "This run does not take the plan apart.",
    )


def _memory(memory: workloads.MemoryResult) -> Target:
    bound = memory.lazy / memory.one_page
    return Target(
        f"Memory iterating {memory.items:,} items lazily",
        "about one page (≤ 2x the first page's peak)",
        f"{bound:.2f}x the first page",
        bound <= 2,
        f"peak traced memory: the first page alone {memory.one_page / 2**20:.1f} MiB, all "
        f"{memory.pages} pages iterated lazily {memory.lazy / 2**20:.1f} MiB (the goal allows "
        f"{2 * memory.one_page / 2**20:.1f} MiB), one eager list "
        f"{memory.eager / 2**20:.1f} MiB.",
    )


def targets(
    groups: Mapping[str, Group],
    memory: workloads.MemoryResult | None,
    imports: workloads.ImportResult | None = None,
) -> list[Target]:
    """The goals of the sync workloads, decoding, batches, imports and memory."""
    out = _single_sync(groups)
    if "write-cpu" in groups:
        out.append(_write_cpu_target(groups))
    if "encode" in groups:
        g = groups["encode"]
        wire = g.variant("lsiorm wire_item").median / g.items
        serializer = g.variant(g.baseline).median / g.items
        out.append(
            Target(
                "Encode vs boto3",
                "≤ 1.00x TypeSerializer from dicts",
                f"{wire / serializer:.2f}x",
                wire <= serializer,
                f"the goal allows {_us1(serializer)} per item (the TypeSerializer, handed "
                f"dicts that hold the keys already); wire_item takes {_us1(wire)}, and also "
                "renders and checks the key templates, checks the values and sizes the item. "
                "This run does not time those apart.",
            )
        )
    out += [t for t in _batch_targets(groups) if t.name.startswith("Sync")]
    if imports is not None:
        out.append(_imports(imports)[0])
    if "cold" in groups:
        out.append(_cold(groups["cold"]))
    if "decode" in groups:
        out += _decode_targets(groups)
    if "query" in groups:
        out.append(_query(groups))
    out += [t for t in _batch_targets(groups) if t.name.startswith("Async")]
    if "compile" in groups:
        out.append(_compile(groups["compile"]))
    if imports is not None:
        out.append(_imports(imports)[1])
    if memory is not None:
        out.append(_memory(memory))
    return out


def _vs_dynamoxy(
    groups: Mapping[str, Group], key: str, mine: str, goal: float, name: str
) -> Target:
    group = groups[key]
    if not _has(group, dynamoxy_peer.LABEL):
        return Target(
            f"{name} vs dynamoxy",
            f"≤ {goal:.2f}x dynamoxy",
            "not measured",
            False,
            "dynamoxy needs Python 3.12 or later, and this run found none (see the dynamoxy "
            "line at the top).",
        )
    value, peer = group.variant(mine).median, _peer(group, dynamoxy_peer.LABEL).median
    asynchronous = mine.startswith("lsiorm Async")
    if key.startswith("cpu-"):
        call = key.removeprefix("cpu-")
        why = cpu_reason(value, peer, "dynamoxy", goal, _split_of(groups, call), call, asynchronous)
    elif key == "query-async":
        split = _split_of(groups, "query")
        why = query_reason(value, peer, "dynamoxy", goal, None, split, group.items, asynchronous)
        if split:
            work = split[read_share.PARSE] + split[read_share.DECODE]
            why += (
                f" lsiorm's JSON parse and decode of the page alone take {_ms(work)} of CPU, "
                f"{work / peer:.0%} of dynamoxy's whole query."
            )
    else:
        return _wall_target(
            groups,
            f"{name} vs dynamoxy",
            key,
            mine,
            dynamoxy_peer.LABEL,
            "dynamoxy",
            f"≤ {goal:.2f}x dynamoxy",
        )
    return Target(
        f"{name} vs dynamoxy",
        f"≤ {goal:.2f}x dynamoxy",
        f"{value / peer:.2f}x dynamoxy",
        value <= goal * peer,
        why,
    )


def async_targets(groups: Mapping[str, Group]) -> list[Target]:
    """lsiorm's async calls and client CPU against the Rust-core peers in the same rounds:
    dynamoxy where this run has its rows (it needs Python 3.12+), and pydynox's async calls."""
    out = []
    for key, mine, goal, name in (
        ("query-async", async_calls.ASYNC_QUERY, 1.0, "Typed query, async"),
        ("put-async", async_calls.ASYNC_PUT, 1.0, "Single put, async"),
        ("get-async", async_calls.ASYNC_GET, 1.0, "Single typed get, async"),
        ("cpu-put", workloads.LEAN_PUT, 1.1, "Client CPU per put, sync"),
        ("cpu-get", workloads.LEAN_GET, 1.1, "Client CPU per get, sync"),
        ("cpu-put", async_calls.ASYNC_PUT, 1.1, "Client CPU per put, async"),
        ("cpu-get", async_calls.ASYNC_GET, 1.1, "Client CPU per get, async"),
    ):
        group = groups.get(key)
        if group is None or not any(v.name == mine for v in group.variants):
            continue
        out.append(_vs_dynamoxy(groups, key, mine, goal, name))
        if key in ("put-async", "get-async") and _has(group, "pydynox"):
            out.append(
                _wall_target(
                    groups,
                    f"{name} vs pydynox",
                    key,
                    mine,
                    _async_pydynox(group),
                    "pydynox",
                    "≤ 1.00x pydynox's async call",
                )
            )
        if key == "query-async":
            raw = group.variant(group.baseline).median
            value = group.variant(mine).median
            out.append(
                Target(
                    "Typed query, async vs raw aioboto3",
                    "≤ 0.50x the raw aioboto3 client call",
                    f"{value / raw:.2f}x",
                    value <= 0.5 * raw,
                    query_reason(
                        value,
                        raw,
                        "the raw aioboto3 client",
                        0.5,
                        None,
                        _split_of(groups, "query"),
                        group.items,
                        True,
                    ),
                )
            )
    return out


def _async_pydynox(group: Group) -> str:
    """The name of pydynox's async call in ``group`` (its sync calls' names say ``sync_``)."""
    return next(
        v.name for v in group.variants if v.name.startswith("pydynox") and "sync_" not in v.name
    )
