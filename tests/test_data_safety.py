"""Data safety of ember.save / ember.load beyond tests/test_serialization.py: a writer killed mid-save never
damages the previous file; hostile files (pickles that would run code, zip archives with a hostile data.pkl, storage
records and tensor layouts that do not fit, forged lengths, truncated and bit-flipped archives, in torch's zip and
legacy formats and ember's earlier one) are refused with no code run and nothing allocated that the file does not
hold."""
from __future__ import annotations

import collections
import io
import json
import os
import pickle
import random
import signal
import struct
import subprocess
import sys
import time
import tracemalloc
import zipfile
import zlib

import numpy as np
import pytest

import ember
from ember.serialization import load, save

WRITER = """
import sys
import ember
path, start = sys.argv[1], int(sys.argv[2])
for version in range(start, start + 10_000):
    ember.save({"version": version, "w": ember.full((1_000_000,), float(version)), "tail": [version] * 3}, path)
    print(version, flush=True)
"""


def _start_writer(path, start: int) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(start)], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})


def _check_saved_version(path, newest: int) -> int:
    """The file holds one whole saved version, no later than ``newest``."""
    obj = load(path)
    version = obj["version"]
    assert version <= newest and obj["tail"] == [version] * 3
    w = obj["w"].numpy()
    assert w.shape == (1_000_000,) and (w == version).all()
    return version


def test_writer_killed_mid_save_leaves_a_loadable_previous_version(tmp_path):
    path = tmp_path / "ckpt.pt"
    rng = random.Random(8)
    newest = -1
    for round_ in range(3):
        writer = _start_writer(path, start=round_ * 10_000)
        first = int(writer.stdout.readline())  # one whole save is done: the file exists from here on
        time.sleep(rng.uniform(0.0, 0.25))  # then die at a random point of some later save
        writer.send_signal(signal.SIGKILL)
        finished = [first] + [int(line) for line in writer.stdout.read().split()]
        writer.wait()
        assert writer.returncode == -signal.SIGKILL
        # on disk: the last save the writer reported, or the one it finished but was killed before reporting
        newest = _check_saved_version(path, finished[-1] + 1)
        assert newest >= finished[-1]
    # a killed writer can leave its hidden temporary file behind; it never stands in the way of loading or saving
    leftovers = [name for name in os.listdir(tmp_path) if name != "ckpt.pt"]
    assert all(name.startswith(".ckpt.pt.") and name.endswith(".tmp") for name in leftovers)
    save({"version": newest + 1, "w": ember.full((1_000_000,), float(newest + 1)), "tail": [newest + 1] * 3}, path)
    assert _check_saved_version(path, newest + 1) == newest + 1
    assert os.listdir(tmp_path) == ["ckpt.pt"]  # the next save removed the dead writers' temporaries


def test_save_keeps_temporaries_of_live_writers(tmp_path):
    path = tmp_path / "ckpt.pt"
    live = tmp_path / f".ckpt.pt.{os.getppid()}.abcd.tmp"  # a save in progress in a process that is alive
    other = tmp_path / ".other.pt.1.abcd.tmp"  # another file's temporary
    for p in (live, other):
        p.write_bytes(b"partial")
    save([1], path)
    assert sorted(os.listdir(tmp_path)) == sorted(["ckpt.pt", live.name, other.name])


class RunsCodeWhenUnpickled:
    """A pickle payload: unpickling it runs a shell command that leaves a marker file."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


class OpensAFile(RunsCodeWhenUnpickled):
    """A payload through a builtin: unpickling it creates the marker file with open()."""

    def __reduce__(self):
        return (open, (self.marker, "w"))


class ExecsCode(RunsCodeWhenUnpickled):
    def __reduce__(self):
        return (exec, (f"open({self.marker!r}, 'w').close()",))


def _global(module: str, name: str) -> bytes:
    return f"c{module}\n{name}\n".encode()


def _push(value) -> bytes:
    """The opcodes that push ``value`` (protocol 2, without memo entries)."""
    buf = io.BytesIO()
    pickler = pickle.Pickler(buf, protocol=2)
    pickler.fast = True
    pickler.dump(value)
    return buf.getvalue()[2:-1]


def _pickle(*body: bytes, protocol: int = 2) -> bytes:
    return bytes([0x80, protocol]) + b"".join(body) + b"."


def _call(func: bytes, *args: bytes) -> bytes:
    return func + b"(" + b"".join(args) + b"tR"


def _tensor_args(size=(4,), stride=(1,), offset=0, numel=4, key="0", storage="FloatStorage", legacy=False) -> bytes:
    """The arguments torch.save writes for a tensor's _rebuild_tensor_v2: a storage named by a persistent id (with
    the legacy format's view field), the offset, sizes and strides."""
    pid = b"(" + _push("storage") + _global("torch", storage) + _push(key) + _push("cpu") + _push(numel)
    pid += (_push(None) if legacy else b"") + b"tQ"
    return (b"(" + pid + _push(offset) + _push(tuple(size)) + _push(tuple(stride)) + _push(False)
            + _global("collections", "OrderedDict") + b")Rt")


