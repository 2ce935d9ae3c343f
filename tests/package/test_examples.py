"""Every script in examples/ runs on its own, on each engine and on its embedded moto.

Each run is checked against what the example must show: the items its queries return, in order
where the index defines one. Where the expected answer follows from the data the example prints
(its ``put`` lines), the answer is worked out here from that data, not copied from the output.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable
from datetime import date, timedelta

import pytest

from lsiorm._model.text_codecs import percent_unescape
from support.paths import DOCS, EXAMPLES_DIR, REPO

EXAMPLES = sorted(p.name for p in EXAMPLES_DIR.glob("*.py"))
ENDPOINT_ENV = "LSIORM_ENDPOINT_URL"


def run_example(name: str, endpoint_url: str | None) -> str:
    """Run one example as a script and return its stdout; fail on a non-zero exit."""
    env = dict(os.environ)
    env.pop(ENDPOINT_ENV, None)
    if endpoint_url is not None:
        env[ENDPOINT_ENV] = endpoint_url
    env.setdefault("AWS_ACCESS_KEY_ID", "testing")
    env.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES_DIR / name)],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, (
        f"{name} exited with {proc.returncode}\n--- stdout\n{proc.stdout}\n--- stderr\n"
        f"{proc.stderr}"
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.stdout


def after(out: str, prefix: str) -> list[str]:
    """Return, in order, the rest of every output line that starts with ``prefix`` once stripped."""
    return [
        line.strip()[len(prefix) :] for line in out.splitlines() if line.strip().startswith(prefix)
    ]


def puts(out: str, pattern: str) -> list[tuple[str, ...]]:
    """Return the groups of every ``put`` line matching ``pattern`` (the example's own data)."""
    rows = [re.fullmatch(pattern, line.strip()) for line in out.splitlines()]
    found = [m.groups() for m in rows if m is not None]
    assert found, f"no line matches {pattern!r}"
    return found


# -- forum.py (seed 000) -----------------------------------------------------------------------


def check_forum(out: str, fetches: bool) -> None:
    assert after(out, "in range: ") == [
        "2015-09-01 'How do LSIs work?'",
        "2015-10-02 '10 GB limit'",
        "2015-11-05 'Projection choices'",
    ]
    assert "fetched     Tags (not projected; read from the table per item)" in out
    rows = [
        "'Projection choices' replies=13",
        "'10 GB limit' replies=7",
        "'How do LSIs work?' replies=4",
    ]
    if fetches:
        tags = ["['projection']", "['limits']", "['lsi', 'basics']"]
        rows = [f"{row} tags={tag}" for row, tag in zip(rows, tags, strict=True)]
        assert "DynamoDB fetched each item" in out
    else:  # moto's gap is said once, in one plain line
        assert out.count("moto does not fetch attributes an LSI does not hold") == 1
    assert after(out, "with tags: ") == rows
    assert "7 of 7 writes asked DynamoDB for their item collection's size" in out
    assert after(out, "audit_collection: the S3 collection holds ")[0].startswith("5 items")
    assert after(out, "count of S3 threads in that range: ") == [
        "3 (Select=COUNT, no item transferred)"
    ]
    assert after(out, "most replies in S3: ") == ["'Projection choices' with 13"]
    assert "ReplyCount = 13" in out
    assert after(out, "deleted table 'Thread-")


# -- orders.py (seed 001) ----------------------------------------------------------------------

ORDER_PUT = r"put (O-\d+) (C-\d+) (\S+) (\w+)\s+shard (\d+)"


def check_orders(out: str, fetches: bool) -> None:
    (today_text,) = after(out, "batch_write: 10 orders in 1 call(s); today is ")
    today = date.fromisoformat(today_text)
    orders = [
        (oid, cust, date.fromisoformat(d), st, int(sh))
        for oid, cust, d, st, sh in puts(out, ORDER_PUT)
    ]
    assert len(orders) == 10

    mine = sorted((o for o in orders if o[1] == "C-1"), key=lambda o: o[2])
    assert after(out, "by customer: ") == [f"{o[0]} {o[2]} {o[3]}" for o in mine]
    low, high = today - timedelta(days=7), today - timedelta(days=2)
    assert after(out, "in range: ") == [
        f"{o[0]} {o[2]} {o[3]}" for o in mine if low <= o[2] <= high
    ]

    cutoff = today - timedelta(days=5)
    stale = [o[0] for o in mine if o[3] == "PENDING" and o[2] < cutoff]
    assert [line.split()[0] for line in after(out, "stale pending: ")] == stale
    assert stale, "the data must hold a stale pending order"

    # O-1003 is moved to SHIPPED before the fan-out query.
    status = {o[0]: ("SHIPPED" if o[0] == "O-1003" else o[3]) for o in orders}
    shipped = sorted((o for o in orders if status[o[0]] == "SHIPPED"), key=lambda o: o[2])
    assert after(out, "shipped: ") == [f"{o[0]} {o[2]}" for o in shipped]
    pending = sum(1 for s in status.values() if s == "PENDING")
    assert after(out, "count of PENDING orders over all shards: ") == [str(pending)]
    shards = {o[4] for o in orders}
    assert shards <= {1, 2, 3, 4}
    assert len(shards) > 1, "write sharding should spread the orders"
    assert any(line.strip().startswith("requests    4 (Order shard=1") for line in out.splitlines())
    assert "key         #n0 = :v0 AND #n1 BETWEEN :v1 AND :v2" in out

    assert [s.split(" (")[0] for s in after(out, "coffee shop in USA: ")] == [
        "Business2",  # USA:California:PaloAlto
        "Business6",  # USA:California:San Francisco
        "Business5",  # USA:California:San Jose
        "Business4",  # USA:Washington:Seattle
    ]
    assert [s.split(" (")[0] for s in after(out, "restaurant in Washington: ")] == [
        "Business11",
        "Business8",
    ]
    assert [s.split(" (")[0] for s in after(out, "fitness center in Seattle: ")] == ["Business1"]
    assert [s.split(" (")[0] for s in after(out, "coffee shop in San*: ")] == [
        "Business6",
        "Business5",
    ]
    assert "values      :v0 = 'Restaurant'" in out
    # ':' cannot end printable text, so each text field before it ends with '#' (see
    # docs/encoding.md); no key holds a control character.
    assert ":v1 = 'USA#:Washington#:'" in out


# -- animals.py (seed 002) ---------------------------------------------------------------------

ANIMAL_PUT = r"put  (Dog|Cat|Parrot)\s+(\w+)\s+index1='([^']*)'"


def check_animals(out: str, fetches: bool) -> None:
    rows = puts(out, ANIMAL_PUT)
    # Printable keys write a space as %20 (docs/encoding.md): the values are the unescaped text.
    dogs = sorted(
        (percent_unescape(key.split(":", 2)[2]), name) for kind, name, key in rows if kind == "Dog"
    )
    cats = sorted(
        (percent_unescape(key.split(":", 2)[2]), name) for kind, name, key in rows if kind == "Cat"
    )
    parrots = sorted(
        (int(key.split(":", 2)[2]), name) for kind, name, key in rows if kind == "Parrot"
    )

    assert after(out, "any command: ") == [f"dog {n} follows {c!r}" for c, n in dogs]
    assert after(out, "s-command: ") == [
        f"dog {n} follows {c!r}" for c, n in dogs if c.startswith("s")
    ]
    assert after(out, "any tree: ") == [f"cat {n} climbed {t!r}" for t, n in cats]

    def says(keep: Callable[[int], bool]) -> list[str]:
        return [f"parrot {n} says {w} words" for w, n in parrots if keep(w)]

    assert any(w == 5 for w, _ in parrots), "the data must hold a parrot with exactly 5 words"
    assert after(out, "more than 5: ") == says(lambda w: w > 5)
    assert after(out, "2 to 5: ") == says(lambda w: 2 <= w <= 5)
    assert after(out, "fewer than 5: ") == says(lambda w: w < 5)
    naive = ", ".join(n for w, n in parrots if w >= 5)
    assert after(out, "a hand-written BETWEEN 000005 AND 999999 returns: ") == [naive]
    assert after(out, f"{len(rows)} items: ") == [
        f"{len(dogs)} Dog, {len(cats)} Cat, {len(parrots)} Parrot"
    ]

    # Items with equal LSI keys come back in no particular order: compare them as sets.
    london = sorted(after(out, "in London: "))
    assert london == [
        "10, Downing St, Westminster, London",
        "11, Downing St, Westminster, London",
        "221B, Baker St, Marylebone, London",
        "Buckingham Palace, The Mall, Westminster, London",
    ]
    assert sorted(after(out, "in London:Westminster: ")) == [
        line for line in london if "Westminster" in line
    ]
    assert sorted(after(out, "on London:Westminster:Downing St: ")) == [
        line for line in london if "Downing St" in line
    ]
    assert "begins_with(index1, 'London#:Westminster#:')" in out


# -- worldcup.py (seed 003) --------------------------------------------------------------------

GAME_PUT = r"put  (\w+)\s+(FIFA-\d+)\s+goals=(\d+)\s+matches=(\d+) venue=(.+)"


def check_worldcup(out: str, fetches: bool) -> None:
    games = [(c, g, int(goals), int(m), v) for c, g, goals, m, v in puts(out, GAME_PUT)]

    def of(country: str) -> list[tuple[str, str, int, int, str]]:
        return sorted((x for x in games if x[0] == country), key=lambda x: x[2])

    assert after(out, "by goals: ") == [
        f"{g} {goals} goals in {m} matches" for _, g, goals, m, _ in reversed(of("France"))
    ]
    countries = list(dict.fromkeys(x[0] for x in games))
    assert after(out, "top for ") == [
        f"{c}: {of(c)[-1][1]} with {of(c)[-1][2]} goals" for c in countries
    ]
    assert after(out, "14 or more: ") == [
        f"{g} {goals} goals, venue {v}" for _, g, goals, _, v in of("France") if goals >= 14
    ]
    assert after(out, "keys only: ") == [
        f"{g} {goals} goals (not read: country, matches, venue)"
        for _, g, goals, _, _ in of("Brazil")
    ]
    assert after(out, "GoalsKeysOnly holds ") == [
        "Country, Game, Goals; a full Game fetches Matches, Venue"
    ]
    assert after(out, "GoalsIndex    holds ") == [
        "Country, Game, Goals, Matches; a full Game fetches Venue"
    ]
    assert after(out, "GoalsAll      holds ") == ["every attribute; a full Game fetches nothing"]
    assert after(out, "* GoalsAll ")[0].strip().startswith("chosen: absorbs 2 conditions")


# -- reserved_slots.py (five reserved LSI slots) ------------------------------------------------


def check_reserved_slots(out: str, fetches: bool) -> None:
    checks = after(out, "check_table after ")
    assert [c.split(":")[0] for c in checks] == ["1.0", "1.1", "1.2", "1.3", "1.4", "1.5"]
    for line in checks:
        assert line.endswith("matches its declaration. CreateTable request unchanged: True")
    assert after(out, "LSI1 task ") == [
        "T2 due 2024-03-15: Book the launch",
        "T1 due 2024-04-01: Design the lander",
    ]
    assert [c.split()[0] for c in after(out, "LSI2 comment ")] == ["C1", "C3"]
    assert after(out, "LSI3 latest milestone: ") == ["landing on 2024-07-20"]
    assert after(out, "LSI4 member ") == ["ann is admin", "cy is admin"]
    assert after(out, "LSI5 event ") == ["E3 severity 3: wind", "E2 severity 4: fuel"]
    assert [e.split()[0] for e in after(out, "LSI1 event ")] == ["E1", "E2", "E3"]
    assert after(out, "LSI1 (ALL): ") == [
        "Task 'TASK#DUE#{due}#{task_id}'; Event 'EVENT#AT#{happened}'"
    ]
    for n in range(2, 6):
        assert len(after(out, f"LSI{n} (")) == 1, f"LSI{n} should have a user"
    assert "fetched: nothing" in out


# -- slot_rollout.py: a reserved slot is pending, backfilled, audited, then ready -------------


def check_slot_rollout(out: str, fetches: bool) -> None:
    written = puts(out, r"put task (\d{4}) due (\S+)")
    assert len(written) == 35
    # Worked out from the example's own data: every task, old and new, by due date then number.
    expected = [f"{n} due {due}" for n, due in sorted(written, key=lambda t: (t[1], t[0]))]
    old = sum(1 for n, _ in written if int(n) <= 30)
    assert after(out, "audit before: ") == [f"{old} stale (LSI3SK missing on {old})"]
    assert after(out, "plan while pending: ") == ["table"]
    assert after(out, "backfill rewritten: ") == [str(old)]
    assert after(out, "backfill already current: ") == [str(35 - old)]
    assert after(out, "backfill retried: ") == ["0; failed: 0"]
    progress = after(out, "backfill progress: ")
    assert progress
    assert progress[-1].startswith("35")
    assert progress[-1].endswith("segments 2/2")
    assert after(out, "audit after: ") == ["0 stale; clean: True"]
    assert after(out, "plan: ") == ["LSI3"]
    assert after(out, "LSI3 task ") == expected


# -- migrate_to_reserved_slots.py -------------------------------------------------------------


def check_migrate_to_reserved_slots(out: str, fetches: bool) -> None:
    (copied,) = after(out, "copied: ")
    assert int(copied.split(";")[0]) >= 101
    assert copied.endswith("unmatched: 0")
    (writes,) = after(out, "writer paused after ")
    assert int(writes.split()[0]) > 0
    assert after(out, "phase: ") == ["switched"]
    assert after(out, "verify clean: ") == ["True"]
    assert "lag 0 records" in out
    assert after(out, "plan: ") == ["LSI1"]
    (tasks,) = after(out, "LSI1 tasks: ")
    found, _, rest = tasks.partition(" of ")
    stored, _, ordered = rest.partition(", in due-date order: ")
    assert int(found) == int(stored) > 101
    assert ordered == "True"
    assert after(out, "deleted both tables") == [""]


# -- conflicts.py: the stored item on a failed condition -----------------------------------------


def check_conflicts(out: str, fetches: bool) -> None:
    assert after(out, "ann's save refused: ") == ["expected v1, stored v2"]
    assert after(out, "stored text is ") == ["'Welcome, all' by ben"]
    assert after(out, "ann merged onto v2: ") == ["v3 'Welcome, all (and hello)'"]
    assert after(out, "cy's new page refused: ") == ["home exists at v3"]
    assert after(out, "transaction action ") == ["1: ConditionalCheckFailed; stored editor ben"]
    assert after(out, "reads sent to learn all this: ") == ["0"]


# -- stream_consumer.py: a typed Lambda handler of the stream, under Lambda's retries ---------


def check_stream_consumer(out: str, fetches: bool) -> None:
    assert after(out, "stream records: ") == ["INSERT, INSERT, MODIFY, MODIFY"]
    assert after(out, "delivery 1: ") == ["applied 3, failed 1"]
    assert after(out, "reported to Lambda: ") == ["record 3 of 4"]
    # Record 4 (ann's payment) was applied in delivery 1: its mark skips it in delivery 2.
    assert after(out, "delivery 2: ") == ["applied 1, marked before 1"]
    assert after(out, "delivery 2 response: ") == ["{'batchItemFailures': []}"]
    assert after(out, "shipped: ") == ["ann/1, ben/2"]
    assert after(out, "the whole batch again: ") == ["applied 0, marked before 4"]


# -- routing.py: another place for a call, a deadline, cancelled writes ------------------------


def check_routing(out: str, fetches: bool) -> None:
    assert after(out, "home has ann: ") == ["True"]
    assert after(out, "replica has ann: ") == ["True"]
    assert after(out, "replica has ben: ") == ["False"]
    assert after(out, "same session object for the same place: ") == ["True"]
    assert after(out, "get within 5 s: ") == ["True"]
    assert after(out, "put with no time left: ") == ["CallTimeoutError before sending PutItem"]
    assert after(out, "cy written anyway: ") == ["False"]
    (counts,) = after(out, "async puts cancelled at each point: ")
    assert "'cancelled': " in counts
    assert "'done': 1" in counts
    assert after(out, "every clean cancel left nothing, every done put was stored: ") == ["True"]


# -- table_settings.py: a table's settings declared, planned, applied --------------------------


def check_table_settings(out: str, fetches: bool) -> None:
    # `fetches` is True on DynamoDB Local, which knows neither continuous backups nor tags.
    unchecked = ["point-in-time-recovery", "tags"] if not fetches else []
    (drift,) = after(out, "drift against release 2: ")
    assert drift == ", ".join(["ttl-disabled", "stream", "deletion-protection", *unchecked])
    steps = 3 + len(unchecked)
    assert after(out, "plan: ") == [f"{steps} requests, 2 of them UpdateTable"]
    assert after(out, "planned UpdateTable: ") == [
        "deletion protection on",
        "enable a NEW_AND_OLD_IMAGES stream",
    ]
    assert len(after(out, "applied ")) == steps
    assert after(out, "drift after apply: ") == ["0"]
    expected = "point-in-time recovery, tags" if fetches else "nothing"
    assert after(out, "not checked by this engine: ") == [expected]
    assert after(out, "planned on a second run: ") == ["0 requests"]
    assert after(out, "deletion protection off; deleted table ")


CHECKS: dict[str, Callable[[str, bool], None]] = {
    "conflicts.py": check_conflicts,
    "table_settings.py": check_table_settings,
    "routing.py": check_routing,
    "stream_consumer.py": check_stream_consumer,
    "migrate_to_reserved_slots.py": check_migrate_to_reserved_slots,
    "reserved_slots.py": check_reserved_slots,
    "animals.py": check_animals,
    "forum.py": check_forum,
    "orders.py": check_orders,
    "slot_rollout.py": check_slot_rollout,
    "worldcup.py": check_worldcup,
}


def test_every_example_is_checked() -> None:
    assert set(EXAMPLES) == set(CHECKS)


def test_every_example_is_documented() -> None:
    page = (DOCS / "examples.md").read_text()
    for name in EXAMPLES:
        assert f".venv/bin/python examples/{name}" in page, f"docs/examples.md lacks {name}"


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_runs_on_engine(name: str, endpoint_url: str, backend: str) -> None:
    out = run_example(name, endpoint_url)
    assert "embedded moto" not in out
    # DynamoDB Local and DynamoDB fetch non-projected attributes on LSI queries; moto does not.
    CHECKS[name](out, backend != "moto")


@pytest.mark.integration
@pytest.mark.parametrize("name", EXAMPLES)
def test_example_runs_on_embedded_moto(name: str) -> None:
    out = run_example(name, None)
    assert out.startswith("embedded moto at http://127.0.0.1:")
    CHECKS[name](out, False)
