"""``ember.utils.safetensors``: safetensors.torch's functions for ember tensors and modules.

Files interchange with ``safetensors.torch`` both ways (``import ember as torch`` code that calls
``safetensors.torch`` can call this module instead). The rules are the package's: a file holds a dict of str to
dense, contiguous tensors that share no memory (``save_model`` drops the duplicate names of tied weights and
``load_model`` restores them), plus optional str metadata. Needs the safetensors package
(``pip install 'ember[safetensors]'``); the file format and copies are described in
``ember.serialization.safetensors_format``.
"""
from __future__ import annotations

import os
from typing import Any, Iterable

from ..nn.modules.module import Module
from ..serialization import safetensors_format as _format
from ..serialization.placement import placement
from ..tensor.tensor import Tensor

SafeSlice = _format.SafeSlice

_FRAMEWORKS = ("pt", "torch", "ember")
_NO_COMPLETE_NAME = (
    "Error while trying to find names to remove to save state dict, but found no suitable name to keep for saving "
    "amongst: {group}. None is covering the entire storage.Refusing to save/load the model since you could be "
    "storing much more memory than needed. Please refer to https://huggingface.co/docs/safetensors/"
    "torch_shared_tensors for more information. Or open an issue."
)


def save(tensors: dict[str, Tensor], metadata: dict[str, str] | None = None) -> bytes:
    """The bytes of a safetensors file holding ``tensors`` (contiguous, sharing no memory) and ``metadata``."""
    return _format.to_bytes(tensors, metadata)


def save_file(tensors: dict[str, Tensor], filename: str | os.PathLike, metadata: dict[str, str] | None = None) -> None:
    """Save ``tensors`` (contiguous, sharing no memory) to ``filename``; the previous file survives a failed save."""
    _format.write(tensors, filename, metadata)


def load(data: bytes) -> dict[str, Tensor]:
    """The tensors of a safetensors file's bytes, on the CPU."""
    return _format.from_bytes(data)


def load_file(filename: str | os.PathLike, device: str | int | Any = "cpu", *,
              backend: str = "mmap") -> dict[str, Tensor]:
    """Every tensor of ``filename``, in file order, on ``device`` ("cpu", "cuda", "cuda:1", an index or a device)."""
    with _format.SafetensorsFile(filename, placement(device), backend=backend) as f:
        return f.get_tensors()


def safe_open(filename: str | os.PathLike, framework: str = "pt", device: str | int | Any = "cpu", *,
              backend: str = "mmap") -> _format.SafetensorsFile:
    """Open ``filename`` lazily: ``keys()``, ``metadata()``, ``get_tensor(name)`` and ``get_slice(name)[...]``
    read only what they are asked for. Use it in a ``with`` block (or let it be collected) to release the file.

    ``framework`` is "pt" (or "torch"/"ember"): tensors come back as ember tensors on ``device``.
    """
    if framework not in _FRAMEWORKS:
        raise ValueError(f"framework {framework} is invalid: ember.utils.safetensors returns ember tensors "
                         f"(framework one of {', '.join(map(repr, _FRAMEWORKS))}); use safetensors.safe_open "
                         "for other frameworks")
    return _format.SafetensorsFile(filename, placement(device), backend=backend)


def _duplicate_names(state_dict: dict[str, Tensor], preferred: Iterable[str] = ()) -> dict[str, list[str]]:
    """For each group of names whose tensors share memory, the name to keep (one covering the whole buffer, a
    preferred one first, else the first by name) -> the names to drop, as safetensors.torch chooses them."""
    preferred = set(preferred)
    to_remove = {}
    for group in _format.shared_groups(state_dict):
        if len(group) < 2:
            continue
        complete = [name for name in group if _format.covers_storage(state_dict[name])]
        if not complete:
            raise RuntimeError(_NO_COMPLETE_NAME.format(group=set(group)))
        keep = next((name for name in complete if name in preferred), complete[0])
        to_remove[keep] = [name for name in group if name != keep]
    return to_remove


def save_model(model: Module, filename: str | os.PathLike, metadata: dict[str, str] | None = None,
               force_contiguous: bool = True) -> None:
    """Save ``model.state_dict()`` with each group of shared tensors (tied weights) stored once; the metadata
    records, for each dropped name, the name kept (unless ``metadata`` already has that key).

    ``force_contiguous`` (the default, as safetensors 0.8) saves non-contiguous tensors as contiguous copies.
    """
    state_dict = model.state_dict()
    metadata = None if metadata is None else dict(metadata)
    for kept, names in _duplicate_names(state_dict).items():
        for name in names:
            metadata = {} if metadata is None else metadata
            metadata.setdefault(name, kept)
            del state_dict[name]
    if force_contiguous:
        state_dict = {name: t.contiguous() for name, t in state_dict.items()}
    try:
        save_file(state_dict, filename, metadata=metadata)
    except ValueError as e:
        raise ValueError(f"{e} Or use save_model(..., force_contiguous=True), read the docs for potential "
                         "caveats.") from None


def load_model(model: Module, filename: str | os.PathLike, strict: bool = True, device: str | int | Any = "cpu",
               *, backend: str = "mmap") -> tuple[list[str], list[str]]:
    """Load ``filename`` into ``model``, filling tied weights that ``save_model`` stored once.

    Returns ``(missing, unexpected)``: names of the model the file did not fill, and names in the file the model
    has no place for; with ``strict`` either is a RuntimeError listing them.
    """
    state_dict = load_file(filename, device, backend=backend)
    to_remove = _duplicate_names(model.state_dict(), preferred=state_dict.keys())
    missing, unexpected = model.load_state_dict(state_dict, strict=False)
    missing = set(missing)
    for name in (n for names in to_remove.values() for n in names):
        if name in missing:
            missing.remove(name)
        else:
            unexpected.append(name)
    if strict and (missing or unexpected):
        error = f"Error(s) in loading state_dict for {type(model).__name__}:"
        if missing:
            error += "\n    Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in sorted(missing))
        if unexpected:
            error += "\n    Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in sorted(unexpected))
        raise RuntimeError(error)
    return sorted(missing), unexpected


__all__ = ["save", "save_file", "load", "load_file", "safe_open", "save_model", "load_model", "SafeSlice"]