def _tensor(**layout) -> bytes:
    return _global("torch._utils", "_rebuild_tensor_v2") + _tensor_args(**layout) + b"R"


FOUR_FLOATS = np.arange(4, dtype=np.float32).tobytes()


def _archive(pkl: bytes, records: dict | None = None) -> bytes:
    """A torch zip checkpoint holding ``pkl`` as its data.pkl and ``records`` as its storages."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("archive/data.pkl", pkl)
        zf.writestr("archive/byteorder", "little")
        for key, data in (records or {}).items():
            zf.writestr(f"archive/data/{key}", data)
        zf.writestr("archive/version", "3\n")
    return buf.getvalue()


MAGIC_NUMBER = 0x1950A86A20F9469CFC6C  # torch's legacy format: magic, protocol version 1001, system information
SYS_INFO = {"protocol_version": 1001, "little_endian": True, "type_sizes": {"short": 2, "int": 4, "long": 4}}


def _legacy(obj_pickle: bytes, keys=("0",), storages=((4, FOUR_FLOATS),), magic: bytes | None = None) -> bytes:
    """A file in torch's pre-1.6 format: header pickles, the object, its storage keys, then each storage as an
    element count and its bytes."""
    head = (magic or pickle.dumps(MAGIC_NUMBER, protocol=2)) + pickle.dumps(1001, protocol=2)
    head += pickle.dumps(SYS_INFO, protocol=2) + obj_pickle + pickle.dumps(list(keys), protocol=2)
    return head + b"".join(struct.pack("<q", count) + data for count, data in storages)


def test_the_handmade_files_are_valid_checkpoints():
    """The control for the hostile files below: the same construction with honest values loads."""
    for data in (_archive(_pickle(_tensor()), {"0": FOUR_FLOATS}), _legacy(_pickle(_tensor(legacy=True)))):
        assert load(io.BytesIO(data)).tolist() == [0.0, 1.0, 2.0, 3.0]
    view = _archive(_pickle(_tensor(size=(2, 2), stride=(1, 2), offset=0)), {"0": FOUR_FLOATS})
    assert load(io.BytesIO(view)).tolist() == [[0.0, 2.0], [1.0, 3.0]]
    written = io.BytesIO()  # ember's own legacy writer lays a file out the same way
    save({"w": ember.arange(4.0)}, written, _use_new_zipfile_serialization=False)
    handmade = _legacy(_pickle(b"}" + _push("w") + _tensor(legacy=True) + b"s"))
    assert load(io.BytesIO(handmade))["w"].tolist() == load(io.BytesIO(written.getvalue()))["w"].tolist()


def _refused_without_running(path, marker, data: bytes, error=pickle.UnpicklingError, **kwargs) -> None:
    path.write_bytes(data)
    with pytest.raises(error):
        load(path, **kwargs)
    if "mmap" not in kwargs:  # mmap takes a path only
        with pytest.raises(error):
            load(io.BytesIO(data), **kwargs)
    assert not marker.exists()


PAYLOADS = [RunsCodeWhenUnpickled, OpensAFile, ExecsCode]


@pytest.mark.parametrize("payload", PAYLOADS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("carrier", ["plain pickle", "zip data.pkl", "legacy object", "legacy magic"])
def test_pickles_that_would_run_code_are_refused(tmp_path, payload, carrier):
    marker = tmp_path / "pwned"
    evil = pickle.dumps(payload(str(marker)), protocol=2)
    assert evil.startswith(b"\x80\x02") and evil.endswith(b".")
    inner = evil[2:-1]
    data = {"plain pickle": evil,
            "zip data.pkl": _archive(_pickle(b"(" + _tensor() + inner + b"l"), {"0": FOUR_FLOATS}),
            "legacy object": _legacy(_pickle(b"(" + _tensor(legacy=True) + inner + b"l")),
            "legacy magic": _legacy(_pickle(_tensor(legacy=True)), magic=evil)}[carrier]
    _refused_without_running(tmp_path / "evil.pt", marker, data)
    if carrier == "zip data.pkl":
        _refused_without_running(tmp_path / "evil.pt", marker, data, mmap=True)


@pytest.mark.parametrize("body", [
    lambda m: _call(_global("os", "system"), _push(f"touch {m}")),
    lambda m: _call(_global("builtins", "eval"), _push(f"open({m!r}, 'w')")),
    lambda m: _call(_global("ember.serialization.api", "load"), _push(m)),
    lambda m: _call(_global("torch", "load"), _push(m)),
    lambda m: b"(" + _push(f"touch {m}") + b"ios\nsystem\n",  # INST, protocol 0
    lambda m: b"(" + _global("os", "system") + _push(f"touch {m}") + b"o",  # OBJ, protocol 1
    lambda m: _push("os") + _push("system") + b"\x93" + _push((f"touch {m}",)) + b"R",  # STACK_GLOBAL, protocol 4
    lambda m: _global("copyreg", "_reconstructor") + _push((object,)) + b"R",
], ids=["GLOBAL os.system", "builtins.eval", "ember.load", "torch.load", "INST", "OBJ", "STACK_GLOBAL", "copyreg"])
def test_hostile_data_pkl_naming_code_is_refused(tmp_path, body):
    marker = tmp_path / "pwned"
    pkl = _pickle(body(str(marker)), protocol=4)
    _refused_without_running(tmp_path / "evil.pt", marker, _archive(pkl, {"0": FOUR_FLOATS}))


def _fits_in_memory(data, error, match: str | None, limit: int = 32 << 20) -> None:
    """Loading ``data`` (bytes, or a path) raises ``error`` and never holds more than ``limit`` bytes at once."""
    tracemalloc.start()
    try:
        with pytest.raises(error, match=match):
            load(io.BytesIO(data) if isinstance(data, bytes) else data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < limit


@pytest.mark.parametrize("func, args, match", [
    (("builtins", "bytearray"), (10**12,), "bad bytearray record"),
    (("__builtin__", "bytearray"), (10**12,), "bad bytearray record"),
    (("builtins", "set"), (10**12,), "TypeError"),
    (("collections", "OrderedDict"), (10**12,), "TypeError"),
    (("collections", "Counter"), (10**12,), "TypeError"),
    (("_codecs", "encode"), (10**12, "latin1"), "TypeError"),
    (("builtins", "complex"), (10**400,), "OverflowError"),
])
def test_allowed_calls_with_huge_arguments_allocate_nothing(func, args, match):
    _fits_in_memory(_archive(_pickle(_call(_global(*func), *map(_push, args))), {}), RuntimeError, match)


@pytest.mark.parametrize("opcodes", [
    b"\x96" + struct.pack("<Q", 10**12),  # BYTEARRAY8
    b"\x96" + struct.pack("<Q", 2**62),
    b"\x8e" + struct.pack("<Q", 10**12),  # BINBYTES8
    b"\x8d" + struct.pack("<Q", 10**12),  # BINUNICODE8
    b"\x95" + struct.pack("<Q", 10**12),  # FRAME
    b"X" + struct.pack("<I", 2**32 - 1),  # BINUNICODE
    b"B" + struct.pack("<I", 2**32 - 1),  # BINBYTES
], ids=["BYTEARRAY8", "BYTEARRAY8 2**62", "BINBYTES8", "BINUNICODE8", "FRAME", "BINUNICODE", "BINBYTES"])
@pytest.mark.parametrize("fmt", ["zip", "legacy object", "legacy magic"])
def test_forged_pickle_lengths_allocate_nothing(tmp_path, opcodes, fmt):
    """A length a pickle opcode claims, far past the file's end: refused, and nothing of that size allocated (from
    a BytesIO and from a real file, whose reads must not ask for the claimed length either)."""
    evil = bytes([0x80, 5]) + opcodes + b"x" * 64
    data = {"zip": _archive(evil, {}), "legacy object": _legacy(evil), "legacy magic": _legacy(b"", magic=evil)}[fmt]
    path = tmp_path / "forged.pt"
    path.write_bytes(data)
    for f in (io.BytesIO(data), path):
        _fits_in_memory(f, (RuntimeError, pickle.UnpicklingError), None)


def test_newobj_and_build_cannot_make_or_rewrite_tensors():
    hostile = {
        "NEWOBJ torch.Tensor": _global("torch", "Tensor") + b")\x81",
        "NEWOBJ ember's Tensor": _global("ember.tensor.tensor", "Tensor") + b")\x81",
        "NEWOBJ Parameter": _global("torch.nn.parameter", "Parameter") + b")\x81",
        "NEWOBJ legacy type": _global("torch", "FloatTensor") + _push((10**12,)) + b"\x81",
        "REDUCE torch.Tensor": _call(_global("torch", "Tensor"), _push(10**12)),
        "BUILD on a tensor": _tensor() + b"}" + _push("_array") + _push("x") + b"sb",
        "BUILD on a tensor's dict": _tensor() + b"}" + _push("__dict__") + b"}sb",
        "BUILD on a Parameter": _call(_global("torch._utils", "_rebuild_parameter"), _tensor(), _push(True),
                                      _global("collections", "OrderedDict") + b")R") + b"}" + _push("_array") +
                                _push(1) + b"sb",
    }
    for body in hostile.values():
        with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
            load(io.BytesIO(_archive(_pickle(body), {"0": FOUR_FLOATS})))
    rebuilt = {
        "state naming internals": _call(_global("torch._utils", "_rebuild_parameter_with_state"), _tensor(),
                                        _push(True), _global("collections", "OrderedDict") + b")R",
                                        b"}" + _push("_array") + _push(1) + b"s"),
        "rebuild through Tensor()": _call(_global("torch._tensor", "_rebuild_from_type_v2"),
                                          _global("torch", "Tensor"), _global("torch", "Tensor"),
                                          _push((10**12,)), b"}"),
        "rebuild through a legacy type": _call(_global("torch._tensor", "_rebuild_from_type_v2"),
                                               _global("torch", "FloatTensor"), _global("torch", "Tensor"),
                                               _push((10**12,)), b"}"),
        "rebuild setting internals": _call(_global("torch._tensor", "_rebuild_from_type_v2"),
                                           _global("torch._utils", "_rebuild_tensor_v2"), _global("torch", "Tensor"),
                                           _tensor_args(),
                                           b"}" + _push("_array") + _push(1) + b"s"),
        "OrderedDict state replacing its class": _global("collections", "OrderedDict") + b")R}" +
        _push("__class__") + _global("collections", "Counter") + b"sb",
    }
    for body in rebuilt.values():
        _fits_in_memory(_archive(_pickle(body), {"0": FOUR_FLOATS}), RuntimeError, "bad|corrupt|TypeError")


@pytest.mark.parametrize("fmt", ["zip", "legacy"])
def test_storage_records_shorter_than_their_tensors_are_refused(fmt):
    cases = {  # (persistent id's element count, the bytes the file holds, the tensor's size) -> the refusal
        (100, FOUR_FLOATS, (4,)): "needs 400 bytes, its record has 16" if fmt == "zip" else "missing or short",
        (4, FOUR_FLOATS[:12], (4,)): "needs 16 bytes, its record has 12" if fmt == "zip" else "missing or short",
        (4, FOUR_FLOATS, (5,)): "need 5 elements, the storage has 4",
        (4, b"", (4,)): "needs 16 bytes, its record has 0" if fmt == "zip" else "missing or short",
    }
    for (numel, data, size), match in cases.items():
        pkl = _pickle(_tensor(size=size, numel=numel, legacy=fmt == "legacy"))
        blob = (_archive(pkl, {"0": data}) if fmt == "zip"
                else _legacy(pkl, storages=((len(data) // 4, data),)))
        _fits_in_memory(blob, RuntimeError, match)
    with pytest.raises(RuntimeError, match="no record for storage '0'"):
        load(io.BytesIO(_archive(_pickle(_tensor()), {})))
    with pytest.raises(RuntimeError, match="storage '1' is named by no tensor"):
        load(io.BytesIO(_legacy(_pickle(_tensor(legacy=True)), keys=("1",))))


@pytest.mark.parametrize("size, stride, offset", [
    ((5,), (1,), 0), ((1,), (1,), 4), ((2, 2), (2, 1), 1), ((2,), (4,), 0), ((3,), (-1,), 2), ((1,), (1,), -1),
    ((2,), (1, 1), 0), ((2**62, 2), (2, 1), 0), ((2,), (2**62,), 0), ((2**63, 1), (1, 1), 0), ((2.0,), (1,), 0),
    ((True,), (1,), 0), ((2,), (1,), 1.5), ((-1,), (1,), 0),
])
@pytest.mark.parametrize("fmt", ["zip", "legacy"])
def test_tensor_layouts_reaching_outside_the_storage_are_refused(size, stride, offset, fmt):
    pkl = _pickle(_tensor(size=size, stride=stride, offset=offset, legacy=fmt == "legacy"))
    blob = _archive(pkl, {"0": FOUR_FLOATS}) if fmt == "zip" else _legacy(pkl)
    _fits_in_memory(blob, RuntimeError, "bad tensor record")


def _checkpoint() -> tuple[dict, bytes]:
    base = ember.arange(24.0).reshape(4, 6)
    obj = collections.OrderedDict(base=base, t=base.t(), row=base[2, 1:], ids=ember.arange(5), flags=ember.ones(3) > 0,
                                  meta={"lr": 0.1, "name": "w", "shape": ember.Size([4, 6])})
    buf = io.BytesIO()
    save(obj, buf)
    return obj, buf.getvalue()


def _same_checkpoint(back, obj) -> None:
    assert type(back) is collections.OrderedDict and list(back) == list(obj) and back["meta"] == obj["meta"]
    for k in ("base", "t", "row", "ids", "flags"):
        assert back[k].dtype == obj[k].dtype and back[k].stride() == obj[k].stride()
        assert back[k].storage_offset() == obj[k].storage_offset()
        np.testing.assert_array_equal(back[k].numpy(), obj[k].numpy())


def test_truncated_archives_are_refused_at_every_cut(tmp_path):
    obj, data = _checkpoint()
    _same_checkpoint(load(io.BytesIO(data)), obj)
    path = tmp_path / "cut.pt"
    cuts = sorted(set(range(0, len(data), max(1, len(data) // 80))) | {len(data) - k for k in (1, 2, 21, 22, 23, 46)})
    for cut in cuts:
        path.write_bytes(data[:cut])
        with pytest.raises(RuntimeError, match=r"cut\.pt"):
            load(path)


def _layout(data: bytes) -> dict:
    """Each record of a zip checkpoint: (where its bytes start, their length, where its directory entry starts)."""
    found = {}
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        for info in zf.infolist():
            name_len, extra_len = struct.unpack("<HH", data[info.header_offset + 26:info.header_offset + 30])
            found[info.filename] = [info.header_offset + 30 + name_len + extra_len, info.file_size, None]
    entry = data.find(b"PK\x01\x02")
    while entry >= 0:
        name_len = struct.unpack("<H", data[entry + 28:entry + 30])[0]
        found[data[entry + 46:entry + 46 + name_len].decode()][2] = entry
        entry = data.find(b"PK\x01\x02", entry + 1)
    return found


def test_every_byte_flipped_is_refused_or_harmless():
    """Each byte of a checkpoint XORed with a random mask (fixed seed): the load raises one of ember.load's errors,
    or the flip hit bytes nothing reads (padding, records a load does not read) and the load gives exactly the
    saved values. Every flip in the pickle or a storage's bytes is refused."""
    obj, data = _checkpoint()
    layout = _layout(data)
    read = set()
    for name, (start, size, _) in layout.items():
        if name.endswith("data.pkl") or "/data/" in name:
            read.update(range(start, start + size))
    rng = random.Random(18)
    harmless = 0
    for i in range(len(data)):
        flipped = bytearray(data)
        flipped[i] ^= rng.randrange(1, 256)
        try:
            back = load(io.BytesIO(bytes(flipped)))
        except (RuntimeError, pickle.UnpicklingError):
            continue
        assert i not in read
        _same_checkpoint(back, obj)
        harmless += 1
    assert 0 < harmless < len(data) - len(read)


