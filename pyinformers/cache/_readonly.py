"""Read-only views of cached objects, for handlers that opt in.

The cache hands its own dicts to every handler and lister reader, so an
in-place change (``obj["metadata"]["labels"]["x"] = "y"``) corrupts what every
other reader sees. The mutation detector (:mod:`pyinformers.cache._mutation`)
finds such a change after the fact; a view refuses it when it happens, with a
``TypeError`` at the line that tried.

* :func:`read_only` wraps an object in O(1): a :class:`ReadOnlyDict` or
  :class:`ReadOnlyList` over the cached container itself, no copy. Nested
  dicts and lists are wrapped when they are read, so a handler that looks at
  three fields pays for three wrappers, not for the object's size.
* :func:`thaw` is the way out: a deep, mutable copy as plain dicts and lists,
  to edit and send (``orjson`` and ``json`` serialise plain containers only).
* :func:`read_only_handler` wraps a handler so that ``on_add``,
  ``on_update`` and ``on_delete`` receive views (a tombstone's ``obj`` too).

Invariants: a view never copies and never changes what it wraps; a view
compares equal to the plain object it wraps; reading a view of an object the
cache later replaces still shows the old object (the cache replaces, it does
not edit). Views hide nothing from a determined writer (``view._data``): they
guard against accidents, not malice.

Thread-safety: views are immutable wrappers over objects the cache never
edits in place, so any thread may read them.

Cost (``benchmarks/bench_readonly.py``): creating a view is one small object;
each read through it costs a method call and, for a nested container, one more
small object. See docs/informers.rst, "Read-only handler views".
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NoReturn, overload

from pyinformers.api import meta
from pyinformers.cache._tombstone import DeletedFinalStateUnknown

__all__ = ["ReadOnlyDict", "ReadOnlyList", "read_only", "read_only_handler", "thaw"]

_REFUSAL = (
    "a cached object is read-only in this handler: "
    "take a mutable copy with pyinformers.cache.thaw(obj) and change that"
)


def _refuse(*_args: Any, **_kwargs: Any) -> NoReturn:
    raise TypeError(_REFUSAL)


def _view(value: Any) -> Any:
    cls = value.__class__
    if cls is dict:
        return ReadOnlyDict(value)
    if cls is list:
        return ReadOnlyList(value)
    return value


class ReadOnlyDict(Mapping[str, Any]):
    """A read-only mapping over a cached dict; nested containers come out as views."""

    __slots__ = ("_data",)

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data

    def __getitem__(self, key: str) -> Any:
        return _view(self._data[key])

    def get(self, key: str, default: Any = None) -> Any:
        value = self._data.get(key, default)
        return value if value is default else _view(value)

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ReadOnlyDict):
            other = other._data
        return self._data == other

    __hash__ = None  # type: ignore[assignment]  # as dict: equal to a dict, so not hashable

    def __repr__(self) -> str:
        return f"read_only({self._data!r})"

    __setitem__ = __delitem__ = _refuse
    setdefault = pop = popitem = update = clear = _refuse


class ReadOnlyList(Sequence[Any]):
    """A read-only sequence over a cached list; nested containers come out as views."""

    __slots__ = ("_data",)

    def __init__(self, data: list[Any]) -> None:
        self._data = data

    @overload
    def __getitem__(self, index: int) -> Any: ...

    @overload
    def __getitem__(self, index: slice) -> ReadOnlyList: ...

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return ReadOnlyList(self._data[index])
        return _view(self._data[index])

    def __iter__(self) -> Iterator[Any]:
        for value in self._data:
            yield _view(value)

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, value: object) -> bool:
        if isinstance(value, (ReadOnlyDict, ReadOnlyList)):
            value = value._data
        return value in self._data

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ReadOnlyList):
            other = other._data
        return self._data == other

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"read_only({self._data!r})"

    __setitem__ = __delitem__ = __iadd__ = _refuse
    append = extend = insert = pop = remove = clear = sort = reverse = _refuse


def read_only(obj: Any) -> Any:
    """A view of ``obj`` (a dict or list) that refuses changes; other values as they are."""
    return _view(obj)


def thaw(obj: Any) -> Any:
    """A deep, mutable copy of a view (or of a plain object), as plain dicts and lists."""
    if isinstance(obj, (ReadOnlyDict, ReadOnlyList)):
        obj = obj._data
    return meta.deep_copy(obj)


class _ReadOnlyHandler:
    """A handler whose callbacks receive views; built by :func:`read_only_handler`."""

    __slots__ = ("handler", "on_add", "on_delete", "on_update")

    def __init__(self, handler: Any) -> None:
        self.handler = handler
        add = getattr(handler, "on_add", None)
        update = getattr(handler, "on_update", None)
        delete = getattr(handler, "on_delete", None)
        self.on_add = None if add is None else (lambda obj, initial: add(_view(obj), initial))
        self.on_update = None if update is None else (lambda old, new: _update(update, old, new))
        self.on_delete = None if delete is None else (lambda obj: delete(_deleted(obj)))

    def __repr__(self) -> str:
        return f"read_only_handler({self.handler!r})"


def _update(update: Any, old: Any, new: Any) -> Any:
    new_view = _view(new)
    # A resync hands the same object twice (``old is new``); keep that visible.
    return update(new_view if old is new else _view(old), new_view)


def _deleted(obj: Any) -> Any:
    if isinstance(obj, DeletedFinalStateUnknown):
        return DeletedFinalStateUnknown(obj.key, _view(obj.obj))
    return _view(obj)


def read_only_handler(handler: Any) -> Any:
    """``handler`` with every object it receives wrapped by :func:`read_only`.

    Register the result instead of the handler:
    ``informer.add_event_handler(read_only_handler(MyHandler()))``. The
    handler's ``on_add``/``on_update``/``on_delete`` are looked up once, here.
    """
    return _ReadOnlyHandler(handler)
