"""Forward-mode AD of a random op on the device: dropout's tangent replays the CUDA generator's draws."""
from __future__ import annotations

import numpy as np
import pytest

cuda = pytest.importorskip("numba.cuda")
if not cuda.is_available():
    pytest.skip("CUDA (or the simulator) is not available", allow_module_level=True)

import ember  # noqa: E402
import ember.autograd.forward_ad as fwAD  # noqa: E402
import ember.nn.functional as F  # noqa: E402


def test_dropout_tangent_uses_the_device_mask_and_leaves_the_generator_as_without_forward_ad():
    ember.manual_seed(5)
    x = ember.randn(3, 4).to("cuda").requires_grad_()
    t = ember.randn(3, 4).to("cuda")
    with fwAD.dual_level():
        out = F.dropout(fwAD.make_dual(x, t), 0.5, training=True)
        tangent = fwAD.unpack_dual(out).tangent.cpu().numpy()
        out.sum().backward()
    after = ember.cuda.get_rng_state().numpy()
    mult = x.grad.cpu().numpy()  # the gradient of the same call: the scale where kept, 0 where dropped
    assert 0 < np.count_nonzero(mult) < mult.size
    np.testing.assert_allclose(tangent, t.cpu().numpy() * mult, rtol=1e-6)
    ember.manual_seed(5)
    x2 = ember.randn(3, 4).to("cuda")
    ember.randn(3, 4)
    F.dropout(x2, 0.5, training=True)
    np.testing.assert_array_equal(ember.cuda.get_rng_state().numpy(), after)
