"""Op test harness: declare an op once, get its forward, gradcheck and gradgradcheck tests on every backend.

In the spirit of Chainer's ``FunctionTestCase``: a test module lists :class:`Case` declarations (the op, its inputs,
its reference) and binds the tests that :func:`op_tests` generates from them::

    import numpy as np
    from op_harness import Case, Input, op_tests

    CASES = [
        # ``m`` is the library: the op is written against torch's API, so it runs on ember and on torch alike
        Case("exp", lambda m, x: m.exp(x), [Input((3, 4), -5, 5)], reference=np.exp),
        # no NumPy reference: torch is the reference (values, dtype, input gradients); skipped without torch
        Case("gelu", lambda m, x: m.nn.functional.gelu(x), [Input((3, 4))]),
    ]
    test_forward, test_gradcheck, test_gradgradcheck = op_tests(CASES)

A newcomer adds an op test by adding one ``Case`` to such a list; the CUDA twin, ``tests/cuda/test_device_ops.py``,
imports the same lists and binds ``op_tests(CASES, device="cuda")`` in the simulator's process (or on a GPU with
``EMBER_TEST_CUDA=1``), so the case runs on every backend. What the generated tests check:

* ``test_forward[<case>-<dtype>]``: for each shape set (the inputs' shapes, then ``Case.shapes``) and each layout
  (contiguous, a transposed view, a step-2 slice; ``LAYOUTS``; the last two in float64, or the case's last dtype
  where it has no float64: striding is the same in every dtype), the op's outputs on the backend against the
  reference: device, shape, dtype and values within the dtype's tolerance. A NumPy reference gets the same values,
  floats widened to float64, and its floating results are cast to the dtype under test (or ``Case.out_dtype``); a torch
  reference runs the op on torch tensors, and the input gradients of ``sum(out * w)`` must agree as well.
* ``test_gradcheck[<case>]`` and ``test_gradgradcheck[<case>]``: ``ember.autograd.gradcheck`` and ``gradgradcheck``
  in float64 on contiguous inputs (``Case.grad_inputs``, default ``inputs``). gradgradcheck costs a double backward
  per input element: keep those shapes tiny.

Integer dtypes in ``Case.dtypes`` draw integers from each input's ``[low, high]``; an ``Input`` with its own dtype
(targets, indices) keeps it whatever the dtype under test. ``op_tests(..., gradients=names)`` keeps the gradient
checks to those cases (the simulator's sample). This module imports nothing from ``conftest``: the CUDA folder has its
own, which shadows this folder's in the simulator's process; test modules holding declarations must not either.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Any, Callable, Collection, Mapping, NamedTuple, Sequence

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck

LAYOUTS = ("contiguous", "transposed", "strided")
# (rtol, atol) by dtype; a Case's ``tol`` overrides entries
TOLERANCE = {"float16": (2e-3, 2e-3), "float32": (2e-5, 2e-6), "float64": (1e-10, 1e-12)}

Shape = tuple[int, ...]
Values = np.ndarray | Callable[[np.random.Generator, Shape], np.ndarray]


@dataclass(frozen=True)
class Input:
    """One tensor argument of an op.

    ``values`` replaces the uniform draw from ``[low, high)``: an array (which fixes the shape) or a function of
    ``(rng, shape)``. ``dtype`` None follows the dtype under test. ``grad`` None: floating inputs require grad.
    """
    shape: Shape = (3, 4)
    low: float = -2.0
    high: float = 2.0
    dtype: str | None = None
    values: Values | None = None
    grad: bool | None = None


@dataclass(frozen=True)
class Case:
    """One op under test: ``op(lib, *tensors)`` on ``inputs``, against ``reference`` (NumPy) or torch (None)."""
    name: str
    op: Callable[..., Any]
    inputs: Sequence[Input]
    reference: Callable[..., Any] | None = None
    dtypes: tuple[str, ...] = ("float32", "float64")
    shapes: tuple[tuple[Shape, ...], ...] = ()  # more shape sets for the forward test, one shape per input
    layouts: tuple[str, ...] = LAYOUTS
    out_dtype: str | Callable[[str], str] | None = None  # NumPy reference: the result dtype (see _numpy_expected)
    tol: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    grad_inputs: Sequence[Input] | None = None  # the gradient checks' inputs, where they must differ (kinks)
    grad: bool = True
    gradgrad: bool = True
    grad_outputs: tuple[int, ...] | None = None  # the outputs gradcheck differentiates (None: all)
    gradgrad_outputs: tuple[int, ...] | None = None  # the outputs gradgradcheck differentiates twice (None: all)


class OpTests(NamedTuple):
    """The generated tests; None where no case qualifies (pytest collects no test for it)."""
    forward: Callable[..., None] | None
    gradcheck: Callable[..., None] | None
    gradgradcheck: Callable[..., None] | None


def op_tests(cases: Sequence[Case], device: str = "cpu", gradients: Collection[str] | None = None) -> OpTests:
    """The three parametrized tests of ``cases`` on ``device``, to bind as module-level ``test_*`` names.

    ``gradients`` names the cases that get the gradient checks (default: all), where a backend is too slow for all.
    """
    names = [case.name for case in cases]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    assert not duplicates, f"case names must be unique: {duplicates}"
    unknown = sorted(set(gradients or ()) - set(names))
    assert not unknown, f"no such cases: {unknown}"
    checked = [c for c in cases if c.grad and (gradients is None or c.name in gradients)]
    forward_params = [pytest.param(c, d, id=f"{c.name}-{d}") for c in cases for d in c.dtypes]
    grad_params = [pytest.param(c, id=c.name) for c in checked]
    gradgrad_params = [pytest.param(c, id=c.name) for c in checked if c.gradgrad]

    @pytest.mark.parametrize("case, dtype", forward_params)
    def forward(case: Case, dtype: str) -> None:
        check_forward(case, dtype, device)

    @pytest.mark.parametrize("case", grad_params)
    def first(case: Case) -> None:
        check_gradients(case, device, second_order=False)

    @pytest.mark.parametrize("case", gradgrad_params)
    def second(case: Case) -> None:
        check_gradients(case, device, second_order=True)

    return OpTests(forward if forward_params else None, first if grad_params else None,
                   second if gradgrad_params else None)


# ---- inputs ---------------------------------------------------------------------------------------------------------

def _seed(case: Case, shapes_index: int) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(f"{case.name}/{shapes_index}".encode()))


def _draw(spec: Input, shape: Shape, dtype: str, rng: np.random.Generator) -> np.ndarray:
    """The input's values for ``shape`` in its dtype (``dtype`` unless the input fixes its own)."""
    dtype = spec.dtype or dtype
    if isinstance(spec.values, np.ndarray):
        values = spec.values
    elif spec.values is not None:
        values = spec.values(rng, shape)
    elif dtype == "bool":
        values = rng.random(shape) < 0.5
    elif np.dtype(dtype).kind in "iu":
        values = rng.integers(int(np.ceil(spec.low)), int(np.floor(spec.high)) + 1, shape)
    else:
        values = rng.uniform(spec.low, spec.high, shape)
    return np.asarray(values).astype(dtype)


