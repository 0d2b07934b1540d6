"""L-BFGS with an optional strong-Wolfe line search.

The algorithm works on one flat vector of all parameters, so it runs on NumPy
arrays: dot products and axpy updates are BLAS/ufunc calls, and the scalars stay
NumPy scalars of the parameters' dtype, which round the way torch's 0-d tensors
do. The state it keeps between steps (``d``, ``old_dirs``, ``ro``, ...) is
stored as Tensors under torch's keys so ``state_dict()`` looks the same.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable

import numpy as np

from ..autograd.grad_mode import no_grad
from ..tensor.tensor import Tensor
from ._state import to_scalar
from ._validate import check_lr
from .optimizer import Optimizer, run_closure

__all__ = ["LBFGS"]


def _cubic_interpolate(x1, f1, g1, x2, f2, g2, bounds=None):
    """Minimiser of the cubic through two points with slopes, clamped to ``bounds`` (the interval by default)."""
    if bounds is not None:
        lo, hi = bounds
    else:
        lo, hi = (x1, x2) if x1 <= x2 else (x2, x1)
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 ** 2 - g1 * g2
    if d2_square >= 0:
        d2 = np.sqrt(d2_square)
        if x1 <= x2:
            min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
        else:
            min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
        return min(max(min_pos, lo), hi)
    return (lo + hi) / 2.0


def _strong_wolfe(obj_func, x, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9, max_ls=25):
    """Step length satisfying the strong Wolfe conditions: bracketing phase, then zoom by cubic interpolation.

    Returns ``(f_new, g_new, t, evaluations)``.
    """
    d_norm = np.abs(d).max()
    g = g.copy()
    f_new, g_new = obj_func(x, t, d)
    evals = 1
    gtd_new = g_new.dot(d)
    t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
    done = False
    ls_iter = 0
    bracket = bracket_f = bracket_g = bracket_gtd = None
    # bracketing: grow the step until the interval [t_prev, t] holds a point that satisfies the conditions
    while ls_iter < max_ls:
        if f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev):
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new.copy()], [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, bracket_f, bracket_g = [t], [f_new], [g_new]
            done = True
            break
        if gtd_new >= 0:
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new.copy()], [gtd_prev, gtd_new]
            break
        min_step = t + 0.01 * (t - t_prev)
        max_step = t * 10
        tmp = t
        t = _cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, bounds=(min_step, max_step))
        t_prev, f_prev, g_prev, gtd_prev = tmp, f_new, g_new.copy(), gtd_new
        f_new, g_new = obj_func(x, t, d)
        evals += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1
    if ls_iter == max_ls:
        bracket, bracket_f, bracket_g = [0, t], [f, f_new], [g, g_new]

    # zoom: shrink the bracket until a point satisfies the conditions or the interval is too small
    insuf_progress = False
    low, high = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = _cubic_interpolate(bracket[0], bracket_f[0], bracket_gtd[0], bracket[1], bracket_f[1], bracket_gtd[1])
        # keep the trial point away from the bracket ends (a safeguard against stalling)
        eps = 0.1 * (max(bracket) - min(bracket))
        if min(max(bracket) - t, t - min(bracket)) < eps:
            if insuf_progress or t >= max(bracket) or t <= min(bracket):
                t = max(bracket) - eps if abs(t - max(bracket)) < abs(t - min(bracket)) else min(bracket) + eps
                insuf_progress = False
            else:
                insuf_progress = True
        else:
            insuf_progress = False
        f_new, g_new = obj_func(x, t, d)
        evals += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1
        if f_new > (f + c1 * t * gtd) or f_new >= bracket_f[low]:
            bracket[high], bracket_f[high] = t, f_new
            bracket_g[high], bracket_gtd[high] = g_new.copy(), gtd_new
            low, high = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high] - bracket[low]) >= 0:
                bracket[high], bracket_f[high] = bracket[low], bracket_f[low]
                bracket_g[high], bracket_gtd[high] = bracket_g[low], bracket_gtd[low]
            bracket[low], bracket_f[low] = t, f_new
            bracket_g[low], bracket_gtd[low] = g_new.copy(), gtd_new
    return bracket_f[low], bracket_g[low], bracket[low], evals


def _as_state(value: Any) -> Any:
    """NumPy arrays/scalars -> Tensors (recursively through lists) for storage in ``state``."""
    if isinstance(value, list):
        return [_as_state(v) for v in value]
    if isinstance(value, (np.ndarray, np.generic)):
        return Tensor._make(np.asarray(value))
    return value


def _from_state(value: Any) -> Any:
    """The inverse of ``_as_state``: 0-d tensors become NumPy scalars, others their arrays."""
    if isinstance(value, list):
        return [_from_state(v) for v in value]
    if isinstance(value, Tensor):
        a = value._array
        return a[()] if a.ndim == 0 else a
    return value


class LBFGS(Optimizer):
    """torch.optim.LBFGS: one parameter group; ``step(closure)`` runs up to ``max_iter`` iterations."""


    def __init__(self, params: Iterable[Any], lr: float = 1, max_iter: int = 20, max_eval: int | None = None,
                 tolerance_grad: float = 1e-7, tolerance_change: float = 1e-9, history_size: int = 100,
                 line_search_fn: str | None = None) -> None:
        check_lr(lr)
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = dict(lr=lr, max_iter=max_iter, max_eval=max_eval, tolerance_grad=tolerance_grad,
                        tolerance_change=tolerance_change, history_size=history_size, line_search_fn=line_search_fn)
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    # -- flat views of all parameters ---------------------------------------------------------
    def _gather_flat_grad(self) -> np.ndarray:
        parts = [np.zeros(p._array.size, p._array.dtype) if p.grad is None else p.grad._array.reshape(-1)
                 for p in self._params]
        return np.concatenate(parts)

    def _add_grad(self, step_size: Any, update: np.ndarray) -> None:
        offset = 0
        for p in self._params:
            a = p._array
            n = a.size
            a += (step_size * update[offset:offset + n]).reshape(a.shape).astype(a.dtype, copy=False)
            p._version.value += 1
            offset += n

    def _clone_params(self) -> list[np.ndarray]:
        return [p._array.copy() for p in self._params]

    def _set_params(self, arrays: list[np.ndarray]) -> None:
        for p, a in zip(self._params, arrays):
            p._array[...] = a
            p._version.value += 1

    def _directional_evaluate(self, closure: Callable, x: list[np.ndarray], t: Any, d: np.ndarray):
        self._add_grad(t, d)
        loss = float(closure())
        flat_grad = self._gather_flat_grad()
        self._set_params(x)
        return loss, flat_grad

    def step(self, closure: Callable[[], Any]) -> Any:  # type: ignore[override]
        """Run L-BFGS iterations on ``closure`` (which must recompute the loss and its gradients)."""
        with no_grad():
            return self._step(closure)

    def _step(self, closure: Callable[[], Any]) -> Any:
        group = self.param_groups[0]
        lr = to_scalar(group["lr"])
        max_iter, max_eval = group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        line_search_fn, history_size = group["line_search_fn"], group["history_size"]

        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        orig_loss = run_closure(closure)
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._gather_flat_grad()
        if np.abs(flat_grad).max() <= tolerance_grad:
            return orig_loss

        d, t = _from_state(state.get("d")), _from_state(state.get("t"))
        old_dirs, old_stps = _from_state(state.get("old_dirs")), _from_state(state.get("old_stps"))
        ro, H_diag = _from_state(state.get("ro")), _from_state(state.get("H_diag"))
        prev_flat_grad, prev_loss = _from_state(state.get("prev_flat_grad")), state.get("prev_loss")
        al = _from_state(state.get("al"))

        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            # direction: steepest descent first, then the two-loop recursion over the curvature history
            if state["n_iter"] == 1:
                d = -flat_grad
                old_dirs, old_stps, ro = [], [], []
                H_diag = 1
            else:
                y = flat_grad - prev_flat_grad
                s = d * t
                ys = y.dot(s)
                if ys > 1e-10:
                    if len(old_dirs) == history_size:
                        old_dirs.pop(0)
                        old_stps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    H_diag = ys / y.dot(y)
                num_old = len(old_dirs)
                if al is None:
                    al = [None] * history_size
                q = -flat_grad
                for i in range(num_old - 1, -1, -1):
                    al[i] = old_stps[i].dot(q) * ro[i]
                    q -= al[i] * old_dirs[i]
                d = r = q * H_diag
                for i in range(num_old):
                    be_i = old_dirs[i].dot(r) * ro[i]
                    r += (al[i] - be_i) * old_stps[i]

            if prev_flat_grad is None:
                prev_flat_grad = flat_grad.copy()
            else:
                prev_flat_grad[...] = flat_grad
            prev_loss = loss

            # step length
            t = min(1.0, 1.0 / np.abs(flat_grad).sum()) * lr if state["n_iter"] == 1 else lr
            gtd = flat_grad.dot(d)
            if gtd > -tolerance_change:
                break

            evals = 0
            if line_search_fn is not None:
                if line_search_fn != "strong_wolfe":
                    raise RuntimeError("only 'strong_wolfe' is supported")
                x_init = self._clone_params()

                def obj_func(x, t, d):
                    return self._directional_evaluate(closure, x, t, d)

                loss, flat_grad, t, evals = _strong_wolfe(obj_func, x_init, t, d, loss, flat_grad, gtd,
                                                          max_ls=max_eval - current_evals)
                self._add_grad(t, d)
                opt_cond = np.abs(flat_grad).max() <= tolerance_grad
            else:
                self._add_grad(t, d)
                if n_iter != max_iter:
                    loss = float(run_closure(closure))
                    flat_grad = self._gather_flat_grad()
                    opt_cond = np.abs(flat_grad).max() <= tolerance_grad
                    evals = 1
            current_evals += evals
            state["func_evals"] += evals

            # stopping conditions
            if n_iter == max_iter or current_evals >= max_eval or opt_cond:
                break
            if np.abs(d * t).max() <= tolerance_change:
                break
            if abs(loss - prev_loss) < tolerance_change:
                break

        state["d"], state["t"] = _as_state(d), _as_state(t)
        state["old_dirs"], state["old_stps"] = _as_state(old_dirs), _as_state(old_stps)
        state["ro"], state["H_diag"] = _as_state(ro), _as_state(H_diag)
        state["prev_flat_grad"], state["prev_loss"] = _as_state(prev_flat_grad), prev_loss
        if al is not None:
            state["al"] = _as_state(al)
        return orig_loss
