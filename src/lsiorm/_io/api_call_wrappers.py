"""Who wraps botocore's ``_make_api_call``: the method every tracer of botocore hooks into.

OpenTelemetry's botocore and aiobotocore instrumentations, the AWS X-Ray SDK and ddtrace all
replace ``BaseClient._make_api_call`` (or aiobotocore's ``AioBaseClient._make_api_call``) with
a wrapper that opens a span around each call; so does a test that patches it on a client. The
lean lane skips that method, so it steps aside whenever a wrapper is there, and every request
goes through the wrapper as it did before lsiorm. `ApiCallWatch` says, cheaply and on every
request, whether a client's method is wrapped, and whether the wrapper is OpenTelemetry's (then
its span is the request's span, and lsiorm does not open a second one).
"""

from __future__ import annotations

import os
import sys
import threading
import types
from typing import Any, Final

from lsiorm._io.lazy_client import LazyClient

__all__ = ["ApiCallWatch", "LazyClientWatch", "base_client_wrapped", "watch_of"]

_METHOD: Final = "_make_api_call"
#: The packages whose own ``_make_api_call`` is the plain, unwrapped one.
_OWN_PACKAGES: Final = ("botocore", "aiobotocore")


def _package_dirs() -> tuple[str, ...]:
    dirs: list[str] = []
    for name in _OWN_PACKAGES:
        try:
            module = __import__(name)
        except ImportError:
            continue
        dirs.append(os.path.dirname(os.path.abspath(module.__file__ or "")) + os.sep)
    return tuple(dirs)


def _is_plain(method: Any, own: tuple[str, ...]) -> bool:
    """Functions defined in botocore or aiobotocore all the way down.

    botocore decorates the method itself (its context decorator keeps ``__wrapped__``): a
    chain of such functions is still botocore's own method.
    """
    current, depth = method, 0
    while current is not None and depth < 16:
        if type(current) is not types.FunctionType:
            return False
        if not os.path.abspath(current.__code__.co_filename).startswith(own):
            return False
        current, depth = getattr(current, "__wrapped__", None), depth + 1
    return current is None


def _links(method: Any) -> list[Any]:
    """The method, each thing it wraps (``__wrapped__``), and each wrapper function (wrapt)."""
    links: list[Any] = []
    seen: set[int] = set()
    current = method
    while current is not None and id(current) not in seen and len(links) < 16:
        seen.add(id(current))
        links.append(current)
        wrapper = getattr(current, "_self_wrapper", None)  # wrapt's FunctionWrapper
        if wrapper is not None:
            links.append(wrapper)
        current = getattr(current, "__wrapped__", None)
    return links


def _by_opentelemetry(method: Any) -> bool:
    for link in _links(method):
        func = getattr(link, "__func__", link)
        module = getattr(func, "__module__", "") or ""
        code = getattr(func, "__code__", None)
        filename = code.co_filename if code is not None else ""
        if module.startswith("opentelemetry.") or f"{os.sep}opentelemetry{os.sep}" in filename:
            return True
    return False


class ApiCallWatch:
    """Watches the ``_make_api_call`` one client resolves to (on the instance or its classes).

    A look costs a few dictionary lookups; the verdict is worked out again only when the
    method found is not the one seen last time (an instrumentor was turned on or off).
    """

    def __init__(self, client: Any, classes: tuple[type, ...] | None = None) -> None:
        self._client = client
        if classes is None:
            classes = type(client).__mro__
        self._classes = tuple(
            cls for cls in classes if cls is not object and hasattr(cls, "__dict__")
        )
        self._own = _package_dirs()
        self._seen: Any = None
        self._wrapped = False
        self._otel = False
        self._look()

    @classmethod
    def for_class(cls, client_class: type) -> ApiCallWatch:
        """Watches the ``_make_api_call`` of a client class (every instance not patched)."""
        return cls(None, client_class.__mro__)

    def _current(self) -> Any:
        found = getattr(self._client, "__dict__", {}).get(_METHOD)
        if found is not None:
            return found
        for cls in self._classes:
            found = cls.__dict__.get(_METHOD)
            if found is not None:
                return found
        return None

    def _look(self) -> None:
        method = self._current()
        if method is self._seen:
            return
        self._seen = method
        self._wrapped = method is not None and not _is_plain(method, self._own)
        self._otel = self._wrapped and _by_opentelemetry(method)

    def wrapped(self) -> bool:
        """True when something wraps the client's ``_make_api_call`` right now."""
        self._look()
        return self._wrapped

    def traced_by_opentelemetry(self) -> bool:
        """True when an OpenTelemetry instrumentation wraps it (and so traces each call)."""
        self._look()
        return self._otel


_CLASS_WATCH: list[ApiCallWatch] = []
_CLASS_WATCH_LOCK = threading.Lock()


def _base_client_watch() -> ApiCallWatch | None:
    """The watch of ``botocore.client.BaseClient`` (None until botocore.client is imported:
    an instrumentation imports it to wrap it)."""
    if _CLASS_WATCH:
        return _CLASS_WATCH[0]
    module = sys.modules.get("botocore.client")
    if module is None:
        return None
    with _CLASS_WATCH_LOCK:
        if not _CLASS_WATCH:
            _CLASS_WATCH.append(ApiCallWatch.for_class(module.BaseClient))
    return _CLASS_WATCH[0]


def base_client_wrapped() -> bool:
    """True when a tracer wraps botocore's ``BaseClient._make_api_call`` right now."""
    watch = _base_client_watch()
    return watch is not None and watch.wrapped()


class LazyClientWatch:
    """`ApiCallWatch` for a `LazyClient`: botocore's client class while no client was built,
    then the client built."""

    def __init__(self, client: LazyClient) -> None:
        self._lazy = client
        self._built: ApiCallWatch | None = None

    def _watch(self) -> ApiCallWatch | None:
        if self._built is not None:
            return self._built
        real = self._lazy.built_or_none()
        if real is None:
            return _base_client_watch()
        self._built = ApiCallWatch(real)
        return self._built

    def wrapped(self) -> bool:
        watch = self._watch()
        return watch is not None and watch.wrapped()

    def traced_by_opentelemetry(self) -> bool:
        watch = self._watch()
        return watch is not None and watch.traced_by_opentelemetry()


def watch_of(client: Any) -> ApiCallWatch | LazyClientWatch:
    """The watch of a botocore client's ``_make_api_call``, or of a `LazyClient`'s."""
    return LazyClientWatch(client) if isinstance(client, LazyClient) else ApiCallWatch(client)