def _shape_sets(case: Case, specs: Sequence[Input]) -> list[tuple[Shape, ...]]:
    main = tuple(spec.values.shape if isinstance(spec.values, np.ndarray) else spec.shape for spec in specs)
    return [main, *case.shapes]


def _floating(array: np.ndarray) -> bool:
    return array.dtype.kind == "f"


def _wants_grad(spec: Input, array: np.ndarray) -> bool:
    return _floating(array) if spec.grad is None else spec.grad


def _laid_out(array: np.ndarray, layout: str, device: str) -> ember.Tensor:
    """``array`` as an ember tensor on ``device`` whose memory has ``layout`` (the same values in any layout)."""
    if layout == "transposed" and array.ndim >= 2:
        reverse = tuple(reversed(range(array.ndim)))
        return ember.tensor(np.ascontiguousarray(array.transpose(reverse)), device=device).permute(*reverse)
    if layout == "strided" and array.ndim >= 1:
        return ember.tensor(np.repeat(array, 2, axis=-1), device=device)[..., ::2]
    return ember.tensor(array, device=device)


def _changes_layout(layout: str, arrays: Sequence[np.ndarray]) -> bool:
    """False where the layout would only repeat the contiguous run (no input has the dims it needs)."""
    need = {"contiguous": 0, "transposed": 2, "strided": 1}[layout]
    return layout == "contiguous" or any(a.ndim >= need and a.size > 1 for a in arrays)


