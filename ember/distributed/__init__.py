"""``ember.distributed``: distributed training and RPC, which ember does not have yet.

``is_available()`` answers truthfully (False), so code written for torch takes its single-process path; nothing
else of ``torch.distributed`` is here.
"""
from __future__ import annotations


def is_available() -> bool:
    """Whether ember can run distributed work: not yet (no process groups, collectives or RPC)."""
    return False


__all__ = ["is_available"]
