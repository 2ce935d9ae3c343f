"""The benchmark's goals, built from hand-made groups: each printed reason carries the figures
it was given (the budget, lsiorm's figure, the parts), met or missed."""

from __future__ import annotations

import dataclasses

import pytest
from bench import async_calls, cold_start, read_share, targets, workloads
from bench.dynamoxy_peer import LABEL
from bench.report import Target
from bench.timing import CPU, WALL, Variant
from bench.workloads import Group, ImportResult, MemoryResult
from hypothesis import given
from hypothesis import strategies as st

US = 1e-6
MS = 1e-3


def row(name: str, seconds: float) -> Variant:
    variant = Variant(name, lambda _: None)
    variant.samples.append(seconds)
    return variant


def group(key: str, rows: dict[str, float], items: int = 1, **extra: object) -> Group:
    """A group of one sample per row; the first row is the baseline."""
    variants = [row(name, seconds) for name, seconds in rows.items()]
    return Group(key, key, WALL, variants[0].name, variants, items, **extra)  # type: ignore[arg-type]


def us(seconds: float) -> str:
    return f"{seconds * 1e6:,.0f} µs"


def us1(seconds: float) -> str:
    return f"{seconds * 1e6:,.1f} µs"


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:,.2f} ms"


def call_split(
    key: str, whole: float, transport: float, parse: float, entity: float, **more: float
) -> Group:
    """read_share's split of one call (its real `split`), from the parts' medians."""
    medians = {
        read_share.WHOLE: whole,
        read_share.TRANSPORT: transport,
        read_share.SIGNING: more.get("signing", 15 * US),
        read_share.PARSE: parse,
        read_share.LOADS: parse / 2,
    }
    if key == "share-put":
        medians[read_share.ENCODE] = entity
    else:
        medians[read_share.DECODE] = entity
        medians[read_share.WIRE] = more.get("wire", entity / 2)
        medians[read_share.VALIDATE] = more.get("validate", entity / 4)
        medians[read_share.CONSTRUCT] = entity
    items = int(more.get("items", 1))
    return read_share.split(key, items, key, medians, CPU)


SINGLE = {
    "put": ("boto3 client put_item (wire item ready)", "pydynox sync_save (Rust core)"),
    "get": ("boto3 client get_item (wire dict)", "pydynox sync_get (Rust core)"),
    "put-async": ("aioboto3 client put_item (wire item ready)", "pydynox save (Rust core)"),
    "get-async": ("aioboto3 client get_item (wire dict)", "pydynox get (Rust core)"),
}
MINE = {
    "put": workloads.LEAN_PUT,
    "get": workloads.LEAN_GET,
    "put-async": async_calls.ASYNC_PUT,
    "get-async": async_calls.ASYNC_GET,
}
DYNAMOXY = {
    "put-async": f"{LABEL} repository put (adds a write id)",
    "get-async": f"{LABEL} repository get",
}


def single_groups(
    wall: dict[str, tuple[float, float, float]], cpu: dict[str, float]
) -> dict[str, Group]:
    """Single-call groups: ``wall[key]`` is (raw, pydynox, lsiorm), plus dynamoxy for async
    keys (its wall time is ``cpu["dynamoxy wall"]``); the CPU groups repeat every row with the
    CPU figure ``cpu[row name]``."""
    groups = {}
    for key, (raw, pydynox, mine) in wall.items():
        rows = {SINGLE[key][0]: raw, SINGLE[key][1]: pydynox, MINE[key]: mine}
        if key in DYNAMOXY:
            rows[DYNAMOXY[key]] = cpu[f"dynamoxy wall {key}"]
        groups[key] = group(key, rows)
    for call in ("put", "get"):
        names = [n for key in (call, f"{call}-async") for n in groups[key].variants]
        groups[f"cpu-{call}"] = group(f"cpu-{call}", {v.name: cpu[v.name] for v in names})
    return groups


