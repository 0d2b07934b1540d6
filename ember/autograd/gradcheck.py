"""Check analytic gradients against central finite differences (use float64 inputs). Inputs may live on any
device: they are perturbed in place where they are, and results are compared on the host."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
from ..tensor.tensor import Tensor
from ..tensor.creation import tensor, zeros_like
from ..tensor.memory_format import contiguous_format
from ..tensor.device import CPU, place
from .grad_mode import enable_grad, no_grad
from .gradients import grad


class GradcheckError(RuntimeError):
    """Analytic and numerical gradients disagree."""


def _tuple(x: Any) -> tuple:
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _host64(t: Any) -> np.ndarray:
    """A tensor's values as a flat float64 host array (a copy)."""
    return np.array(place(t._array, CPU), dtype=np.float64).reshape(-1)


def _differentiable(inputs: tuple) -> list[int]:
    return [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]


def _outputs(fn: Callable, inputs: tuple) -> tuple:
    return tuple(o for o in _tuple(fn(*inputs)) if isinstance(o, Tensor) and o.dtype.is_floating_point)


def _numerical(fn: Callable, inputs: tuple, wrt: list[int], eps: float) -> list[list[np.ndarray]]:
    """J[input][output] with shape (input numel, output numel), by central differences."""
    with no_grad():
        base = _outputs(fn, inputs)
        jac = [[np.zeros((inputs[i].numel(), o.numel())) for o in base] for i in wrt]
        for k, i in enumerate(wrt):
            arr = inputs[i]._array
            host = _host64(inputs[i])
            flat_index = np.arange(arr.size).reshape(arr.shape)
            for j in range(arr.size):
                pos = np.unravel_index(j, arr.shape) if arr.ndim else ()
                original = host[j]
                arr[pos] = original + eps
                plus = [_host64(o) for o in _outputs(fn, inputs)]
                arr[pos] = original - eps
                minus = [_host64(o) for o in _outputs(fn, inputs)]
                arr[pos] = original
                for m, (p, q) in enumerate(zip(plus, minus)):
                    jac[k][m][flat_index.reshape(-1)[j]] = (p - q) / (2 * eps)
    return jac


def _analytical(fn: Callable, inputs: tuple, wrt: list[int]) -> list[list[np.ndarray]]:
    outputs = _outputs(fn, inputs)
    jac = [[np.zeros((inputs[i].numel(), o.numel())) for o in outputs] for i in wrt]
    for m, out in enumerate(outputs):
        if not out.requires_grad:
            continue
        for j in range(out.numel()):
            seed = zeros_like(out, memory_format=contiguous_format)  # so the flat view below is a view
            seed._array.reshape(-1)[j] = 1
            grads = grad(out, [inputs[i] for i in wrt], seed, retain_graph=True, allow_unused=True)
            for k, g in enumerate(grads):
                if g is not None:
                    jac[k][m][:, j] = _host64(g)
    return jac


def gradcheck(func: Callable, inputs: Any, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              raise_exception: bool = True, nondet_tol: float = 0.0, check_undefined_grad: bool = True,
              check_grad_dtypes: bool = False, check_batched_grad: bool = False, fast_mode: bool = False,
              masked: bool | None = None) -> bool:
    """True when ``func``'s gradients match finite differences for every differentiable input."""
    inputs = _tuple(inputs)
    wrt = _differentiable(inputs)
    if not wrt:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none of them have "
                         "requires_grad=True.")
    for i in wrt:
        if inputs[i].dtype.name != "float64":
            import warnings

            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating point. "
                          "gradcheck is only reliable in float64.", stacklevel=2)
    numerical = _numerical(func, inputs, wrt, eps)
    analytical = _analytical(func, inputs, wrt)
    if len(numerical[0]) != len(analytical[0]):  # a check that compares nothing must not pass
        raise GradcheckError(f"the function returned {len(analytical[0])} floating-point outputs with grad mode on "
                             f"but {len(numerical[0])} under no_grad")
    for k, i in enumerate(wrt):
        for m, (a, n) in enumerate(zip(analytical[k], numerical[k])):
            if not np.allclose(a, n, rtol=rtol, atol=atol, equal_nan=True):
                if not raise_exception:
                    return False
                raise GradcheckError(
                    f"Jacobian mismatch for output {m} with respect to input {i},\n"
                    f"numerical:{n}\nanalytical:{a}\n"
                )
    return True


def gradgradcheck(func: Callable, inputs: Any, grad_outputs: Any = None, *, eps: float = 1e-6,
                  atol: float = 1e-5, rtol: float = 1e-3, gen_non_contig_grad_outputs: bool = False,
                  raise_exception: bool = True, nondet_tol: float = 0.0, check_undefined_grad: bool = True,
                  check_grad_dtypes: bool = False, check_batched_grad: bool = False, fast_mode: bool = False,
                  masked: bool = False) -> bool:
    """gradcheck of the vector-Jacobian product: second derivatives against finite differences."""
    inputs = _tuple(inputs)
    wrt = _differentiable(inputs)
    outputs = _outputs(func, inputs)
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        grad_outputs = tuple(
            tensor(rng.standard_normal(o.shape), dtype=o.dtype, device=o.device, requires_grad=True) for o in outputs
        )
    grad_outputs = _tuple(grad_outputs)
    n_in = len(inputs)

    def vjp(*args: Any) -> tuple:
        # grad mode on even where gradcheck evaluates under no_grad (its finite differences): the first
        # derivative is a backward pass, so without a graph there would be no outputs to compare
        with enable_grad():
            ins, gos = args[:n_in], args[n_in:]
            outs = _outputs(func, ins)
            live = [(o, g) for o, g in zip(outs, gos) if o.requires_grad]
            grads = grad([o for o, _ in live], [ins[i] for i in wrt], [g for _, g in live], create_graph=True,
                         allow_unused=True)
            return tuple(g if g is not None else zeros_like(ins[i]) for g, i in zip(grads, wrt))

    return gradcheck(vjp, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol, raise_exception=raise_exception)
