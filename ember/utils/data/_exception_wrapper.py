"""An exception caught in a loader worker (or the pinning thread), carried to the main process and raised there.

A traceback cannot cross a process boundary, so the wrapper keeps its text; ``reraise`` raises an exception of the
original type whose message is torch's: "Caught KeyError in DataLoader worker process 1." then "Original Traceback
(most recent call last): ...". Where the type cannot be rebuilt from one message (or cannot be pickled to travel at
all), a RuntimeError carries the same text.
"""
from __future__ import annotations

import pickle
import sys
import traceback
from typing import Any


class KeyErrorMessage(str):
    """A message that reprs as itself: ``KeyError`` shows ``repr`` of its argument, which would mangle a traceback."""

    def __repr__(self) -> str:
        return self


def _travels(exc_type: type) -> bool:
    """Whether ``exc_type`` pickles by reference (a class defined in a function does not)."""
    try:
        return pickle.loads(pickle.dumps(exc_type)) is exc_type
    except Exception:  # noqa: BLE001 - any failure means it cannot travel
        return False


class ExceptionWrapper:
    """The exception being handled (or ``exc_info``), as its type and formatted traceback, and where it was caught."""

    def __init__(self, exc_info: tuple | None = None, where: str = "in background") -> None:
        if exc_info is None:
            exc_info = sys.exc_info()
        self.type_name = exc_info[0].__name__
        self.exc_type = exc_info[0] if _travels(exc_info[0]) else RuntimeError
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self) -> None:
        """Raise the wrapped exception here, its message holding the original traceback."""
        msg: Any = f"Caught {self.type_name} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = KeyErrorMessage(msg)
        elif getattr(self.exc_type, "message", None):
            raise self.exc_type(message=msg)
        try:
            exception = self.exc_type(msg)
        except Exception:  # noqa: BLE001 - a type that needs other arguments: torch falls back the same way
            raise RuntimeError(msg) from None
        raise exception


__all__ = ["ExceptionWrapper", "KeyErrorMessage"]
