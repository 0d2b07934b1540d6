"""``ember.testing``: ``torch.testing``'s helpers for writing tests: ``assert_close`` (and the deprecated
``assert_allclose``) to compare results with torch's tolerances and messages, ``make_tensor`` for random inputs."""
from ._comparison import assert_allclose, assert_close
from ._creation import make_tensor

__all__ = ["assert_close", "assert_allclose", "make_tensor"]
