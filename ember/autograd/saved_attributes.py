"""What a graph node saved, under torch's attribute names (``grad_fn._saved_self``, ``_raw_saved_self``, ...).

Tutorials read the tensors and values an op kept for backward through these attributes; each built-in node class
gets them as properties, from a layout that says where ember's op keeps each one: a tensor ``save_for_backward``
slot (an int; or a ``Slot`` with a transform, or shown only when the gradient of some input needs it, as torch
saves it), or a value read from the node (a ctx attribute name, or a function of the node). A tensor slot also
gets ``_raw_saved_<name>``, a ``SavedTensor`` whose ``register_hooks(pack, unpack)`` repacks that one tensor, as
torch's does. Tensors read after backward freed the graph raise torch's error; plain values stay readable, as in
torch.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..tensor import dtypes
from ..tensor.device import factory_device, place
from ..tensor.tensor import Tensor
from .node_names import is_builtin


class SavedTensor:
    """One tensor a node saved for backward (torch's ``torch._C._autograd.SavedTensor``)."""

    __slots__ = ("_node", "_slot")

    def __init__(self, node: Any, slot: int | None) -> None:
        self._node = node
        self._slot = slot  # None: the node holds no tensor here

    def unpack(self) -> Any:
        """The saved tensor, through its unpack hook when one is set."""
        return None if self._slot is None else self._node._read_saved(self._slot)

    def register_hooks(self, pack_hook: Callable[[Any], Any], unpack_hook: Callable[[Any], Any]) -> None:
        """Replace the saved tensor by ``pack_hook(tensor)`` now; later reads return ``unpack_hook(packed)``."""
        if not callable(pack_hook) or not callable(unpack_hook):
            raise TypeError("register_hooks(): incompatible function arguments: pack_hook and unpack_hook must "
                            f"be callables, got {type(pack_hook).__name__} and {type(unpack_hook).__name__}")
        if self._slot is None:
            raise RuntimeError("Calling register_hooks on a saved tensor with value None is forbidden")
        self._node._hook_saved(self._slot, pack_hook, unpack_hook)


def _tensor(value: Any) -> Tensor:
    """A saved number or raw array as ``torch.tensor(value)`` makes it: a copy on the default device, a Python
    number in the dtype it takes standing alone. (Made on the tensor core: ``function.py`` imports this module,
    and the creation ops sit above it.)"""
    dt = dtypes.scalar_dtype(value).np if type(value) in (bool, int, float) else None  # NumPy scalars keep theirs
    return Tensor._make(place(np.array(value, dt), factory_device(None)))


def _scalar_operand(node: Any, slot: int) -> Any:
    """A binary op's Python-number operand, as the 0-dim tensor torch saves for it (None if there is none)."""
    scalars = node.__dict__.get("scalars")
    number = scalars[slot] if scalars is not None and slot < len(scalars) else None
    return None if number is None else _tensor(number)


class Slot:
    """A saved-tensor slot, with a ``transform`` of what is read, and ``needed_for``: the inputs whose gradient
    uses it (torch saves it only when one of them requires grad; None: always)."""

    def __init__(self, index: int, transform: Callable | None = None, needed_for: tuple | None = None) -> None:
        self.index, self.transform, self.needed_for = index, transform, needed_for

    def kept(self, node: Any) -> bool:
        """Whether torch's node would hold this tensor."""
        if self.needed_for is None:
            return True
        flags = node.needs_input_grad
        return any(i < len(flags) and flags[i] for i in self.needed_for)

    def read(self, node: Any) -> Any:
        if not self.kept(node):
            return None
        t = node._read_saved(self.index)
        if t is None:
            return _scalar_operand(node, self.index)
        return self.transform(t) if self.transform is not None else t

    def raw(self, node: Any) -> SavedTensor:
        return SavedTensor(node, self.index if self.kept(node) else None)


def _value_property(source: str | Callable) -> property:
    if callable(source):
        return property(source)
    return property(lambda node: node.__dict__.get(source))


def _indices(node: Any) -> tuple:
    """An index's key as torch saves it: a tensor per indexed dim, None for a dim taken whole."""
    return tuple(_tensor(k) if not isinstance(k, slice) else None for k in node.key)


def _class_targets(target: Any) -> Any:
    """The class-index targets as the loss got them: its kernel keeps them as (N, S), and the scores as (N, C, S);
    (N,) and (N, C) when S is 1."""
    return _tensor(target.reshape(-1) if target.ndim == 2 and target.shape[1] == 1 else target)


def _conv_values(transposed: bool) -> dict:
    def per_dim(field: str) -> Callable:
        return lambda node: tuple(getattr(node.geo, field)[3 - node.geo.ndim:])

    return {"stride": per_dim("stride"), "padding": per_dim("padding"), "dilation": per_dim("dilation"),
            "groups": lambda node: node.geo.groups, "transposed": lambda node: transposed}


def _param(i: int) -> Callable:
    return lambda node: node.params[i]


_REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}  # torch's Reduction enum
_SIZES = {"self_sym_sizes": "input_shape"}
_DIM_KEEPDIM = {"dim": "dims", "keepdim": "keepdim"}
_ONE = lambda node: 1  # noqa: E731 - the alpha/beta of a node that scales nothing

