"""torch's names for the graph nodes of ember's built-in ops.

A user's ``Function`` subclass ``Foo`` makes ``FooBackward`` nodes, as in torch. A built-in op's node takes the
name torch's node has for the same call (``MulBackward0``, ``AddmmBackward0``): by default its class name plus
``Backward0``; ``_STATIC`` renames a class whose name differs from torch's; ``_NAMERS`` pick the name from the
arguments of ``apply`` where one Function serves several torch ops. Where only the public function knows which
op it is, it calls a ``Function.named`` variant (``sum`` over dims, ``stack``, ``index_select``), or, for the
result of a composite op (``mean``, ``addmm``), renames the node with ``function.name_node``.
"""
from __future__ import annotations

from typing import Any, Callable

from .. import opcodes as op

# Built-in Functions whose node torch names otherwise than ``<ClassName>Backward0`` (keyed by class name).
_STATIC: dict[str, str] = {
    "IndexGet": "IndexBackward0", "_Conv": "ConvolutionBackward0", "_ConvTranspose": "ConvolutionBackward0",
    "_ClassNLL": "NllLossBackward0", "_BinaryCrossEntropy": "BinaryCrossEntropyBackward0",
    "_LogSigmoid": "LogSigmoidBackward0", "_CTC": "CtcLossBackward0", "Cast": "ToCopyBackward0",
    "ToDevice": "ToCopyBackward0", "Copy": "CloneBackward0", "CopyInto": "CopyBackwards",
    "CopySlices": "CopySlices", "Reshape": "UnsafeViewBackward0", "Square": "PowBackward0",
    "Log1p": "Log1PBackward0", "_Embedding": "EmbeddingBackward0", "ConstantPad": "ConstantPadNdBackward0",
    "_ChannelNorm": "NativeBatchNormBackward0", "_Dropout": "MulBackward0", "_Fold": "Col2ImBackward0",
    "_Unfold": "Im2ColBackward0", "Norm2": "LinalgVectorNormBackward0", "PNorm": "LinalgVectorNormBackward0",
    "Det": "LinalgDetBackward0", "Slogdet": "LinalgSlogdetBackward0", "Inv": "LinalgInvExBackward0",
    "Cholesky": "LinalgCholeskyExBackward0", "QR": "LinalgQrBackward0", "SVD": "LinalgSvdBackward0",
    "Eigh": "LinalgEighBackward0", "Solve": "LinalgSolveExBackward0", "Pinv": "LinalgPinvBackward0",
    "Lstsq": "LinalgLstsqBackward0", "SolveTriangular": "LinalgSolveTriangularBackward0",
    "IndexPut": "IndexPutBackward0",
    # torch's own Python Functions keep the custom-Function name (no suffix)
    "CheckpointFunction": "CheckpointFunctionBackward", "_SeeGradients": "BackwardHookFunctionBackward",
}

# The C++ nodes whose ``name()`` torch reports with their namespace.
QUALIFIED = {"AccumulateGrad": "torch::autograd::AccumulateGrad", "CopySlices": "torch::autograd::CopySlices",
             "CopyBackwards": "torch::autograd::CopyBackwards"}

# The node of each fused activation kernel: that of the torch op it implements (``gelu_tanh``: GeluBackward0).
_ACTIVATIONS = {a.name: "".join(word.capitalize() for word in a.torch_op.split("_")) + "Backward0"
                for a in op.ACTIVATION_OPS}


def _is_number(x: Any) -> bool:
    return getattr(x, "_array", None) is None


def _pow_name(base: Any, exponent: Any, *_: Any) -> str:
    """``x ** 2`` is PowBackward0, ``x ** y`` PowBackward1 and ``2 ** x`` PowBackward2."""
    return "PowBackward2" if _is_number(base) else ("PowBackward0" if _is_number(exponent) else "PowBackward1")


def _matmul_name(a: Any, b: Any, *_: Any) -> str:
    if a.ndim == 2 and b.ndim == 2:
        return "MmBackward0"
    if a.ndim == 3 and b.ndim == 3 and a.shape[0] == b.shape[0]:
        return "BmmBackward0"
    return "UnsafeViewBackward0"