def every_group(scale: float = 1.0) -> tuple[dict[str, Group], MemoryResult, ImportResult]:
    """A whole run's groups, every figure times ``scale``."""
    s = scale
    cpu = {
        SINGLE["put"][0]: 1260 * US * s,
        SINGLE["put"][1]: 470 * US * s,
        workloads.LEAN_PUT: 600 * US * s,
        SINGLE["get"][0]: 1280 * US * s,
        SINGLE["get"][1]: 560 * US * s,
        workloads.LEAN_GET: 670 * US * s,
        SINGLE["put-async"][0]: 1320 * US * s,
        SINGLE["put-async"][1]: 750 * US * s,
        async_calls.ASYNC_PUT: 740 * US * s,
        DYNAMOXY["put-async"]: 540 * US * s,
        SINGLE["get-async"][0]: 1390 * US * s,
        SINGLE["get-async"][1]: 870 * US * s,
        async_calls.ASYNC_GET: 660 * US * s,
        DYNAMOXY["get-async"]: 500 * US * s,
        "dynamoxy wall put-async": 1490 * US * s,
        "dynamoxy wall get-async": 940 * US * s,
    }
    groups = single_groups(
        {
            "put": (1920 * US * s, 1330 * US * s, 1250 * US * s),
            "get": (1600 * US * s, 870 * US * s, 1030 * US * s),
            "put-async": (2040 * US * s, 1600 * US * s, 1370 * US * s),
            "get-async": (1640 * US * s, 1240 * US * s, 1070 * US * s),
        },
        cpu,
    )
    groups["share-get"] = call_split(
        "share-get", 630 * US * s, 470 * US * s, 7 * US * s, 6 * US * s
    )
    groups["share-put"] = call_split(
        "share-put", 600 * US * s, 480 * US * s, 3 * US * s, 12 * US * s
    )
    groups["share-query"] = call_split(
        "share-query",
        24 * MS * s,
        2 * MS * s,
        7.5 * MS * s,
        10.8 * MS * s,
        wire=5.5 * MS * s,
        validate=3.1 * MS * s,
        items=1000,
    )
    groups["query-async"] = group(
        "query-async",
        {
            "aioboto3 client (wire dicts)": 76 * MS * s,
            "pydynox Model.query (Rust core, typed)": 63 * MS * s,
            async_calls.ASYNC_QUERY: 41 * MS * s,
            f"{LABEL} repository query().all()": 42 * MS * s,
        },
        1000,
    )
    groups["query"] = group(
        "query",
        {
            "boto3 client (wire dicts)": 73 * MS * s,
            "boto3 client + lsiorm.fastjson (wire dicts)": 30.8 * MS * s,
            "pydynox Model.sync_query (Rust core, typed)": 62 * MS * s,
            "lsiorm Session.all (fast path)": 39.9 * MS * s,
            workloads.PROPOSED_QUERY: 40.4 * MS * s,
        },
        1000,
    )
    groups["decode"] = group(
        "decode",
        {
            "boto3 TypeDeserializer to dicts": 8.35 * MS * s,
            "PynamoDB from_raw_data": 24.3 * MS * s,
            "lsiorm decode_item": 5.84 * MS * s,
            "lsiorm query result decoding (what Session.all calls)": 6.13 * MS * s,
        },
        1000,
    )
    groups["encode"] = group(
        "encode",
        {"boto3 TypeSerializer from dicts": 15.9 * MS * s, "lsiorm wire_item": 12.4 * MS * s},
        1000,
    )
    groups["write-cpu"] = group(
        "write-cpu",
        {"boto3 TypeSerializer from dicts (no request)": 0.25 * s, workloads.STUB_WRITE: 0.28 * s},
        10_000,
    )
    groups["batch-sync"] = group(
        "batch-sync",
        {
            "boto3 client batch_write_item": 4.49 * s,
            "pydynox SyncBatchWriter (Rust core)": 4.21 * s,
            workloads.LEAN_BATCH: 2.23 * s,
        },
        10_000,
    )
    groups["batch-async"] = group(
        "batch-async",
        {
            "aioboto3 client batch_write_item, 8 writers": 2.32 * s,
            workloads.ASYNC_BATCH: 1.96 * s,
            workloads.ASYNC_BATCH_NEW_SESSION: 2.6 * s,
        },
        10_000,
        aside={workloads.ENCODE_BEFORE: 0.21 * s},
    )
    cold = group(
        "cold",
        {
            "boto3 client get_item (wire dict)": 0.26 * s,
            cold_start.PYDYNOX: 0.126 * s,
            cold_start.LSIORM_SYNC: 0.51 * s,
        },
    )
    groups["cold"] = cold_start.ColdGroup(
        **{f.name: getattr(cold, f.name) for f in dataclasses.fields(Group)},
        parts={
            cold_start.LSIORM_SYNC: {"imports": [0.3 * s], "the first GetItem": [0.15 * s]},
            cold_start.PYDYNOX: {"imports: pydynox": [0.1 * s], "the first GetItem": [0.026 * s]},
        },
    )
    groups["compile"] = group(
        "compile", {"boto3 client GetItem round trip": 1.78 * MS * s, "plan": 165 * US * s}
    )
    imports = ImportResult(
        group(
            "import",
            {
                "import boto3": 0.16 * s,
                workloads.LSIORM_IMPORT: 0.239 * s,
                "import pynamodb.models": 0.153 * s,
                "import pydynox": 0.102 * s,
            },
        ),
        lsiorm_imports_aiohttp=False,
    )
    groups["import"] = imports.group
    memory = MemoryResult(
        100_000, 61, int(22.9 * 2**20 * s), int(32 * 2**20 * s), int(220 * 2**20 * s)
    )
    return groups, memory, imports


