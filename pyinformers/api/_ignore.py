"""``ignore_not_found()`` and ``ignore_already_exists()``: controller-runtime's ``client.IgnoreNotFound``.

Go returns errors, so ``client.IgnoreNotFound(err)`` turns a NotFound into
nil. Python raises, so the same intent is a context manager::

    with ignore_not_found():
        client.delete(name, namespace)      # already gone: fine

Only the named answer is swallowed (:class:`~pyinformers.api.NotFound`, or
:class:`~pyinformers.api.AlreadyExists`); every other error propagates. The
manager's ``ignored`` attribute says whether it swallowed one. Thread-safe
(each ``with`` gets its own manager).
"""

from __future__ import annotations

from types import TracebackType

from pyinformers.api._errors import AlreadyExists, ApiError, NotFound

__all__ = ["Ignored", "ignore_already_exists", "ignore_not_found"]


class Ignored:
    """A context manager that swallows one kind of :class:`ApiError`; ``ignored`` is the one it swallowed."""

    __slots__ = ("_kind", "ignored")

    def __init__(self, kind: type[ApiError]) -> None:
        self._kind = kind
        self.ignored: ApiError | None = None

    def __enter__(self) -> Ignored:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        if exc is not None and isinstance(exc, self._kind):
            self.ignored = exc
            return True
        return False

    def __repr__(self) -> str:
        return f"<Ignored {self._kind.__name__} ignored={self.ignored is not None}>"


def ignore_not_found() -> Ignored:
    """A ``with`` block in which a :class:`~pyinformers.api.NotFound` answer is not an error."""
    return Ignored(NotFound)


def ignore_already_exists() -> Ignored:
    """A ``with`` block in which an :class:`~pyinformers.api.AlreadyExists` answer is not an error."""
    return Ignored(AlreadyExists)
