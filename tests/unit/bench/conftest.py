"""The benchmark's own package (``bench/``, at the repository's top level, not installed) is
imported by these tests: its folder goes on the import path."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[3])
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)
