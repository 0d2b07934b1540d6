"""``ember.backends.opt_einsum``: torch's switch for ordering einsum's contractions with the opt_einsum package.

ember's ``einsum`` never uses opt_einsum: it contracts the operands from left to right, which is what torch does
without the package. So this module answers as torch does where opt_einsum is not installed: ``is_available()``
is False, ``enabled`` False and ``strategy`` None (plain attributes, as there, that change nothing when
assigned), and ``flags()`` refuses to turn it on.
"""
from __future__ import annotations

import contextlib
from typing import Any, Iterator

enabled = False
strategy = None


def is_available() -> bool:
    """Whether einsum can order its contractions with opt_einsum: never in ember."""
    return False


def get_opt_einsum() -> Any:
    """The opt_einsum package einsum uses: None."""
    return None


@contextlib.contextmanager
def flags(enabled: bool | None = None, strategy: str | None = None) -> Iterator[None]:
    """torch's ``flags`` block: turning opt_einsum on or choosing a strategy raises torch's ValueError (for
    opt_einsum missing); ``enabled=False`` leaves everything as it is."""
    if enabled:
        raise ValueError(f"opt_einsum is not available, so setting `enabled` to {enabled} will not reap the benefits "
                         "of calculating an optimal path for einsum: ember's einsum always contracts from left to "
                         "right.")
    if strategy is not None:
        raise ValueError(f"opt_einsum is not available, so setting `strategy` to {strategy} will not be meaningful: "
                         "ember's einsum always contracts from left to right. Unset `strategy`.")
    yield
