"""``ember._dynamo.config``: the compiler's process-wide settings, by torch's names.

- ``recompile_limit`` (alias ``cache_size_limit``, torch's older name): how many graphs one compiled function
  keeps for calls that differ in something other than shape; past it new calls run eagerly, with a warning.
- ``shape_variants_limit``: how many shapes of one such call a dynamic compiled function keeps (the oldest
  goes; a new shape costs one captured call, no kernel compile: chain kernels take any shape).
- ``suppress_errors``: an error inside the compiler itself falls back to eager (logged) instead of raising.
"""
from __future__ import annotations

__all__ = ["config"]


class _Config:
    """The settings (see the module docstring)."""

    def __init__(self) -> None:
        self.recompile_limit = 8
        self.shape_variants_limit = 64
        self.suppress_errors = False

    @property
    def cache_size_limit(self) -> int:
        return self.recompile_limit

    @cache_size_limit.setter
    def cache_size_limit(self, value: int) -> None:
        self.recompile_limit = value


config = _Config()
