"""The op harness's declarations on CUDA tensors: the elementwise, reduction, activation, softmax and loss cases
declared for the CPU tests (tests/test_elementwise.py, test_reductions.py, test_nn_activation.py, test_nn_loss.py)
run here on the device, against the same references (see tests/op_harness.py).

On a GPU every case runs, with its gradient checks. The simulator runs each CUDA thread as Python, a reduction (in a
loss, a softmax, a broadcast's backward) a tenth of a second per launch, and the same Python for every dtype: under
it run every elementwise op and activation in one dtype (float64 where the case has it), a sample of the reductions
and losses, and the gradient checks of a sample (the forward tests against torch compare the device's gradients too);
the kernels under them are tested one by one in this folder's other files (the softmax kernels there only).
"""
from __future__ import annotations

import os
from dataclasses import replace
from typing import Sequence

import pytest
import test_elementwise
import test_nn_activation
import test_nn_loss
import test_reductions
from op_harness import Case, OpTests, op_tests

# the declaring modules' warning filters; the simulator's NumPy scalars warn where a GPU quietly makes a NaN
pytestmark = [test_reductions.pytestmark, test_nn_loss.pytestmark,
              pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")]
SIMULATED = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"
SOFTMAXES = {f"{name}-dim{dim}" for name in test_nn_activation.SOFTMAXES for dim in test_nn_activation.SOFTMAX_SHAPES}


def _on_device(cases: Sequence[Case], gradients: set[str], skip: set[str] = frozenset(),
               only: set[str] | None = None) -> OpTests:
    """``op_tests`` of ``cases`` on CUDA: all of them on a GPU; under the simulator, those in ``only`` (default: all
    but ``skip``) in one dtype, with the gradient checks of ``gradients``."""
    if not SIMULATED:
        return op_tests(cases, "cuda")
    kept = [replace(c, dtypes=("float64",) if "float64" in c.dtypes else c.dtypes[:1]) for c in cases
            if (c.name in only if only is not None else c.name not in skip)]
    return op_tests(kept, "cuda", gradients)


test_elementwise_forward, test_elementwise_gradcheck, test_elementwise_gradgradcheck = _on_device(
    test_elementwise.ELEMENTWISE, gradients={"exp", "tanh"})
test_reduction_forward, test_reduction_gradcheck, test_reduction_gradgradcheck = _on_device(
    test_reductions.REDUCTIONS, gradients=set(), only={"sum-dims-keepdim", "max-dim", "cumsum"})
test_activation_forward, test_activation_gradcheck, test_activation_gradgradcheck = _on_device(
    test_nn_activation.ACTIVATION_CASES, gradients={"gelu", "silu"}, skip=SOFTMAXES)
test_loss_forward, test_loss_gradcheck, test_loss_gradgradcheck = _on_device(
    test_nn_loss.LOSS_CASES, gradients=set(), only={"mse-weight", "bce_logits", "kl_div-log_target"})