def all_targets(scale: float = 1.0) -> list[Target]:
    groups, memory, imports = every_group(scale)
    return targets.targets(groups, memory, imports) + targets.async_targets(groups)


def by_name(found: list[Target]) -> dict[str, Target]:
    return {t.name: t for t in found}


def test_every_goal_of_a_whole_run_is_built() -> None:
    names = [t.name for t in all_targets()]
    assert len(names) == len(set(names)) == 25
    assert "Client CPU per get, async vs dynamoxy" in names
    assert "Async batch write vs raw aioboto3, 8 in flight" in names


@pytest.mark.parametrize("scale", [0.5, 1.7])
def test_every_reason_moves_with_its_figures(scale: float) -> None:
    """No reason is a fixed sentence: each one changes when the run's figures do (by the same
    factor, so the ratios stay)."""
    before, after = by_name(all_targets()), by_name(all_targets(scale))
    for name, target in before.items():
        assert after[name].why != target.why, name


def test_cpu_per_get_missed_on_the_transport() -> None:
    """The transport alone over the budget: the reason says so, in µs and as a share."""
    groups, _, _ = every_group()
    groups["share-get"] = call_split("share-get", 640 * US, 560 * US, 8 * US, 7 * US)
    target = by_name(targets.async_targets(groups))["Client CPU per get, sync vs dynamoxy"]
    assert not target.met
    assert target.measured == "1.34x dynamoxy"  # 670 / 500
    why = target.why
    for figure in ("500 µs", "550 µs", "670 µs", "120 µs over it", "560 µs", "8 µs", "7 µs"):
        assert figure in why, figure
    assert "the sync get;" in why
    assert "112% of dynamoxy's whole call, 10 µs over the whole budget" in why
    assert "rest (request building, steps, driver, hooks) 65 µs" in why  # 640 - 560 - 8 - 7


def test_cpu_per_get_met_says_what_the_transport_leaves() -> None:
    groups, _, _ = every_group()
    groups["cpu-get"].variant(async_calls.ASYNC_GET).samples[:] = [520 * US]
    target = by_name(targets.async_targets(groups))["Client CPU per get, async vs dynamoxy"]
    assert target.met
    assert target.measured == "1.04x dynamoxy"
    # budget 550, transport 470: 80 left; parse 7 + decode 6 + rest 147 = 160, largest the rest
    assert "520 µs, 30 µs under it" in target.why
    assert "the async one is not taken apart" in target.why
    assert "94% of dynamoxy's whole call, which leaves 80 µs" in target.why
    assert "they take 160 µs, the largest the rest (147 µs), alone over what is left." in target.why