def test_flipped_compression_and_encryption_flags_are_refused():
    _, data = _checkpoint()
    layout = _layout(data)
    for name in ("archive/data.pkl", "archive/data/0"):
        header, entry = data.rindex(b"PK\x03\x04", 0, layout[name][0]), layout[name][2]
        for in_header, in_entry, bits in ((8, 10, range(8)), (6, 8, [0])):  # the method, the encryption flag
            for bit in bits:
                flipped = bytearray(data)
                flipped[header + in_header] ^= 1 << bit
                flipped[entry + in_entry] ^= 1 << bit
                with pytest.raises(RuntimeError, match="corrupt"):
                    load(io.BytesIO(bytes(flipped)))


@pytest.mark.parametrize("name", ["archive/data.pkl", "archive/data/0"])
@pytest.mark.parametrize("sizes", [(0xFFFFFFF0, 0xFFFFFFF0), (0x7FFFFFFF, 0x7FFFFFFF), (16, 0xFFFFFFF0)])
def test_forged_record_sizes_in_the_zip_directory_allocate_nothing(tmp_path, name, sizes):
    """The directory's compressed and uncompressed sizes of a record, forged: refused before reading or allocating
    that much."""
    _, data = _checkpoint()
    entry = _layout(data)[name][2]
    forged = bytearray(data)
    forged[entry + 20:entry + 28] = struct.pack("<II", *sizes)
    path = tmp_path / "forged.pt"
    path.write_bytes(bytes(forged))
    for f in (bytes(forged), path):
        _fits_in_memory(f, RuntimeError, "corrupt")