# Layouts keyed by (Function class name, node name), or by the class name for every name it makes.
_LAYOUTS: dict[Any, dict] = {
    "Mul": {"self": Slot(0, needed_for=(1,)), "other": Slot(1, needed_for=(0,))},
    "Div": {"self": Slot(0, needed_for=(1,)), "other": 1},
    ("Pow", "PowBackward0"): {"self": 0, "exponent": lambda node: node.scalars[1]},
    ("Pow", "PowBackward1"): {"self": 0, "exponent": 1, "result": 2},
    ("Pow", "PowBackward2"): {"self": lambda node: node.scalars[0], "exponent": 1, "result": 2},
    "Square": {"self": 0, "exponent": lambda node: 2},
    ("Sum", "SumBackward0"): {"self_sym_sizes": "shape"},
    ("Sum", "SumBackward1"): {"self_sym_sizes": "shape", **_DIM_KEEPDIM},
    "MatMul": {"self": 0, "mat2": 1},
    ("_Linear", "AddmmBackward0"): {"mat1": 0, "mat2": Slot(1, lambda w: w.t()), "alpha": _ONE, "beta": _ONE},
    ("_Linear", "MmBackward0"): {"self": 0, "mat2": Slot(1, lambda w: w.t())},
    "_Conv": {"input": 0, "weight": 1, **_conv_values(False)},
    "_ConvTranspose": {"input": 0, "weight": 1, **_conv_values(True)},
    "_Softmax": {"result": 0, "dim": "dim"},
    "IndexGet": {"indices": _indices, "self_sym_sizes": "shape"},
    "_ClassNLL": {"self": Slot(0, lambda x: x.squeeze(-1) if x.ndim == 3 and x.shape[-1] == 1 else x),
                  "target": lambda node: _class_targets(node.spec[0]),
                  "ignore_index": lambda node: node.spec[2], "reduction": lambda node: _REDUCTIONS[node.reduction]},
    ("_Activation", "LeakyReluBackward0"): {"self": 0, "negative_slope": _param(0)},
    ("_Activation", "HardtanhBackward0"): {"self": 0, "min_val": _param(0), "max_val": _param(1)},
    ("_Activation", "SoftplusBackward0"): {"self": 0, "beta": _param(0), "threshold": _param(1)},
    ("_Activation", "EluBackward0"): {"self": 0, "alpha": _param(0), "scale": _param(1), "input_scale": _param(2)},
    ("_Activation", "GeluBackward0"): {
        "self": 0, "approximate": lambda node: "tanh" if node.activation == "gelu_tanh" else "none"},
    "_Activation": {"self": 0},
    "Extreme": {"self": 0, "result": 1},
    ("Prod", "ProdBackward0"): {"self": 0, "result": 1},
    ("Prod", "ProdBackward1"): {"self": 0, "result": 1, **_DIM_KEEPDIM},
    "Clamp": {"self": 0, "min": lambda node: node.bounds[0], "max": lambda node: node.bounds[1]},
    "Cat": {"dim": "dim"},
    "_StackCat": {"dim": "dim"},  # stack: the cat of the unsqueezed tensors (tensor/joins.py)
    ("View", "ViewBackward0"): _SIZES, ("View", "ExpandBackward0"): _SIZES,
    ("View", "SqueezeBackward0"): _SIZES, ("View", "SqueezeBackward1"): _SIZES,
    ("View", "SelectBackward0"): _SIZES, ("View", "SliceBackward0"): _SIZES,
}


def _base_layout(cls: type) -> dict:
    """The layout every elementwise op of a kind shares: unary ops keep their input or result, binary ops their
    operands (and result)."""
    kinds = {base.__name__ for base in cls.__mro__[1:]}
    if "_Unary" in kinds and (cls.uses_input or cls.uses_output):  # else, as torch's node, it keeps nothing
        return {"result": 1} if cls.uses_output else {"self": 0}
    if "_Binary" in kinds and cls.uses_inputs:
        return {"self": 0, "other": 1, **({"result": 2} if cls.uses_output else {})}
    return {}


def attributes_for(cls: type, node_name: str) -> dict[str, property]:
    """The ``_saved_*`` / ``_raw_saved_*`` properties of the nodes Function ``cls`` makes under ``node_name``."""
    if not is_builtin(cls):
        return {}
    layout = _LAYOUTS.get((cls.__name__, node_name))
    if layout is None:
        layout = _LAYOUTS.get(cls.__name__)
    if layout is None:
        layout = _base_layout(cls)
    attrs = {}
    for name, source in layout.items():
        if isinstance(source, (int, Slot)):
            slot = source if isinstance(source, Slot) else Slot(source)
            attrs["_saved_" + name] = property(slot.read)
            attrs["_raw_saved_" + name] = property(slot.raw)
        else:
            attrs["_saved_" + name] = _value_property(source)
    return attrs