def test_cpu_per_put_reads_the_put_split() -> None:
    groups, _, _ = every_group()
    target = by_name(targets.async_targets(groups))["Client CPU per put, sync vs dynamoxy"]
    assert not target.met  # 600 > 1.1 * 540 = 594
    assert "encode 12 µs" in target.why
    assert "transport 480 µs" in target.why
    assert "rest (request building, steps, driver, hooks) 105 µs" in target.why


def test_without_a_split_the_reason_says_so() -> None:
    groups, _, _ = every_group()
    del groups["share-get"]
    target = by_name(targets.async_targets(groups))["Client CPU per get, sync vs dynamoxy"]
    assert "did not take lsiorm's get apart" in target.why
    assert "transport" not in target.why


@given(
    mine=st.integers(100, 2000),
    peer=st.integers(100, 2000),
    transport=st.integers(0, 1500),
    parse=st.integers(0, 200),
    decode=st.integers(0, 200),
    rest=st.integers(0, 400),
)
def test_cpu_reason_carries_every_figure(
    mine: int, peer: int, transport: int, parse: int, decode: int, rest: int
) -> None:
    split = call_split(
        "share-get",
        (transport + parse + decode + rest) * US,
        transport * US,
        parse * US,
        decode * US,
    )
    medians = {v.name: v.median for v in split.variants}
    why = targets.cpu_reason(mine * US, peer * US, "dynamoxy", 1.1, medians, "get", False)
    budget = 1.1 * (peer * US)  # as the code computes it: the same rounding
    assert f"takes {us(peer * US)} of client CPU, so the goal allows {us(budget)}" in why
    assert f"lsiorm's takes {us(mine * US)}" in why
    assert f"transport {us(transport * US)}" in why
    assert f"JSON parse {us(parse * US)}" in why
    assert f"decode {us(decode * US)}" in why
    if transport * US > budget:
        assert f"{us(transport * US - budget)} over the whole budget" in why
    else:
        assert f"which leaves {us(budget - transport * US)} of the budget" in why


def test_wall_get_against_dynamoxy_gives_both_cpus() -> None:
    groups, _, _ = every_group()
    target = by_name(targets.async_targets(groups))["Single typed get, async vs dynamoxy"]
    assert not target.met  # 1,070 µs against 940 µs
    assert target.measured == "1.14x dynamoxy"
    why = target.why
    assert "takes 1,070 µs of wall time against dynamoxy's 940 µs" in why
    assert "the goal allows 940 µs; lsiorm is 130 µs over it" in why
    assert "lsiorm 660 µs, dynamoxy 500 µs (+160 µs for lsiorm)" in why
    assert "alone takes 470 µs" in why
    assert "extra client CPU (160 µs) is more than what it is over the goal (130 µs)" in why


def test_wall_get_sync_against_pydynox_reads_the_sync_rows() -> None:
    groups, _, _ = every_group()
    target = by_name(targets.targets(groups, None))["Single typed get, sync vs pydynox"]
    assert not target.met  # 1,030 against 870
    assert target.measured == "1.18x pydynox, 0.64x raw boto3"
    assert "lsiorm 670 µs, pydynox 560 µs (+110 µs for lsiorm)" in target.why


def test_wall_get_async_against_pydynox_reads_the_async_rows() -> None:
    groups, _, _ = every_group()
    target = by_name(targets.async_targets(groups))["Single typed get, async vs pydynox"]
    assert target.met  # 1,070 against 1,240
    assert "lsiorm 660 µs, pydynox 870 µs (-210 µs for lsiorm)" in target.why


