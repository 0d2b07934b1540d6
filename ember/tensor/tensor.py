"""The tensor core: the ``Tensor`` class's state, metadata and construction, below autograd and the ops.

A tensor is a NumPy (or device) array plus the fields autograd reads and writes: ``_grad_fn``, ``_output_nr``,
``_requires_grad``, ``_grad``, the leaf's ``_accumulator``, the storage's shared ``_version`` counter and the view
links ``_base``/``_view_fn``. Autograd imports this module at its top (it makes and inspects tensors); this module
imports nothing of autograd, so the two never meet in a cycle. The methods that reach above the core are bound
onto the class from above, by ``methods.py``: the ops, the gradient hooks and ``backward``
(``autograd_methods.py``), ``Tensor(...)`` and ``type()`` (``legacy_types.py``).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .._grad_state import INFERENCE_BLOCKS as _INFERENCE_BLOCKS, state as _modes
from .._user_warnings import warn_user
from ..kernels.common.layout import root_array
from . import dtypes
from .device import CPU, array_device, as_device, place
from .memory_format import is_contiguous_as
from .printing import tensor_repr
from .shared_memory import is_shared_array, share_arrays


class _Version:
    """One counter per storage, shared by all its views; in-place ops bump it."""

    __slots__ = ("value",)
    inference = False  # whether the storage's tensors are inference tensors

    def __init__(self) -> None:
        self.value = 0


class _InferenceVersion(_Version):
    """The counter of a storage made in ``inference_mode``: its tensors are inference tensors, which torch lets
    no one change in place outside inference mode."""

    __slots__ = ("_count",)
    inference = True

    @property
    def value(self) -> int:
        return self._count

    @value.setter
    def value(self, count: int) -> None:
        if not _modes.inference:
            raise RuntimeError(_INFERENCE_INPLACE)
        self._count = count


_INFERENCE_INPLACE = (
    "Inplace update to inference tensor outside InferenceMode is not allowed.You can make a clone to get a normal "
    "tensor before doing inplace update.See https://github.com/pytorch/rfcs/pull/17 for more details."
)


_NON_LEAF_GRAD = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute won't be "
    "populated during autograd.backward(). If you indeed want the .grad field to be populated for a non-leaf "
    "Tensor, use .retain_grad() on the non-leaf Tensor. If you access the non-leaf Tensor by mistake, make sure you "
    "access the leaf Tensor instead. See github.com/pytorch/pytorch/pull/30531 for more information."
)


class Tensor:
    """A multi-dimensional array with PyTorch's API, on NumPy storage (CPU)."""

    __slots__ = (
        "_array", "_version", "_requires_grad", "_grad_fn", "_output_nr", "_grad", "_accumulator",
        "_retains_grad", "_base", "_view_fn", "__weakref__", "__dict__",
    )
    __array_priority__ = 1000  # NumPy defers to Tensor's reflected operators

    @classmethod
    def _make(cls, array: np.ndarray, requires_grad: bool = False, version: _Version | None = None,
              base: "Tensor | None" = None) -> "Tensor":
        """Wrap an array without copying (the storage is shared with ``array``)."""
        t = object.__new__(cls)
        # NumPy ufuncs return scalars for 0-d inputs; a tensor always holds a real (0-d) array
        t._array = array if type(array) is np.ndarray or hasattr(array, "__ember_device_array__") else np.asarray(array)
        t._version = version if version is not None else (
            _InferenceVersion() if _INFERENCE_BLOCKS[0] and _modes.inference else _Version())
        t._requires_grad = requires_grad
        t._grad_fn = None
        t._output_nr = 0
        t._grad = None
        t._accumulator = None
        t._retains_grad = False
        t._base = base
        t._view_fn = None
        return t

    def _alias(self) -> "Tensor":
        """A new tensor object over the same storage and version counter."""
        return Tensor._make(self._array, version=self._version, base=self)

    # -- metadata -----------------------------------------------------------
    @property
    def shape(self) -> "Size":
        return Size(self._array.shape)

    def size(self, dim: int | None = None) -> Any:
        """The shape, or the length of one dimension."""
        if dim is None:
            return Size(self._array.shape)
        return self._array.shape[_wrap_dim(dim, self._array.ndim, "size")]

    def dim(self) -> int:
        return self._array.ndim

    @property
    def ndim(self) -> int:
        return self._array.ndim

    def ndimension(self) -> int:
        return self._array.ndim

    def numel(self) -> int:
        return int(self._array.size)

    def nelement(self) -> int:
        return int(self._array.size)

    @property
    def dtype(self) -> dtypes.dtype:
        return dtypes._BY_NP[self._array.dtype]

    @property
    def device(self):
        return CPU if type(self._array) is np.ndarray else array_device(self._array)

    @property
    def is_cuda(self) -> bool:
        return type(self._array) is not np.ndarray

    @property
    def is_cpu(self) -> bool:
        return type(self._array) is np.ndarray

    def get_device(self) -> int:
        """-1 on the CPU, else the CUDA device index."""
        return -1 if type(self._array) is np.ndarray else self._array.device_index

    def is_floating_point(self) -> bool:
        return self.dtype.is_floating_point

    def is_complex(self) -> bool:
        return False

    def element_size(self) -> int:
        return self._array.itemsize

    def stride(self, dim: int | None = None) -> Any:
        """Strides in elements, as torch reports them."""
        if type(self._array) is np.ndarray:
            item = self._array.itemsize
            strides = tuple(s // item for s in self._array.strides)
        else:
            strides = self._array.strides  # device storage keeps element strides
        if dim is None:
            return strides
        return strides[_wrap_dim(dim, self._array.ndim, "stride")]

    def storage_offset(self) -> int:
        if type(self._array) is not np.ndarray:
            return self._array.offset
        base = root_array(self._array)
        return (self._array.__array_interface__["data"][0] - base.__array_interface__["data"][0]) // self._array.itemsize

    def data_ptr(self) -> int:
        if type(self._array) is not np.ndarray:
            return self._array.data_ptr()
        return self._array.__array_interface__["data"][0]

    def is_contiguous(self, memory_format: Any = None) -> bool:
        """C-contiguity in torch's sense (size-1 dims may have any stride)."""
        return is_contiguous_as(self._array, memory_format)

    # -- autograd state ----------------------------------------------------------
    @property
    def grad(self) -> "Tensor | None":
        """The gradient that backward accumulated into this tensor (None until then). Reading it on a non-leaf
        that does not retain its gradient warns, as torch does: backward never fills it."""
        if self._grad is None and self._grad_fn is not None and not self._retains_grad:
            warn_user(_NON_LEAF_GRAD)
        return self._grad

    @grad.setter
    def grad(self, value: "Tensor | None") -> None:
        if value is not None:
            _check_assigned_grad(self, value)
        self._grad = value

    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self.requires_grad_(value)

    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        """Start (or stop) recording ops on this leaf tensor."""
        if self._grad_fn is not None:
            if not requires_grad:
                raise RuntimeError(
                    "you can only change requires_grad flags of leaf variables. If you want to use a computed "
                    "variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach()."
                )
            return self
        if requires_grad and not self.dtype.is_floating_point:
            raise RuntimeError("only Tensors of floating point and complex dtype can require gradients")
        if requires_grad and self._version.inference and not _modes.inference:
            raise RuntimeError("Setting requires_grad=True on inference tensor outside InferenceMode is not allowed.")
        self._requires_grad = bool(requires_grad)
        return self

    @property
    def grad_fn(self):
        return self._grad_fn

    @property
    def is_leaf(self) -> bool:
        return self._grad_fn is None

    @property
    def retains_grad(self) -> bool:
        return self._retains_grad

    @property
    def output_nr(self) -> int:
        return self._output_nr

    @property
    def _version_value(self) -> int:
        return self._version.value

    def is_inference(self) -> bool:
        """Whether this is an inference tensor: made in ``inference_mode`` (or a view of one)."""
        return self._version.inference

    def detach(self) -> "Tensor":
        """A tensor sharing storage (and version counter) that is cut from the graph."""
        return Tensor._make(self._array, version=self._version, base=self)

    def detach_(self) -> "Tensor":
        """Cut this tensor from the graph in place."""
        self._grad_fn = None
        self._requires_grad = False
        return self

    @property
    def data(self) -> "Tensor":
        """A detached tensor over the same storage whose changes autograd does not track."""
        return Tensor._make(self._array)

    @data.setter
    def data(self, value: "Tensor") -> None:
        if not isinstance(value, Tensor):
            raise TypeError(f"data must be a Tensor, got {type(value).__name__}")
        self._array = value._array

    # -- conversion --------------------------------------------------------------
    def numpy(self, *, force: bool = False) -> np.ndarray:
        """The NumPy array sharing this tensor's memory. Refused, as in torch, for a CUDA tensor (TypeError) and,
        in grad mode, for one that requires grad (RuntimeError); ``force=True`` is ``t.detach().cpu().numpy()``
        (a host copy of a CUDA tensor, the shared array of a CPU one)."""
        array = self._array
        if type(array) is not np.ndarray:
            if force:
                return array.to_numpy()
            raise TypeError(f"can't convert {self.device} device type tensor to numpy. Use Tensor.cpu() to copy "
                            "the tensor to host memory first.")
        if self._requires_grad and not force and _modes.enabled:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.")
        return array

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        """NumPy's conversion, by NumPy 2's ``copy`` rules: ``np.asarray(t)`` shares this tensor's memory,
        ``np.array(t)`` copies, ``copy=False`` raises ValueError where sharing is impossible (a CUDA tensor,
        another dtype); otherwise refused as ``numpy()`` refuses."""
        if dtype is not None:
            dtype = np.dtype(dtype)
        shared = type(self._array) is np.ndarray and (dtype is None or dtype == self._array.dtype)
        if copy is False and not shared:
            raise ValueError(f"Unable to avoid copy while creating an array from a {self.device} tensor of dtype "
                             f"{self.dtype} as requested (copy=False).")
        array = self.numpy()
        if not shared:  # another dtype (numpy() refused a CUDA tensor)
            return array.astype(dtype)
        return array.copy() if copy else array

    def __array_wrap__(self, array: np.ndarray, context: Any = None, return_scalar: bool = False) -> "Tensor":
        """A NumPy ufunc's result on tensors comes back a tensor (``np.exp(t)``, ``np.add(a, t)``), bool results
        as uint8 and 0-d results as 0-d tensors, as torch's."""
        if array.dtype == np.bool_:
            array = array.astype(np.uint8)
        dtypes.from_numpy_dtype(array.dtype)
        return Tensor._make(array)

    def item(self) -> Any:
        """The value of a one-element tensor as a Python number."""
        if self._array.size != 1:
            raise RuntimeError(
                f"a Tensor with {self._array.size} elements cannot be converted to Scalar"
            )
        return self._array.reshape(()).item()

    def tolist(self) -> Any:
        return self._array.tolist()

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __bool__(self) -> bool:
        if self._array.size != 1:
            raise RuntimeError(
                "Boolean value of Tensor with more than one value is ambiguous"
                if self._array.size else "Boolean value of Tensor with no values is ambiguous"
            )
        return bool(self.item())

    def __index__(self) -> int:
        if self.dtype.is_floating_point or self._array.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __len__(self) -> int:
        if self._array.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._array.shape[0]

    def __iter__(self):
        if self._array.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        return tensor_repr(self)

    def __str__(self) -> str:
        return self.__repr__()

    def __format__(self, spec: str) -> str:
        if self._array.ndim == 0 and spec:
            return self.item().__format__(spec)
        return object.__format__(self, spec) if spec else self.__repr__()

    def __deepcopy__(self, memo: dict) -> "Tensor":
        if not self.is_leaf:
            raise RuntimeError(
                "Only Tensors created explicitly by the user (graph leaves) support the deepcopy protocol at the moment."
            )
        t = Tensor._make(self._array.copy(), requires_grad=self._requires_grad)
        if self.grad is not None:
            t.grad = self.grad.__deepcopy__(memo)
        memo[id(self)] = t
        return t

    def __reduce_ex__(self, protocol: int):
        if type(self._array) is not np.ndarray:
            return (_rebuild_tensor, (self._array.to_numpy(), self._requires_grad, str(self.device)))
        return (_rebuild_tensor, (self._array.copy(), self._requires_grad))

    def share_memory_(self) -> "Tensor":
        """Move the storage into shared memory, in place (a no-op when it is there already, and for CUDA tensors),
        so that tensors sent to other processes share it rather than copy it; returns ``self``.

        torch moves the storage object, so every view follows. ember's views are NumPy views of the old memory:
        this tensor and the tensors it is a view of (``_base``) are re-pointed at the shared copy; a view made
        earlier joins the same copy when it is itself shared or sent, and until then sees the old memory (as
        does a NumPy array taken with ``numpy()``). Share first, then take views."""
        if type(self._array) is np.ndarray and not is_shared_array(self._array):
            _move_to_shared(self)
        return self

    def is_shared(self) -> bool:
        """Whether the storage is in shared memory (always, for a CUDA tensor: other processes reach it by IPC)."""
        return type(self._array) is not np.ndarray or is_shared_array(self._array)


def _move_to_shared(t: Tensor) -> None:
    """Re-point ``t`` and the tensors along its ``_base`` links that view the same storage at a shared copy."""
    root = root_array(t._array)
    chain = []
    while t is not None and type(t._array) is np.ndarray and root_array(t._array) is root:
        chain.append(t)
        t = t._base
    arrays = list({id(link._array): link._array for link in chain}.values())
    moved = dict(zip(map(id, arrays), share_arrays(arrays)))
    for link in chain:
        link._array = moved[id(link._array)]


def _rebuild_tensor(array: np.ndarray, requires_grad: bool, device: str = "cpu") -> Tensor:
    return Tensor._make(place(array, as_device(device)), requires_grad=requires_grad)


class Size(tuple):
    """``torch.Size``: a tuple of ints that prints as ``ember.Size([...])``."""

    def __repr__(self) -> str:
        return f"ember.Size({list(self)})"

    def numel(self) -> int:
        n = 1
        for d in self:
            n *= d
        return n

    def __getitem__(self, item: Any) -> Any:
        result = tuple.__getitem__(self, item)
        return Size(result) if isinstance(item, slice) else result

    def __add__(self, other: Any) -> "Size":
        return Size(tuple(self) + tuple(other))


def _wrap_dim(dim: int, ndim: int, op: str = "") -> int:
    """Turn a possibly negative dim into an index, with torch's IndexError when out of range."""
    if not isinstance(dim, (int, np.integer)) or isinstance(dim, bool):
        raise TypeError(f"{op}(): argument 'dim' must be int, not {type(dim).__name__}")
    rank = max(ndim, 1)
    if dim < -rank or dim >= rank:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-rank}, {rank - 1}], but got {dim})"
        )
    return int(dim) % rank if ndim else 0


