"""Without the protect and zstd extras, lsiorm imports and works; only what needs them says so.

moto (the testing extra) installs `cryptography` itself, so leaving the extras out of a venv
proves nothing: each check runs in a fresh interpreter where importing `cryptography` or
`zstandard` fails, as it does where they are not installed.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

BLOCK = """
import importlib.abc, sys

class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("cryptography", "zstandard"):
            raise ImportError(f"No module named {name!r} (blocked)")
        return None

sys.meta_path.insert(0, Block())
"""


def _run(code: str) -> subprocess.CompletedProcess[str]:
    script = BLOCK + textwrap.dedent(code)
    return subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )


def test_lsiorm_imports_and_declares_protected_fields_without_the_extras() -> None:
    done = _run(
        """
        from typing import Annotated
        import lsiorm
        from lsiorm import Compressed, Encrypted, Entity, Offloaded, Table, stored_size

        t = Table("Docs", "PK", "SK")

        class Doc(Entity, table=t, keys={"PK": "D#{did}", "SK": "D"}):
            did: str
            body: Annotated[str, Compressed()] = ""
            secret: Annotated[str | None, Encrypted()] = None
            blob: Annotated[bytes | None, Offloaded(threshold=2048)] = None

        # gzip is the standard library's: a compressed field's stored size needs no extra.
        assert stored_size(Doc(did="1", body="x" * 5000)) < 200
        assert "cryptography" not in sys.modules and "zstandard" not in sys.modules
        print("ok")
        """
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_sealing_an_encrypted_or_zstd_value_names_the_missing_extra() -> None:
    done = _run(
        """
        from lsiorm import MissingDependencyError
        from lsiorm._model.sealing import Binding, DataKey, seal_payload

        binding = Binding("Docs", {"PK": {"S": "D#1"}, "SK": {"S": "D"}}, "secret")
        key = DataKey(bytes(32), "arn:aws:kms:us-east-1:111122223333:key/k", bytes(184))
        encrypted = {"compression": None, "key": key, "binding": binding}
        zstd = {"compression": "zstd", "key": None, "binding": None}
        for kwargs in (encrypted, zstd):
            try:
                seal_payload(b"a value" * 100, level=None, **kwargs)
            except MissingDependencyError as exc:
                print(exc.extra)
            else:
                print("sealed")
        """
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.split()
    assert lines[0] == "protect"
    # Python 3.14 compresses zstd with its own compression.zstd: no extra is needed there.
    assert lines[1] == ("sealed" if sys.version_info >= (3, 14) else "zstd")