def test_async_batch_missed_shows_the_encoding_before_the_first_request() -> None:
    groups, _, _ = every_group()
    groups["batch-async"] = group(
        "batch-async",
        {
            "aioboto3 client batch_write_item, 8 writers": 2.0,
            workloads.ASYNC_BATCH: 1.9,
            workloads.ASYNC_BATCH_NEW_SESSION: 2.5,
        },
        10_000,
        aside={workloads.ENCODE_BEFORE: 0.6},
    )
    target = by_name(targets.targets(groups, None))[
        "Async batch write vs raw aioboto3, 8 in flight"
    ]
    assert not target.met
    assert target.measured == "0.95x, 1.25x with a new session per batch"
    why = target.why
    assert "the goal allows 1.40 s (0.70x the raw client's 2.00 s" in why
    assert "lsiorm takes 1.90 s, 500 ms over it" in why
    assert "all 10,000 entities: 600 ms" in why
    assert "30% of the raw client's whole run" in why
    assert "takes about 1.30 s (the difference), 0.65x the raw client's run, within" in why


def test_async_batch_whose_sending_alone_is_over_the_budget() -> None:
    why = targets.async_batch_reason(1.9, 2.0, 0.7, 0.1, 1000)
    assert "about 1.80 s (the difference), 0.90x" in why
    assert "the sending alone is over the budget" in why
    assert "did not time" in targets.async_batch_reason(1.9, 2.0, 0.7, None, 1000)


def test_query_missed_gives_the_fast_path_and_the_decode() -> None:
    groups, _, _ = every_group()
    target = by_name(targets.targets(groups, None))["Full typed query of 1000 items"]
    assert not target.met  # 39.9 ms > 36.5 ms
    why = target.why
    assert "the goal allows 36.50 ms (0.50x the raw boto3 client's 73.00 ms)" in why
    assert "lsiorm takes 39.90 ms, 3.40 ms over it" in why
    assert "takes 30.80 ms, 0.42x, which leaves 5.70 ms" in why
    assert "they take 9.10 ms (the difference)" in why
    # the split: parse 7.5 of 24 ms (31%), decode 10.8 (45%), of which 5.5, 3.1, 2.2
    assert "JSON parse 7.50 ms (31%), decode 10.80 ms (45%)" in why
    assert "the generated decoder 5.50 ms, Pydantic 3.10 ms" in why
    assert "finding each item's class 2.20 ms" in why
    assert "pydynox's typed query takes 62.00 ms" in why


def test_query_async_against_dynamoxy_sets_parse_and_decode_against_its_query() -> None:
    groups, _, _ = every_group()
    found = by_name(targets.async_targets(groups))
    target = found["Typed query, async vs dynamoxy"]
    assert target.met  # 41 ms against 42 ms
    assert "alone take 18.30 ms of CPU, 44% of dynamoxy's whole query" in target.why
    raw = found["Typed query, async vs raw aioboto3"]
    assert not raw.met  # 41 > 38
    assert "the goal allows 38.00 ms" in raw.why
    assert "the async one is not taken apart" in raw.why


def test_decode_goals_take_the_decoder_and_pydantic_per_item() -> None:
    groups, _, _ = every_group()
    found = by_name(targets.targets(groups, None))
    boto3 = found["Typed decode vs boto3"]
    assert not boto3.met
    # budget 0.5 * 8.35 µs; decode_item 5.84 µs per item; parts of 1,000 items per item
    assert "0.50x boto3 TypeDeserializer to dicts (8.3 µs) allows 4.2 µs per item" in boto3.why
    assert "lsiorm takes 5.8 µs" in boto3.why
    assert "the generated decoder without validation 5.5 µs" in boto3.why
    assert "Pydantic's validation and construction 3.1 µs" in boto3.why
    assert (
        "Alone over the budget, as timed there: the generated decoder without validation."
        in boto3.why
    )
    pynamodb = found["Typed decode vs PynamoDB"]
    assert not pynamodb.met  # 24.3 / 5.84 = 4.2x
    assert pynamodb.measured == "4.2x faster"
    assert "A fifth of PynamoDB's 24.3 µs allows 4.9 µs per item" in pynamodb.why


def test_decode_within_budget_says_no_part_alone_is_over_it() -> None:
    split = {
        read_share.WIRE: 2e-3,
        read_share.VALIDATE: 1e-3,
        read_share.DISPATCH: 0.5e-3,
    }
    why = targets.decode_reason(5e-6, 4e-6, "The goal", split, 1000)
    assert "No part alone is over the budget; together they take 3.5 µs, 88% of it." in why


