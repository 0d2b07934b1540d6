"""``ember.save`` and ``ember.load``: torch's checkpoint files, both ways, and safetensors files by extension.

``save`` writes torch's zip format (``torch.load`` reads it, ``weights_only=True`` included) or, with
``_use_new_zipfile_serialization=False``, torch's pre-1.6 format. ``load`` reads both, files of ember's own earlier
format, and ``.safetensors`` files. Saving to a path is atomic (``atomic.write_atomic``). Loading is
``weights_only=True`` by default, as in torch: nothing the file names runs (``unpicklers.WeightsOnlyUnpickler``).
"""
from __future__ import annotations

import io
import os
import pickle
import struct
import zipfile
from typing import Any, BinaryIO, Callable

from . import ember_v1, safetensors_format, torch_legacy, torch_zip
from .atomic import write_atomic
from .files import CorruptFile, FileLike, file_name, is_path
from .pickler import DEFAULT_PICKLER, StorageTable, pickler_class
from .placement import Placement, placement
from .unpicklers import WeightsOnlyUnpickler, trusting_unpickler

DEFAULT_PROTOCOL = 2
_FORMATS = ("torch", "safetensors")


def _format(f: Any, format: str | None) -> str:  # noqa: A002 - the argument's name
    if format is not None:
        if format not in _FORMATS:
            raise ValueError(f"ember.save/load: format must be one of {_FORMATS}, got {format!r}")
        return format
    return "safetensors" if is_path(f) and os.fspath(f).endswith(".safetensors") else "torch"


def save(obj: Any, f: FileLike, pickle_module: Any = pickle, pickle_protocol: int = DEFAULT_PROTOCOL,
         _use_new_zipfile_serialization: bool = True, _disable_byteorder_record: bool = False, *,
         format: str | None = None) -> None:  # noqa: A002 - the argument's name
    """Save ``obj`` (tensors, state dicts, whole modules, any picklable object) to a path or a binary file, in
    torch's format, so ``torch.load`` reads it; a path ending in ``.safetensors`` (or ``format="safetensors"``)
    writes a safetensors file of a dict of tensors. Tensors that share storage share it in the file."""
    if _format(f, format) == "safetensors":
        safetensors_format.save_state(obj, f)
        return
    if not isinstance(pickle_protocol, int) or not 2 <= pickle_protocol <= pickle.HIGHEST_PROTOCOL:
        raise ValueError(f"ember.save: pickle_protocol must be an int from 2 to {pickle.HIGHEST_PROTOCOL}, "
                         f"got {pickle_protocol!r}")
    base = pickle._Pickler if pickle_module is pickle else getattr(pickle_module, "Pickler", None)
    pickler = DEFAULT_PICKLER if base is pickle._Pickler else pickler_class(base)

    def write(out: BinaryIO) -> None:
        if not _use_new_zipfile_serialization:
            torch_legacy.write_legacy(pickler, obj, out, pickle_protocol)
            return
        storages = StorageTable()
        buf = io.BytesIO()
        pickler(buf, pickle_protocol, storages).dump(obj)
        torch_zip.write_archive(buf.getbuffer(), storages, out, torch_zip.archive_name(f),
                                byteorder=not _disable_byteorder_record)

    if is_path(f):
        write_atomic(f, write)
        return
    if not callable(getattr(f, "write", None)):
        raise TypeError(f"ember.save: f must be a path or a binary file object with write(), got {type(f).__name__}")
    write(f)
    if callable(getattr(f, "flush", None)):
        f.flush()


def _unpickle_with(weights_only: bool, pickle_module: Any, options: dict) -> Callable[[BinaryIO, Any], Any]:
    if weights_only:
        def unpickle(fh: BinaryIO, persistent_load: Callable[[Any], Any]) -> Any:
            return WeightsOnlyUnpickler(fh, persistent_load, **options).load()
    else:
        unpickler = trusting_unpickler(pickle_module)

        def unpickle(fh: BinaryIO, persistent_load: Callable[[Any], Any]) -> Any:
            return unpickler(fh, persistent_load, **options).load()
    return unpickle


