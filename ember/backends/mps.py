"""``ember.backends.mps``: Apple's Metal backend, which ember does not have."""
from __future__ import annotations


def is_available() -> bool:
    """Whether MPS can be used: never in ember."""
    return False


def is_built() -> bool:
    """Whether ember has an MPS backend: no."""
    return False
