"""a2a's exceptions: one class per liba2a status (a2a.h's a2a_status), all under a2a.Error."""

from __future__ import annotations

import enum
from typing import Dict, Type


class Status(enum.IntEnum):
    """liba2a's status codes (a2a_status in a2a.h), modelled on gRPC's."""

    OK = 0
    INVALID_ARGUMENT = 1
    NOT_FOUND = 2
    ALREADY_EXISTS = 3
    PERMISSION_DENIED = 4
    COUNT_MISMATCH = 5
    DEADLINE_EXCEEDED = 6
    UNAVAILABLE = 7
    RESOURCE_EXHAUSTED = 8
    INTERNAL = 9


class Error(Exception):
    """A failed a2a call. ``status`` is the :class:`Status`, ``message`` liba2a's message."""

    status: Status = Status.INTERNAL

    def __init__(self, message: str, status: "Status | int | None" = None) -> None:
        if status is not None:
            self.status = Status(status)
        self.message = message
        super().__init__(f"{self.status.name}: {message}")


class InvalidArgumentError(Error, ValueError):
    """Bad counts, displacements, dtype, buffer or group name; nothing was sent."""

    status = Status.INVALID_ARGUMENT


class NotFoundError(Error, LookupError):
    """An unknown group."""

    status = Status.NOT_FOUND


class AlreadyExistsError(Error):
    """create_group with other members; a second live job on a rank."""

    status = Status.ALREADY_EXISTS


class PermissionDeniedError(Error):
    """The caller is not in the group; bad credentials."""

    status = Status.PERMISSION_DENIED


class CountMismatchError(Error):
    """A sender's count differs from the receiver's recv_counts (both ranks are named)."""

    status = Status.COUNT_MISMATCH


class DeadlineExceededError(Error):
    """A peer did not arrive in time (the missing ranks are named)."""

    status = Status.DEADLINE_EXCEEDED


class UnavailableError(Error):
    """The worker, a peer or the coordinator is unreachable or gone; the job is closed."""

    status = Status.UNAVAILABLE


class ResourceExhaustedError(Error):
    """Out of memory, or a remote job's staging is full."""

    status = Status.RESOURCE_EXHAUSTED


class InternalError(Error):
    """A bug in a2a."""

    status = Status.INTERNAL


_BY_STATUS: Dict[int, Type[Error]] = {
    cls.status: cls
    for cls in (InvalidArgumentError, NotFoundError, AlreadyExistsError, PermissionDeniedError,
                CountMismatchError, DeadlineExceededError, UnavailableError,
                ResourceExhaustedError, InternalError)
}


def from_status(status: int, message: str) -> Error:
    """The exception for liba2a's ``status`` with its ``message`` (used by a2a._core)."""
    cls = _BY_STATUS.get(int(status), InternalError)
    return cls(message, status if int(status) in _BY_STATUS else Status.INTERNAL)
