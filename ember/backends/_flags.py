"""What the ``ember.backends`` modules share: boolean settings with torch's type check, and ``flags()`` blocks."""
from __future__ import annotations

import contextlib
from typing import Any, Iterator


def expect_bool(value: Any, setter: str) -> bool:
    """``value`` when it is a bool; torch's RuntimeError otherwise (ints are refused too)."""
    if type(value) is not bool:
        raise RuntimeError(f"{setter} expects a bool, but got {type(value).__name__}")
    return value


class BoolFlag:
    """A boolean setting read and assigned as an attribute (``cudnn.benchmark = True``) of a backends module
    or object; ``setter`` names it in the error for a non-bool, as torch's messages do."""

    def __init__(self, default: bool, setter: str) -> None:
        self.value = default
        self.setter = setter

    def __get__(self, owner_object: Any, owner: Any = None) -> Any:
        return self if owner_object is None else self.value

    def __set__(self, owner_object: Any, value: Any) -> None:
        self.value = expect_bool(value, self.setter)


@contextlib.contextmanager
def flag_block(target: Any, values: dict[str, Any]) -> Iterator[None]:
    """Set the attributes ``values`` of ``target`` for the block, then put the previous values back."""
    saved = {name: getattr(target, name) for name in values}
    try:
        for name, value in values.items():
            setattr(target, name, value)
        yield
    finally:
        for name, value in saved.items():
            setattr(target, name, value)