def _leaves(specs: Sequence[Input], arrays: Sequence[np.ndarray], layout: str, device: str,
            grad: bool) -> list[ember.Tensor]:
    tensors = []
    for spec, array in zip(specs, arrays):
        t = _laid_out(array, layout, device)
        tensors.append(t.detach().requires_grad_() if grad and _wants_grad(spec, array) else t)
    return tensors


def _tuple(x: Any) -> tuple:
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


# ---- forward --------------------------------------------------------------------------------------------------------

def _tolerance(case: Case, dtype: str) -> tuple[float, float]:
    return case.tol.get(dtype, TOLERANCE.get(dtype, (0.0, 0.0)))


def _assert_same(got: Any, want: np.ndarray, want_dtype: str, device: str, tol: tuple[float, float],
                 what: str) -> None:
    assert isinstance(got, ember.Tensor), f"{what}: {type(got).__name__}, not a Tensor"
    assert got.device.type == device, f"{what}: on {got.device}, not {device}"
    assert tuple(got.shape) == want.shape, f"{what}: shape {tuple(got.shape)} != {want.shape}"
    assert got.dtype.name == want_dtype, f"{what}: dtype {got.dtype.name} != {want_dtype}"
    values = got.detach().cpu().numpy()
    if _floating(want):
        np.testing.assert_allclose(values.astype(np.float64), want.astype(np.float64), rtol=tol[0], atol=tol[1],
                                   equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(values, want, err_msg=what)


def _numpy_expected(case: Case, arrays: Sequence[np.ndarray], dtype: str) -> list[tuple[np.ndarray, str]]:
    """The reference's outputs on float64 copies of the inputs, cast to the expected result dtypes: ``out_dtype``,
    else the dtype under test for floating outputs and the reference's own dtype for others (indices, predicates,
    NumPy's int64 sums and products of integers)."""
    wide = [a.astype(np.float64) if _floating(a) else a for a in arrays]
    with np.errstate(all="ignore"):
        outs = [np.asarray(o) for o in _tuple(case.reference(*wide))]
    if case.out_dtype is not None:
        fixed = case.out_dtype(dtype) if callable(case.out_dtype) else case.out_dtype
        return [(o.astype(fixed), fixed) for o in outs]
    return [(o.astype(dtype), dtype) if _floating(o) else (o, o.dtype.name) for o in outs]


def _weights(outs: Sequence[Any], rng: np.random.Generator) -> list[np.ndarray | None]:
    """A random upstream gradient per output that has a graph (None for the others)."""
    return [rng.standard_normal(tuple(o.shape)) if o.requires_grad else None for o in outs]


def _backward(lib: Any, outs: Sequence[Any], weights: Sequence[np.ndarray | None]) -> None:
    """The backward pass of ``sum(out * w)``, seeded with ``w`` directly (no reduction to launch)."""
    live = [(o, lib.tensor(w, dtype=o.dtype, device=o.device)) for o, w in zip(outs, weights) if w is not None]
    if live:
        lib.autograd.backward([o for o, _ in live], [w for _, w in live])


class _TorchRun(NamedTuple):
    outputs: list[tuple[np.ndarray, str]]
    weights: list[np.ndarray | None]
    grads: list[np.ndarray | None]


def _torch_expected(case: Case, specs: Sequence[Input], arrays: Sequence[np.ndarray]) -> _TorchRun:
    """The op on torch tensors of the same values: its outputs, and the input gradients of ``sum(out * w)``."""
    torch = pytest.importorskip("torch")
    tensors = [torch.tensor(a, requires_grad=_wants_grad(s, a)) for s, a in zip(specs, arrays)]
    outs = _tuple(case.op(torch, *tensors))
    weights = _weights(outs, np.random.default_rng(1))
    _backward(torch, outs, weights)
    outputs = [(o.detach().numpy(), str(o.dtype).split(".")[-1]) for o in outs]
    grads = [None if t.grad is None else t.grad.numpy() for t in tensors]
    return _TorchRun(outputs, weights, grads)


def _layout_dtype(case: Case) -> str:
    """The dtype the non-contiguous layouts run in: they test the loops' striding, the same in every dtype (and each
    dtype's strided loop is one more kernel to compile)."""
    return "float64" if "float64" in case.dtypes else case.dtypes[-1]


def check_forward(case: Case, dtype: str, device: str) -> None:
    """The op's outputs (and, against torch, input gradients) on every shape set and layout of ``case``."""
    tol = _tolerance(case, dtype)
    for index, shapes in enumerate(_shape_sets(case, case.inputs)):
        rng = _seed(case, index)
        arrays = [_draw(spec, shape, dtype, rng) for spec, shape in zip(case.inputs, shapes)]
        against_torch = case.reference is None
        run = _torch_expected(case, case.inputs, arrays) if against_torch else None
        expected = run.outputs if against_torch else _numpy_expected(case, arrays, dtype)
        for layout in case.layouts if dtype == _layout_dtype(case) else ("contiguous",):
            if not _changes_layout(layout, arrays):
                continue
            where = f"{case.name} {dtype} {shapes} {layout}"
            tensors = _leaves(case.inputs, arrays, layout, device, grad=against_torch)
            outs = _tuple(case.op(ember, *tensors))
            assert len(outs) == len(expected), f"{where}: {len(outs)} outputs, expected {len(expected)}"
            for k, (got, (want, want_dtype)) in enumerate(zip(outs, expected)):
                _assert_same(got, want, want_dtype, device, tol, f"{where}: output {k}")
            if against_torch:
                _backward(ember, outs, run.weights)
                for k, (t, want) in enumerate(zip(tensors, run.grads)):
                    if want is None:
                        assert t.grad is None or not t.grad.cpu().numpy().any(), f"{where}: grad of input {k}"
                    else:
                        assert t.grad is not None, f"{where}: no gradient for input {k}"
                        _assert_same(t.grad, want, str(want.dtype), device, tol, f"{where}: grad of input {k}")


# ---- gradients ------------------------------------------------------------------------------------------------------

def check_gradients(case: Case, device: str, second_order: bool) -> None:
    """gradcheck or gradgradcheck of the op in float64, on contiguous inputs (the forward test covers the layouts)."""
    specs = case.grad_inputs if case.grad_inputs is not None else case.inputs
    shapes = _shape_sets(case, specs)[0]
    rng = _seed(case, -1)
    arrays = [_draw(spec, shape, "float64", rng) for spec, shape in zip(specs, shapes)]
    check = gradgradcheck if second_order else gradcheck
    picked = case.gradgrad_outputs if second_order else case.grad_outputs

    def op(*tensors: ember.Tensor) -> Any:
        outs = case.op(ember, *tensors)
        return outs if picked is None else tuple(_tuple(outs)[k] for k in picked)

    assert check(op, _leaves(specs, arrays, "contiguous", device, grad=True)), case.name