@pytest.mark.parametrize("count", [2**62, 2**40, 10**9, -1, 3])
def test_legacy_files_with_forged_element_counts_are_refused(tmp_path, count):
    data = _legacy(_pickle(_tensor(legacy=True)), storages=((count, FOUR_FLOATS),))
    match = {-1: "has -1 elements", 3: "missing or short"}.get(count, r"truncated file: storage '0' needs")
    _fits_in_memory(data, RuntimeError, match)
    path = tmp_path / "forged.pt"
    path.write_bytes(data)
    with pytest.raises(RuntimeError, match=r"forged\.pt.*" + match):
        load(path)


def test_torch_saved_file_with_code_payload_is_refused(tmp_path, torch_ref):
    marker = tmp_path / "pwned"
    path = tmp_path / "model.pt"
    for new_format in (True, False):
        torch_ref.save({"w": torch_ref.ones(2), "evil": RunsCodeWhenUnpickled(str(marker))}, path,
                       _use_new_zipfile_serialization=new_format)
        with pytest.raises(pickle.UnpicklingError, match=r"GLOBAL (posix|nt)\.system was not an allowed global"):
            load(path)
        with pytest.raises((RuntimeError, pickle.UnpicklingError)):  # legacy files cannot be mapped, as in torch
            load(path, mmap=True)
    assert not marker.exists()


