"""The globals torch's checkpoints name, and what each is in ember: the one table both directions read.

Saving writes torch's names (``torch._utils _rebuild_tensor_v2``, ``torch FloatStorage``, ``torch float32``...)
for ember's tensors, storages, dtypes, sizes and devices, so torch reads ember's files; loading resolves the same
names to ember's objects, so ember reads torch's. ``weights_only`` loads resolve nothing outside
``weights_only_globals()`` (torch's own allowlist, less what ember has no use for) and the user's safe globals.
"""
from __future__ import annotations

import _codecs
import collections
import importlib
from typing import Any

from ..nn.parameter import Parameter
from ..tensor import dtypes
from ..tensor.device import device
from ..tensor.legacy_types import CPU_TYPES, CUDA_TYPES
from ..tensor.tensor import Size, Tensor
from . import rebuild


class TorchName:
    """A global of torch's, by name: the pickler writes it where torch would write that global."""

    __slots__ = ("module", "name")

    def __init__(self, module: str, name: str) -> None:
        self.module, self.name = module, name

    def __repr__(self) -> str:
        return f"{self.module}.{self.name}"

    def __call__(self, *args: Any) -> Any:  # pickle's save_reduce requires a callable; the name is only written
        raise TypeError(f"{self!r} is the name ember.save writes for torch, not a function of ember's")


class StorageType:
    """What a typed storage class (``torch.FloatStorage``) means in a file: the dtype of the storage's elements."""

    def __init__(self, name: str, dtype_name: str) -> None:
        self.name, self.dtype_name = name, dtype_name

    def dtype(self) -> dtypes.dtype:
        found = getattr(dtypes, self.dtype_name, None)
        if not isinstance(found, dtypes.dtype):
            raise RuntimeError(f"ember.load: the file holds a tensor of dtype torch.{self.dtype_name}, which ember "
                               "does not have")
        return found

    def __repr__(self) -> str:
        return f"torch.{self.name}"


# torch's typed storage classes and the dtypes of their elements (UntypedStorage: bytes, typed by the rebuild call)
STORAGE_DTYPES = {
    "FloatStorage": "float32", "DoubleStorage": "float64", "HalfStorage": "float16", "BFloat16Storage": "bfloat16",
    "LongStorage": "int64", "IntStorage": "int32", "ShortStorage": "int16", "CharStorage": "int8",
    "ByteStorage": "uint8", "BoolStorage": "bool", "ComplexFloatStorage": "complex64",
    "ComplexDoubleStorage": "complex128", "QUInt8Storage": "quint8", "QInt8Storage": "qint8",
    "QInt32Storage": "qint32", "QUInt4x2Storage": "quint4x2", "QUInt2x4Storage": "quint2x4",
}
STORAGE_TYPES = {name: StorageType(name, dt) for name, dt in STORAGE_DTYPES.items()}
UNTYPED = StorageType("UntypedStorage", "uint8")
_STORAGE_OF_DTYPE = {dt: STORAGE_TYPES[name] for name, dt in STORAGE_DTYPES.items()}
# torch's dtype names: ember's own, and those a file may name that ember lacks (a value, or a storage's dtype)
TORCH_DTYPE_NAMES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64",
                     "bfloat16", "complex32", "complex64", "complex128", "uint16", "uint32", "uint64", "qint8",
                     "quint8", "qint32", "quint4x2", "quint2x4", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz",
                     "float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn_x2", "bits8", "bits16", "bits1x8",
                     "bits2x4", "bits4x2")

# what the pickler writes
REBUILD_TENSOR_V2 = TorchName("torch._utils", "_rebuild_tensor_v2")
REBUILD_PARAMETER = TorchName("torch._utils", "_rebuild_parameter")
SIZE = TorchName("torch", "Size")
DEVICE = TorchName("torch", "device")
_DTYPE_NAMES = {dt: TorchName("torch", dt.name) for dt in dtypes.ALL_DTYPES}
_STORAGE_NAMES = {dt: TorchName("torch", _STORAGE_OF_DTYPE[dt.name].name) for dt in dtypes.ALL_DTYPES}


def global_name(obj: Any) -> TorchName | None:
    """The torch global the pickler writes for ``obj`` (one of the names above, or an ember dtype), else None."""
    if type(obj) is TorchName:
        return obj
    if type(obj) is dtypes.dtype:
        return _DTYPE_NAMES[obj]
    return None


def storage_name(dt: dtypes.dtype) -> TorchName:
    return _STORAGE_NAMES[dt]


