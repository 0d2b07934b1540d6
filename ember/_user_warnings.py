"""Warnings that point at the user's line, not at the ember frame (or the wrappers around it) that raised them."""
from __future__ import annotations

import os
import sys
import warnings

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def warn_user(message: str, category: type[Warning] = UserWarning) -> None:
    """``warnings.warn`` attributed to the first calling frame outside the ember package (what Python 3.12's
    ``skip_file_prefixes`` does), so a warning shows once per line of the script that triggers it."""
    frame, level = sys._getframe(1), 2
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)


_WARNED: set[str] = set()  # the keys of the warnings given once per process


def warn_user_once(key: str, message: str, category: type[Warning] = UserWarning) -> None:
    """``warn_user`` the first time ``key`` is seen in this process only (torch's ``TORCH_WARN_ONCE``)."""
    if key not in _WARNED:
        _WARNED.add(key)
        warn_user(message, category)