def _check_assigned_grad(t: Tensor, grad: Any) -> None:
    """torch's checks on ``t.grad = grad``: a tensor of ``t``'s dtype and size."""
    if not isinstance(grad, Tensor):
        raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of type {type(grad).__name__}")
    if grad.dtype is not t.dtype:
        raise RuntimeError(
            f"attempting to assign a gradient with dtype '{dtypes.CPP_TYPE_NAMES[grad.dtype.name]}' to a tensor with "
            f"grad_dtype '{dtypes.SCALAR_TYPE_NAMES[t.dtype.name]}'. The gradient must match the tensor's grad_dtype "
            "(defaults to the tensor's dtype)."
        )
    if grad.shape != t.shape:
        raise RuntimeError(f"attempting to assign a gradient of size '{list(grad.shape)}' to a tensor of size "
                           f"'{list(t.shape)}'. Please ensure that the gradient and the tensor are the same size")


def is_tensor(obj: Any) -> bool:
    """Whether ``obj`` is an ember Tensor."""
    return isinstance(obj, Tensor)


def _check_inplace(t: Tensor, op: str) -> None:
    """torch's rules: an inference tensor changes in place only in inference mode; a leaf that requires grad (or a
    view of one) cannot change in place in grad mode."""
    if t._version.inference and not _modes.inference:
        raise RuntimeError(_INFERENCE_INPLACE)
    if not _modes.enabled:
        return
    if t._requires_grad and t._grad_fn is None:
        raise RuntimeError(f"a leaf Variable that requires grad is being used in an in-place operation. ({op})")
    base = t._base
    if base is not None and t._view_fn is not None and base._requires_grad and base._grad_fn is None:
        raise RuntimeError(
            f"a view of a leaf Variable that requires grad is being used in an in-place operation. ({op})"
        )


def _check_no_internal_overlap(t: Tensor) -> None:
    """torch's refusal to write into a tensor whose elements share memory (an expanded view)."""
    if t._array.size and any(s == 0 and n > 1 for s, n in zip(t._array.strides, t._array.shape)):
        raise RuntimeError(
            "unsupported operation: more than one element of the written-to tensor refers to a single memory "
            "location. Please clone() the tensor before performing the operation."
        )


__all__ = ["Tensor", "Size", "is_tensor", "as_device"]