class _MissingDtype:
    """A torch dtype ember lacks, named in a file as a value: it loads, and says what it is if used."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"torch.{self.name} (a dtype ember does not have)"


def _dtype(name: str) -> Any:
    found = getattr(dtypes, name, None)
    return found if isinstance(found, dtypes.dtype) else _MissingDtype(name)


def _layout(name: str) -> str:
    """``torch.serialization._get_layout``: ember has strided tensors only, so a layout is its name."""
    return str(name)


def _globals(private: bool) -> dict[str, Any]:
    found: dict[str, Any] = {
        "collections.OrderedDict": collections.OrderedDict, "collections.Counter": collections.Counter,
        "builtins.set": set, "builtins.bytearray": rebuild.checked_bytearray, "builtins.complex": complex,
        "_codecs.encode": _codecs.encode,
        "torch.Size": Size, "torch.device": device, "torch.Tensor": Tensor, "torch.nn.parameter.Parameter": Parameter,
        "torch.storage.UntypedStorage": UNTYPED, "torch.storage.TypedStorage": UNTYPED,
        "torch.serialization._get_layout": _layout,
        "torch._utils._rebuild_tensor": rebuild.rebuild_tensor,
        "torch._utils._rebuild_tensor_v2": rebuild.rebuild_tensor_v2,
        "torch._utils._rebuild_tensor_v3": rebuild.rebuild_tensor_v3,
        "torch._utils._rebuild_parameter": rebuild.rebuild_parameter,
        "torch._utils._rebuild_parameter_with_state": rebuild.parameter_with_state(private),
        "torch._tensor._rebuild_from_type_v2": rebuild.from_type_v2(private),
        "torch._utils._rebuild_device_tensor_from_cpu_tensor": rebuild.rebuild_device_tensor_from_cpu_tensor,
        "torch._utils._rebuild_device_tensor_from_numpy": rebuild.rebuild_device_tensor_from_numpy,
        "torch._utils._rebuild_meta_tensor_no_storage": rebuild.unsupported("tensor on the meta device"),
        "torch._utils._rebuild_qtensor": rebuild.unsupported("quantized tensor"),
        "torch._utils._rebuild_sparse_tensor": rebuild.unsupported("sparse tensor"),
        "torch._utils._rebuild_nested_tensor": rebuild.unsupported("nested tensor"),
        "torch._utils._rebuild_wrapper_subclass": rebuild.unsupported("tensor subclass of torch's (wrapper)"),
    }
    for name in TORCH_DTYPE_NAMES:
        found[f"torch.{name}"] = _dtype(name)
    for name, storage in STORAGE_TYPES.items():
        found[f"torch.{name}"] = found[f"torch.cuda.{name}"] = storage
    for types, prefix in ((CPU_TYPES, "torch"), (CUDA_TYPES, "torch.cuda")):
        for name, cls in types.items():
            found[f"{prefix}.{name}"] = cls
    for quantization in ("per_tensor_affine", "per_channel_affine", "per_tensor_symmetric", "per_channel_symmetric",
                         "per_channel_affine_float_qparams"):
        found[f"torch.{quantization}"] = quantization
    return found


_WEIGHTS_ONLY = _globals(private=False)
_TRUSTED = _globals(private=True)
# what a weights-only load may call (REDUCE) or instantiate (NEWOBJ): functions and containers, never a class
# whose construction takes sizes (Tensor, the legacy types) or leaves an object half made
CALLABLE = {id(v) for k, v in _WEIGHTS_ONLY.items() if k.startswith(("torch._utils.", "torch._tensor."))} | {
    id(v) for v in (collections.OrderedDict, collections.Counter, set, rebuild.checked_bytearray, complex,
                    _codecs.encode, Size, device, _layout)}


def weights_only_globals() -> dict[str, Any]:
    """Every global a ``weights_only=True`` load resolves, by torch's name."""
    return _WEIGHTS_ONLY


def resolve_trusted(module: str, name: str) -> Any:
    """What a global of a trusted file (``weights_only=False``) is in ember: torch's data types through the table;
    another ``torch.*`` name (a module class, an optimizer) to ember's object of that name, found at the same path
    under ``ember`` or, failing that, in the nearest enclosing ember package (``torch.nn.modules.linear.Linear``
    is ``ember.nn.Linear``); anything else as pickle finds it."""
    known = _TRUSTED.get(f"{module}.{name}")
    if known is not None:
        return known
    if module != "torch" and not module.startswith("torch."):
        return None
    path = ["ember"] + module.split(".")[1:]
    while path:
        try:
            found = getattr(importlib.import_module(".".join(path)), name, None)
        except ImportError:
            found = None
        if found is not None:
            return found
        path.pop()
    raise AttributeError(f"ember.load: the file names torch's {module}.{name}, which ember does not have")