def test_pickle_behind_an_ember_magic_is_refused(tmp_path):
    marker = tmp_path / "pwned"
    payload = pickle.dumps(RunsCodeWhenUnpickled(str(marker)))
    path = tmp_path / "evil.ember"
    path.write_bytes(struct.pack("<8sIQI", b"EMBERSV\0", 1, len(payload), zlib.crc32(payload)) + payload)
    with pytest.raises(RuntimeError, match=r"evil\.ember.*corrupt ember file header"):
        load(path, weights_only=False)
    assert not marker.exists()


def _file_with_header(header: dict, data: bytes = b"") -> bytes:
    raw = json.dumps(header).encode()
    pre = struct.pack("<8sIQI", b"EMBERSV\0", 1, len(raw), zlib.crc32(raw))
    return pre + raw + b"\0" * (-(len(pre) + len(raw)) % 64) + data


@pytest.mark.parametrize("tree", [{"t": "object", "v": "os.system"}, {"t": "__reduce__", "v": ["os.system", "id"]},
                                  {"t": "dtype", "v": "object"}, {"t": "tensor", "i": 5}, {"t": "list", "v": 3}])
def test_header_naming_code_or_missing_parts_is_refused(tmp_path, tree):
    path = tmp_path / "forged.ember"
    path.write_bytes(_file_with_header({"format": "ember", "version": 1, "tree": tree, "tensors": [],
                                        "storages": []}))
    with pytest.raises(RuntimeError, match=r"forged\.ember.*corrupt ember file header"):
        load(path)


