"""dynamoxy as a peer in the benchmark's own rounds, through a Python 3.12+ worker process.

dynamoxy (a Rust core, async only) needs Python 3.12 or later. ``make bench`` makes a venv with
it under ``.cache/bench-py312`` when it finds such an interpreter; this module starts
``bench.dynamoxy_worker`` there and gives the workloads variants whose samples the worker
times (see :class:`bench.timing.Variant`), so dynamoxy's rows come from the same interleaved
rounds, clocks and engine as every other library's. Without that interpreter the run prints
why dynamoxy is skipped and goes on without its rows.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .models import Row
from .timing import CPU, Clock, Variant

ROOT = Path(__file__).resolve().parent.parent
#: The interpreter to run dynamoxy with; ``make bench`` sets it to the venv it made.
PYTHON_VARIABLE = "LSIORM_BENCH_PYTHON312"
DEFAULT_PYTHON = ROOT / ".cache" / "bench-py312" / "bin" / "python"
TABLE = "bench_dynamoxy"
LABEL = "dynamoxy 0.3 (Rust core)"


def _row(row: Row) -> dict[str, Any]:
    return {
        "customer": row.customer,
        "order_no": row.order_no,
        "status": row.status,
        "total": str(row.total),
        "created": row.created.isoformat(),
        "tags": list(row.tags),
        "note": row.note,
    }


class Dynamoxy:
    """The worker process and the order lists handed to it, by name."""

    def __init__(self, python: str) -> None:
        self.python = python
        self.process: subprocess.Popen[str] | None = None
        self.described = ""

    def ask(self, **command: Any) -> dict[str, Any]:
        """Send one command and return the worker's answer; raise on its errors."""
        process = self.process
        if process is None or process.stdin is None or process.stdout is None:
            raise RuntimeError("the dynamoxy worker is not running")
        process.stdin.write(json.dumps(command) + "\n")
        process.stdin.flush()
        line = process.stdout.readline()
        if not line:
            raise RuntimeError(f"the dynamoxy worker stopped (exit status {process.poll()})")
        answer: dict[str, Any] = json.loads(line)
        if "error" in answer:
            raise RuntimeError(f"dynamoxy worker, {command['cmd']}: {answer['error']}")
        return answer

    def open(self, url: str, concurrency: int) -> None:
        """Start the worker and its client against the engine at ``url``."""
        self.process = subprocess.Popen(
            [self.python, "-m", "bench.dynamoxy_worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        opened = self.ask(cmd="open", url=url, concurrency=concurrency)
        self.described = f"{opened['version']} on Python {opened['python']}"

    def close(self) -> None:
        """Close the client and end the worker."""
        if self.process is None:
            return
        try:
            self.ask(cmd="close")
        finally:
            if self.process.stdin is not None:
                self.process.stdin.close()
            self.process.wait(timeout=30)
            self.process = None

    def rows(self, name: str, data: Sequence[Row]) -> None:
        """Hand the worker these orders, as dynamoxy models, under ``name``."""
        self.ask(cmd="rows", name=name, rows=[_row(r) for r in data])

    def check(self, workload: str, name: str) -> Any:
        """Run the workload once, untimed; return the order numbers and notes it read."""
        return self.ask(cmd="check", workload=workload, name=name)["summary"]

    def variant(self, label: str, workload: str, name: str) -> Variant:
        """A variant whose samples the worker takes, with the clock the measurement asks for."""

        def timed(clock: Clock, repeat: int) -> float:
            answer = self.ask(cmd="time", workload=workload, name=name, repeat=repeat)
            return float(answer["cpu" if clock is CPU else "wall"])

        return Variant(f"{LABEL} {label}", lambda _: None, timed=timed)


def start(url: str, concurrency: int) -> tuple[Dynamoxy | None, str]:
    """Start dynamoxy's worker, or say why it is skipped (no Python 3.12+ with dynamoxy)."""
    python = os.environ.get(PYTHON_VARIABLE) or (
        str(DEFAULT_PYTHON) if DEFAULT_PYTHON.exists() else ""
    )
    if not python:
        return None, (
            "dynamoxy: skipped: no Python 3.12+ found (`make bench` makes .cache/bench-py312 "
            f"with dynamoxy when it finds one; or set {PYTHON_VARIABLE})"
        )
    probe = subprocess.run(
        [python, "-c", "import sys, dynamoxy; sys.exit(sys.version_info < (3, 12))"],
        capture_output=True,
        text=True,
        check=False,
    )
    if probe.returncode:
        return None, f"dynamoxy: skipped: {python} is not a Python 3.12+ with dynamoxy installed"
    peer = Dynamoxy(python)
    peer.open(url, concurrency)
    return peer, f"dynamoxy {peer.described}, in a worker process ({python})"
