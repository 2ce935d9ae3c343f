"""Repeated, interleaved timing with medians, and the description of the machine and versions."""

from __future__ import annotations

import os
import platform
import random
import re
import shutil
import statistics
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

Clock = Callable[[], float]

#: Wall-clock time, for anything that waits on the engine.
WALL: Clock = time.perf_counter
#: This process's CPU time, for pure computation: other processes on a shared machine add to
#: wall time but much less to it.
CPU: Clock = time.process_time


@dataclass
class Variant:
    """One way of doing a workload: ``setup`` builds its input untimed, ``run`` is timed.

    A variant that runs in another process (a library that needs another interpreter) gives
    ``timed`` instead: called with the measurement's clock and ``repeat``, it runs the workload
    there that many times and returns the seconds per run that process's own clock of that kind
    (wall or CPU) read.
    """

    name: str
    run: Callable[[Any], Any]
    setup: Callable[[], Any] = lambda: None
    samples: list[float] = field(default_factory=list)
    timed: Callable[[Clock, int], float] | None = None

    @property
    def median(self) -> float:
        """The median of the samples, in seconds."""
        return statistics.median(self.samples)

    @property
    def spread(self) -> tuple[float, float]:
        """The first and third quartiles of the samples, in seconds."""
        if len(self.samples) < 4:
            return min(self.samples), max(self.samples)
        q1, _, q3 = statistics.quantiles(self.samples, n=4)
        return q1, q3


def measure(
    variants: Sequence[Variant],
    *,
    rounds: int,
    warmup: int = 1,
    repeat: int = 1,
    block: int = 1,
    clock: Clock = WALL,
    seed: int = 1,
) -> None:
    """Time every variant ``rounds`` times, interleaved in a new random order each round.

    Interleaving spreads the noise of a shared machine over all variants alike, so ratios
    taken within one run stay meaningful. Each sample runs ``repeat`` times and records the
    time per run; ``warmup`` rounds are run first and discarded. With ``block`` above 1 a
    variant takes ``block`` samples in a row each round and the first one, taken right after
    another variant ran, is dropped: the rest measure the variant in a steady state, as an
    application decoding page after page sees it (and as timeit and pyperf measure), instead of
    with the allocator and caches in the state another library left them. The garbage
    collector runs as it would in an application.
    """
    order = list(variants)
    shuffle = random.Random(seed).shuffle
    for round_number in range(warmup + rounds):
        shuffle(order)
        for variant in order:
            for position in range(block):
                elapsed = _sample(variant, clock, repeat)
                if round_number >= warmup and (block == 1 or position > 0):
                    variant.samples.append(elapsed)


def _sample(variant: Variant, clock: Clock, repeat: int) -> float:
    """Run the variant ``repeat`` times; return the seconds per run."""
    if variant.timed is not None:
        return variant.timed(clock, repeat)
    arguments = [variant.setup() for _ in range(repeat)]
    start = clock()
    for argument in arguments:
        variant.run(argument)
    return (clock() - start) / repeat


def versions(*names: str) -> dict[str, str]:
    """Return the installed version of each distribution (``-`` when absent)."""
    out = {}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "-"
    return out


def _cpu_model() -> str:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor() or platform.machine()
    found = re.search(r"^model name\s*:\s*(.+)$", text, re.M)
    return found.group(1).strip() if found else platform.machine()


def _memory_gib() -> str:
    try:
        text = Path("/proc/meminfo").read_text()
    except OSError:
        return "?"
    found = re.search(r"^MemTotal:\s*(\d+) kB", text, re.M)
    return f"{int(found.group(1)) / 2**20:.1f} GiB" if found else "?"


def _java_version() -> str:
    java = shutil.which("java")
    if java is None:
        return "-"
    done = subprocess.run([java, "-version"], capture_output=True, text=True, check=False)
    lines = (done.stderr or done.stdout).splitlines()
    return lines[0].strip() if lines else "?"


def machine() -> dict[str, str]:
    """Describe the machine the benchmark runs on."""
    try:
        load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        load = "?"
    return {
        "CPU": f"{_cpu_model()}, {os.cpu_count()} logical CPUs",
        "Memory": _memory_gib(),
        "OS": platform.platform(),
        "Python": f"{platform.python_implementation()} {platform.python_version()}",
        "Java": _java_version(),
        "Load average at start (1, 5, 15 min)": load,
    }
