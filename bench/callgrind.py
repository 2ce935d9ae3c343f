"""Counting instructions with valgrind's callgrind between markers, for the experiments here.

A program run this way calls ``time.tzset()`` (whose C function nothing else here calls) around
each block it wants counted: callgrind dumps its counts before every such call, so each block's
instructions are one dump's total. Instruction counts repeat on a loaded machine, where wall
and CPU times do not.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from lsiorm.testing import DynamoDBLocal

ROOT = Path(__file__).resolve().parent.parent


def marked_counts(module: str, arguments: Sequence[str]) -> tuple[str, dict[int, int]]:
    """Run ``python -m module *arguments`` under callgrind, dumping at each marker.

    Returns its output and each dump's instruction count by number: dump 1 holds everything
    before the first marker, dump n + 1 what ran between the n-th marker and the next, and
    dump 0 what ran after the last one.
    """
    with tempfile.TemporaryDirectory(prefix="lsiorm-callgrind-") as folder:
        out = Path(folder) / "counts.out"
        done = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                "--dump-before=tzset",
                f"--callgrind-out-file={out}",
                sys.executable,
                "-m",
                module,
                *arguments,
            ],
            check=False,
            capture_output=True,
            text=True,
            cwd=ROOT,
        )
        if done.returncode:
            raise RuntimeError(f"the valgrind run of {module} failed:\n{done.stderr[-3000:]}")
        totals = {}
        for part in Path(folder).glob("counts.out*"):
            found = re.search(r"^totals:\s*(\d+)", part.read_text(), re.M)
            number = int(part.name.rsplit(".", 1)[1]) if part.name != out.name else 0
            totals[number] = int(found.group(1)) if found else 0
    return done.stdout, totals


@contextlib.contextmanager
def engine(url: str | None) -> Iterator[str]:
    """Yield ``url``, or the endpoint of a DynamoDB Local started for the block; dummy
    credentials are set for local engines when none are."""
    for name, value in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing")):
        os.environ.setdefault(name, value)
    if url is not None:
        yield url
        return
    with DynamoDBLocal() as local:
        yield local.endpoint_url
