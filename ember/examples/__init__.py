"""Runnable examples shipped with ember (``python -m ember.examples.digits``) and their small helpers."""
from __future__ import annotations

__all__: list[str] = []