def _linear_name(x: Any, weight: Any, bias: Any, *_: Any) -> str:
    """torch's linear is addmm (with a bias) or mm on a matrix; other ranks end in a view of the product."""
    if x.ndim == 2:
        return "AddmmBackward0" if bias is not None else "MmBackward0"
    return "ViewBackward0" if bias is not None or x.ndim == 1 else "UnsafeViewBackward0"


def _extreme_name(x: Any, code: int, dims: tuple, keepdim: bool, *_: Any) -> str:
    """``x.max()`` is MaxBackward1; amax/amin over dims are AmaxBackward0/AminBackward0."""
    if len(dims) == x.ndim and not keepdim:
        return "MaxBackward1" if code == op.R_MAX else "MinBackward1"
    return "AmaxBackward0" if code == op.R_MAX else "AminBackward0"


_NAMERS: dict[str, Callable[..., str]] = {
    "Pow": _pow_name,
    "Sub": lambda a, b, *_: "RsubBackward1" if _is_number(a) else "SubBackward0",
    "Clamp": lambda x, low, high, *_: "ClampBackward1" if _is_number(low) and _is_number(high) else "ClampBackward0",
    "MatMul": _matmul_name,
    "_Linear": _linear_name,
    "_Activation": lambda x, name, *_: _ACTIVATIONS[name],
    "_LinearActivation": lambda x, w, b, name, *_: _ACTIVATIONS[name],
    "_Softmax": lambda x, dim, log, *_: "LogSoftmaxBackward0" if log else "SoftmaxBackward0",
    # torch pools 1-d inputs as 2-d ones and squeezes the result
    "_MaxPool": lambda x, win, nd, *_: f"MaxPool{nd}DWithIndicesBackward0" if nd > 1 else "SqueezeBackward1",
    "_AvgPool": lambda x, win, nd, *_: f"AvgPool{nd}DBackward0" if nd > 1 else "SqueezeBackward1",
    "Lerp": lambda start, end, weight, *_: "LerpBackward0" if _is_number(weight) else "LerpBackward1",
    "_RowsNorm": lambda x, w, b, groups, k, s, *_: ("NativeLayerNormBackward0" if groups == 1 and s == 1
                                                     else "NativeGroupNormBackward0"),
    "Triangle": lambda x, diagonal, lower, *_: "TrilBackward0" if lower else "TriuBackward0",
    "ArgExtreme": lambda x, code, *_: "MaxBackward0" if code == op.A_MAX else "MinBackward0",
    "Extreme": _extreme_name,
    "Scan": lambda x, code, *_: {op.S_SUM: "CumsumBackward0", op.S_PROD: "CumprodBackward0",
                                          op.S_LOGSUMEXP: "LogcumsumexpBackward0"}.get(code, "ScanBackward0"),
    "Prod": lambda x, code, dims, keepdim, *_: ("ProdBackward0" if len(dims) == x.ndim and not keepdim
                                                    else "ProdBackward1"),
}


# Ops whose Python-number operand torch wraps in a tensor, so that its node lists it (as ``(None, 0)``).
_NUMBER_OPERANDS = {"Add", "Sub", "Mul", "Div"}


def lists_numbers(cls: type, node_name: str) -> bool:
    """Whether the nodes Function ``cls`` makes under ``node_name`` list a Python-number argument as an input in
    ``next_functions`` (``x * 2``: yes; ``2 - x``, torch's rsub of a number: no)."""
    return is_builtin(cls) and cls.__name__ in _NUMBER_OPERANDS and node_name != "RsubBackward1"


def is_builtin(cls: type) -> bool:
    """Whether ``cls`` is one of ember's own ops (named as torch's nodes) rather than a user's Function."""
    return cls.__module__.split(".", 1)[0] == "ember"


def default_name(cls: type) -> str:
    """The name of the nodes a Function makes when no per-call name applies."""
    name = cls.__name__
    if not is_builtin(cls):
        return name + "Backward"
    return _STATIC.get(name) or name.lstrip("_") + "Backward0"


def namer(cls: type) -> Callable[..., str] | None:
    """``f(*apply_args) -> node name`` for a built-in Function that serves several torch ops, else None."""
    return _NAMERS.get(cls.__name__) if is_builtin(cls) else None
