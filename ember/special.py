"""``torch.special``: the special functions ember has, under torch.special's names.

The elementwise ones are their ops' declarations' ``special`` names (``ember.opcodes``; made in
``ember.tensor.elementwise_functions``): ``entr``, ``erfcx``, ``xlog1py`` and the other names of ember's own ops
(``expit`` is ``sigmoid``, ``gammaln`` is ``lgamma``). Bessel, Airy, the normal distribution's functions, ``zeta``
and the orthogonal polynomials are ``ember.tensor.special_functions``'. The rest are ember's functions of the same
meaning.
"""
from .tensor.activation_ops import log_softmax, softmax
from .tensor.composite import logit, sinc
from .tensor.elementwise import round  # noqa: A004 - torch's name
from .tensor.elementwise_functions import SPECIAL as _SPECIAL
from .tensor.reduce import logsumexp
from .tensor.special_functions import FUNCTIONS as _FUNCTIONS
from .tensor.special_math import i0, igamma as gammainc, igammac as gammaincc, mvlgamma as multigammaln, polygamma

globals().update(_SPECIAL)
globals().update(_FUNCTIONS)

__all__ = sorted([*_SPECIAL, *_FUNCTIONS, "gammainc", "gammaincc", "i0", "log_softmax", "logit", "logsumexp",
                  "multigammaln", "polygamma", "round", "sinc", "softmax"])
