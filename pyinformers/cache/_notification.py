"""What happened to an object: :class:`ChangeKind`, from the informer's notifications to the predicates.

A notification is a 3-tuple ``(kind, a, b)`` -- a tuple, not an object,
because millions pass through the hot path and a tuple is the cheapest thing
Python builds:

* ``(ChangeKind.ADD, obj, is_in_initial_list)``
* ``(ChangeKind.UPDATE, old, new)`` (``old is new`` on a resync)
* ``(ChangeKind.DELETE, obj_or_tombstone, None)``

:class:`ChangeKind` is an ``IntEnum``: its members compare and hash as
the small ints they are, so checking a kind costs what it did with bare ints,
while type checkers and readers see what each one means. The same enum is
the ``type`` of a controller's :class:`~pyinformers.controller.Change`, so one
word names one thing from the informer to a predicate (watch events keep the
API server's ``ADDED``/``MODIFIED``/``DELETED`` strings, and the DeltaFIFO
client-go's ``DeltaType``, which also has ``Replaced`` and ``Sync``).
"""

from __future__ import annotations

import enum
from typing import Any

__all__ = ["Notification", "ChangeKind"]


class ChangeKind(enum.IntEnum):
    """What happened to an object: the handler method it reaches is ``on_add``, ``on_update`` or ``on_delete``."""

    ADD = 0
    UPDATE = 1
    DELETE = 2


#: ``(kind, a, b)``; see the module docstring for what ``a`` and ``b`` hold per kind.
Notification = tuple[ChangeKind, Any, Any]