@pytest.mark.parametrize("length", [2 ** 40, 2 ** 62])
def test_forged_lengths_are_refused_before_allocating(tmp_path, length):
    """A header or storage length far past the file's end is a truncation error, not a MemoryError."""
    path = tmp_path / "huge.ember"
    path.write_bytes(struct.pack("<8sIQI", b"EMBERSV\0", 1, length, 0) + b"{}")
    with pytest.raises(RuntimeError, match=r"truncated file: the header needs \d+ bytes, the file has 2 left"):
        load(path)
    path.write_bytes(_file_with_header({"format": "ember", "version": 1, "tree": {"t": "none"}, "tensors": [],
                                        "storages": [{"offset": 0, "nbytes": length, "crc32": 0}]}, bytes(64)))
    for f in (path, io.BytesIO(path.read_bytes())):
        with pytest.raises(RuntimeError, match="truncated file: storage 0 needs"):
            load(f)


def test_corruption_in_a_middle_storage_is_caught_by_its_checksum(tmp_path):
    tensors = {"a": ember.arange(300.0), "b": ember.arange(500, dtype=ember.int32), "c": ember.ones(64)}
    buf = io.BytesIO()
    save(tensors, buf)
    data = buf.getvalue()
    middle = data.find(np.arange(500, dtype=np.int32).tobytes())  # storage 1 starts here
    assert middle > 0
    path = tmp_path / "bad.pt"
    for where in (middle, middle + 1000, middle + 1999):
        corrupted = bytearray(data)
        corrupted[where] ^= 0x10
        path.write_bytes(bytes(corrupted))
        with pytest.raises(RuntimeError, match=r"bad\.pt.*corrupt record archive/data/1 \(Bad CRC-32"):
            load(path)
    path.write_bytes(data)  # and the intact bytes load exactly
    loaded = load(path)
    assert all(np.array_equal(loaded[k].numpy(), v.numpy()) for k, v in tensors.items())


