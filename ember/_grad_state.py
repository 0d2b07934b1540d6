"""The grad-mode flags: per thread, whether ops record the graph and whether inference mode is on, and the
process-wide counts of open ``inference_mode`` blocks.

They sit below the tensor core (which reads them when it makes a tensor) and autograd (whose ``grad_mode``
switches set them), so both import them at module top. This module imports nothing of ember.
"""
from __future__ import annotations

import threading


class _ThreadModes(threading.local):
    """Per-thread modes; the class attributes are every new thread's defaults (read without a getattr default:
    every op asks)."""

    enabled = True
    inference = False


state = _ThreadModes()
# How many ``inference_mode`` blocks are open, in all threads: tensor creation reads this plain number first and
# asks the (slower) thread-local state only while some block is open.
INFERENCE_BLOCKS = [0]
# Whether any ``inference_mode`` block was ever opened: until then no tensor is an inference tensor, so recorded
# ops skip checking the tensors they save.
INFERENCE_SEEN = [False]
_BLOCKS_LOCK = threading.Lock()


def count_inference_block(change: int) -> None:
    """Note that an ``inference_mode`` block opened (+1) or closed (-1)."""
    with _BLOCKS_LOCK:
        INFERENCE_BLOCKS[0] += change
        INFERENCE_SEEN[0] = True
