"""Old module paths (lsiorm 0.1), kept importable for one release with a DeprecationWarning.

lsiorm 0.1 kept every module public in one flat folder. They now live in private layers, and
every name users need is importable from `lsiorm`. `import lsiorm.entity` (and the other
0.1 paths below) still works: it warns and gives the module at its new place. `lsiorm.query`
is the exception: it was both a module and a function, and `lsiorm.query` is the function.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import sys
import warnings
from types import ModuleType
from typing import TYPE_CHECKING, Final, cast

if TYPE_CHECKING:
    from importlib.abc import Loader

#: 0.1 module path -> the module that holds its code now.
MOVED: Final[dict[str, str]] = {
    "lsiorm.audit": "lsiorm._ops.audit",
    "lsiorm.batch": "lsiorm._ops.batch",
    "lsiorm.capacity": "lsiorm._model.capacity",
    "lsiorm.cli": "lsiorm._cli",
    "lsiorm.collections_guard": "lsiorm._ops.collection_guard",
    "lsiorm.conditions": "lsiorm._conditions",
    "lsiorm.core": "lsiorm._ops.pipeline",
    "lsiorm.crud": "lsiorm._ops.items",
    "lsiorm.drivers": "lsiorm._io.drivers",
    "lsiorm.encoding": "lsiorm._model.encoding",
    "lsiorm.entity": "lsiorm._model.entity",
    "lsiorm.fastjson": "lsiorm._io.fastjson",
    "lsiorm.middleware": "lsiorm._ops.hooks",
    "lsiorm.query_ops": "lsiorm._ops.reads",
    "lsiorm.retry": "lsiorm._ops.retry",
    "lsiorm.schema": "lsiorm._model.schema",
    "lsiorm.service_errors": "lsiorm._ops.service_errors",
    "lsiorm.session": "lsiorm._session",
    "lsiorm.steps": "lsiorm._ops.steps",
    "lsiorm.table_ops": "lsiorm._ops.tables",
    "lsiorm.template": "lsiorm._model.template",
    "lsiorm.transactions": "lsiorm._ops.transactions",
    "lsiorm.wire": "lsiorm._model.wire",
}


class _MovedLoader:
    """Gives an old module path the module at its new place (importlib.abc is not imported:
    it loads importlib.resources, tempfile and more, which `import lsiorm` does not need)."""

    def __init__(self) -> None:
        self._target: ModuleType | None = None
        self._spec: importlib.machinery.ModuleSpec | None = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        warnings.warn(
            f"{spec.name} is deprecated and will be removed in lsiorm 0.3; import the names you "
            f"need from lsiorm instead",
            DeprecationWarning,
            stacklevel=2,
        )
        self._target = importlib.import_module(MOVED[spec.name])
        self._spec = self._target.__spec__
        return self._target

    def exec_module(self, module: ModuleType) -> None:
        # The module ran at its new place already; the import system has just replaced its
        # __spec__ with the old path's, so give it back its own.
        module.__spec__ = self._spec


class _MovedFinder:
    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, cast("Loader", _MovedLoader()))


_FINDER: Final = _MovedFinder()


def install() -> None:
    """Let the 0.1 module paths resolve (idempotent)."""
    if _FINDER not in sys.meta_path:
        sys.meta_path.append(_FINDER)