def test_write_cpu_and_encode_give_per_item_figures() -> None:
    groups, _, _ = every_group()
    found = by_name(targets.targets(groups, None))
    write = found["lsiorm's own CPU per written item (stub client)"]
    assert not write.met  # 28 µs
    assert "lsiorm takes 28.0 µs" in write.why
    assert "takes 25.0 µs per item here" in write.why
    assert "(wire_item, the encode section) takes 12.4 µs per item, 83% of the budget" in write.why
    assert "the other 15.6 µs" in write.why
    encode = found["Encode vs boto3"]
    assert encode.met
    assert "allows 15.9 µs per item" in encode.why
    assert "wire_item takes 12.4 µs" in encode.why


def test_sync_batch_sets_lsiorm_own_cpu_against_its_wall_time() -> None:
    groups, _, _ = every_group()
    target = by_name(targets.targets(groups, None))["Sync batch write vs raw boto3 and pydynox"]
    assert target.met
    assert "the goal allows 2.69 s (0.60x raw boto3's 4.49 s, 1.05x pydynox's 4.21 s)" in target.why
    assert "same 10,000 items to a stub client is 280 ms, 13% of its wall time" in target.why


def test_cold_start_compile_imports_and_memory() -> None:
    groups, memory, imports = every_group()
    found = by_name(targets.targets(groups, memory, imports))
    cold = found["Cold start to the first GetItem vs pydynox"]
    assert not cold.met
    assert cold.why.startswith("the goal allows 189.00 ms; measured in this run")
    assert "imports 300 ms, the first GetItem 150 ms" in cold.why
    assert "(67% of its parts), and alone over the budget of 189 ms: imports." in cold.why
    plan = found["Query compile + index choice"]
    assert not plan.met
    assert "the goal allows 53 µs (3% of a 1.78 ms GetItem round trip)" in plan.why
    assert "take 165 µs" in plan.why
    imported = found[workloads.LSIORM_IMPORT]
    assert imported.met
    assert "takes 239.00 ms, import boto3 alone 160.00 ms, import pydynox 102.00 ms" in imported.why
    more = found[f"{workloads.LSIORM_IMPORT} vs import boto3"]
    assert more.measured == "+79 ms"
    assert "the goal allows 280.00 ms" in more.why
    lazy = found["Memory iterating 100,000 items lazily"]
    assert "first page alone 22.9 MiB, all 61 pages iterated lazily 32.0 MiB" in lazy.why
    assert "(the goal allows 45.8 MiB), one eager list 220.0 MiB" in lazy.why


def test_without_dynamoxy_its_goals_are_not_measured() -> None:
    groups, _, _ = every_group()
    for key in ("cpu-get", "get-async"):
        g = groups[key]
        g.variants[:] = [v for v in g.variants if not v.name.startswith(LABEL)]
    target = by_name(targets.async_targets(groups))["Client CPU per get, async vs dynamoxy"]
    assert not target.met
    assert target.measured == "not measured"
    assert "Python 3.12" in target.why


def test_cold_start_within_budget_says_what_the_largest_part_leaves() -> None:
    groups, _, _ = every_group()
    cold = groups["cold"]
    assert isinstance(cold, cold_start.ColdGroup)
    cold.parts[cold_start.LSIORM_SYNC] = {"imports": [0.12], "the first GetItem": [0.05]}
    why = cold_start.reason(cold)
    assert "imports 120 ms, the first GetItem 50 ms" in why
    assert "it leaves 69 ms of the budget of 189 ms for the other parts, which take 50 ms" in why


def test_wall_reason_when_the_cpu_gap_is_smaller_than_the_miss() -> None:
    why = targets.wall_reason(1100 * US, 1000 * US, "dynamoxy", 1.0, (550 * US, 500 * US), None)
    assert "lsiorm is 100 µs over it" in why
    assert "lsiorm 550 µs, dynamoxy 500 µs (+50 µs for lsiorm)." in why
    assert "extra client CPU (50 µs) is less than what it is over the goal (100 µs)" in why
    assert "transport" not in why
