"""Batch item building pauses the garbage collector, and always puts it back as it was."""

from __future__ import annotations

import gc
import threading

import pytest

from lsiorm import Entity, Table
from lsiorm._requests.batch import batch_write_requests, collector_paused
from lsiorm.errors import ValidationError

table = Table("pause", partition_key="pk")


class Thing(Entity, table=table, keys={"pk": "T#{name}"}):
    name: str


def test_collector_is_back_on_after_a_batch_and_after_a_refused_one() -> None:
    assert gc.isenabled()
    batch_write_requests([Thing(name="a"), Thing(name="b")])
    assert gc.isenabled()
    with pytest.raises(ValidationError):
        batch_write_requests([Thing(name="a"), Thing(name="a")])  # batch.duplicate-key
    assert gc.isenabled()


def test_collector_left_off_when_it_was_off() -> None:
    gc.disable()
    try:
        batch_write_requests([Thing(name="a")])
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_collector_is_paused_inside_and_back_on_after_the_last_thread_leaves() -> None:
    inside = threading.Barrier(3)
    leave = threading.Event()
    seen: list[bool] = []

    def hold() -> None:
        with collector_paused():
            seen.append(gc.isenabled())
            inside.wait()
            leave.wait()

    threads = [threading.Thread(target=hold) for _ in range(2)]
    for t in threads:
        t.start()
    inside.wait()
    assert not gc.isenabled()
    leave.set()
    for t in threads:
        t.join()
    assert seen == [False, False]
    assert gc.isenabled()
