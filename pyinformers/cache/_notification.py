"""The informer's notifications to its handlers: one typed vocabulary shared by the informer and the processor.

A notification is a 3-tuple ``(kind, a, b)`` -- a tuple, not an object,
because millions pass through the hot path and a tuple is the cheapest thing
Python builds:

* ``(NotificationKind.ADD, obj, is_in_initial_list)``
* ``(NotificationKind.UPDATE, old, new)`` (``old is new`` on a resync)
* ``(NotificationKind.DELETE, obj_or_tombstone, None)``

:class:`NotificationKind` is an ``IntEnum``: its members compare and hash as
the small ints they are, so checking a kind costs what it did with bare ints,
while type checkers and readers see what each one means. Internal module.
"""

from __future__ import annotations

import enum
from typing import Any

__all__ = ["Notification", "NotificationKind"]


class NotificationKind(enum.IntEnum):
    """What a notification tells a handler: ``on_add``, ``on_update`` or ``on_delete``."""

    ADD = 0
    UPDATE = 1
    DELETE = 2


#: ``(kind, a, b)``; see the module docstring for what ``a`` and ``b`` hold per kind.
Notification = tuple[NotificationKind, Any, Any]