_DAMAGE = (EOFError, IndexError, KeyError, TypeError, ValueError, AttributeError, struct.error, UnicodeDecodeError,
           zipfile.BadZipFile, RecursionError, OverflowError)


def load(f: FileLike, map_location: Any = None, pickle_module: Any = None, *, weights_only: bool | None = None,
         mmap: bool | None = None, format: str | None = None,  # noqa: A002 - the argument's name
         **pickle_load_args: Any) -> Any:
    """Load what ``ember.save`` or ``torch.save`` wrote (either of torch's formats, or ember's earlier one), or a
    ``.safetensors`` file.

    ``weights_only=True`` (the default unless a ``pickle_module`` is given, as in torch) resolves only torch's
    allowlist of globals plus ``add_safe_globals``; ``weights_only=False`` trusts the file: whole pickled objects
    (``torch.save(model)``) load, their classes resolved to ember's. ``map_location`` is a device, a string, a dict
    from saved to wanted devices, or a callable ``(storage, location)``. ``mmap=True`` (a path) maps tensor bytes
    copy-on-write instead of reading them.
    """
    if weights_only is None:
        weights_only = pickle_module is None
    if weights_only and pickle_module is not None:
        raise RuntimeError("Can not safely load weights when explicit pickle_module is specified")
    options = {k: pickle_load_args.pop(k) for k in ("encoding", "errors") if k in pickle_load_args}
    if pickle_load_args:
        raise TypeError(f"ember.load got unexpected keyword arguments {sorted(pickle_load_args)}")
    place = placement(map_location)
    if mmap and not is_path(f):
        raise ValueError("f must be a file path in order to use the mmap argument")
    unpickle = _unpickle_with(weights_only, pickle_module or pickle, options)
    name = file_name(f)
    try:
        if _format(f, format) == "safetensors":
            return safetensors_format.load_state(f, map_location)
        if is_path(f):
            with open(f, "rb") as fh:
                return _load_from(fh, place, os.fspath(f) if mmap else None, unpickle, weights_only)
        if not callable(getattr(f, "read", None)):
            raise TypeError(f"ember.load: f must be a path or a binary file object with read(), "
                            f"got {type(f).__name__}")
        return _load_from(f, place, None, unpickle, weights_only)
    except CorruptFile as e:
        raise RuntimeError(f"ember.load({name!r}): {e}") from None


def _load_from(fh: BinaryIO, place: Placement, mmap_path: str | None,
               unpickle: Callable[[BinaryIO, Any], Any], weights_only: bool) -> Any:
    if not fh.seekable():  # the zip reader seeks, and the legacy reader goes back to the object's pickle
        fh = io.BytesIO(fh.read())
    start = fh.tell()
    head = fh.read(8)
    fh.seek(start)
    try:
        if head.startswith(b"PK\x03\x04"):
            return torch_zip.read_archive(fh, place, mmap_path, unpickle)
        if head.startswith(ember_v1.MAGIC):
            return ember_v1.load_ember_v1(fh, place, mmap_path)
        if mmap_path is not None:
            raise RuntimeError("mmap can only be used with files saved with `torch.save(_use_new_zipfile_serialization"
                             "=True)`, please torch.save your checkpoint with this option in order to use mmap.")
        if head[:1] == b"\x80":
            return torch_legacy.read_legacy(fh, place, unpickle)
        raise CorruptFile("the file is empty" if not head else
                          "not a checkpoint: neither torch's zip or legacy format, nor ember's")
    except _DAMAGE as e:
        if not weights_only:  # a trusted file's own objects raise what they raise, as with torch
            raise
        raise CorruptFile(f"corrupt checkpoint ({type(e).__name__}: {e})") from None