def test_corruption_in_a_middle_storage_of_an_ember_v1_file_is_caught(tmp_path):
    storages = [np.arange(3, dtype=np.float64).tobytes(), np.arange(5, dtype=np.int32).tobytes(), bytes(8)]
    table, offset = [], 0
    for raw in storages:
        table.append({"offset": offset, "nbytes": len(raw), "crc32": zlib.crc32(raw)})
        offset += len(raw) + (-len(raw) % 64)
    tensors = [{"dtype": dt, "shape": [n], "strides": [size], "storage": i, "offset": 0}
               for i, (dt, n, size) in enumerate([("float64", 3, 8), ("int32", 5, 4), ("int64", 1, 8)])]
    header = {"format": "ember", "version": 1, "tensors": tensors, "storages": table,
              "tree": {"t": "list", "v": [{"t": "tensor", "i": i} for i in range(3)]}}
    body = b"".join(raw + bytes(-len(raw) % 64) for raw in storages)
    data = _file_with_header(header, body)
    assert [t.tolist() for t in load(io.BytesIO(data))] == [[0.0, 1.0, 2.0], [0, 1, 2, 3, 4], [0]]
    middle = data.index(storages[1])
    for where in (middle, middle + 19):
        corrupted = bytearray(data)
        corrupted[where] ^= 0x10
        (tmp_path / "old.ember").write_bytes(bytes(corrupted))
        with pytest.raises(RuntimeError, match=r"old\.ember.*checksum mismatch in storage 1"):
            load(tmp_path / "old.ember")
