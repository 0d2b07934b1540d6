"""Data safety of ember.save / ember.load beyond tests/test_serialization.py: a writer killed mid-save never
damages the previous file, crafted files run no code, and forged lengths or corrupted middles are refused."""
from __future__ import annotations

import io
import json
import os
import random
import signal
import struct
import subprocess
import sys
import time
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
    path = tmp_path / "ckpt.ember"
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
    leftovers = [name for name in os.listdir(tmp_path) if name != "ckpt.ember"]
    assert all(name.startswith(".ckpt.ember.") and name.endswith(".tmp") for name in leftovers)
    save({"version": newest + 1, "w": ember.full((1_000_000,), float(newest + 1)), "tail": [newest + 1] * 3}, path)
    assert _check_saved_version(path, newest + 1) == newest + 1
    assert os.listdir(tmp_path) == ["ckpt.ember"]  # the next save removed the dead writers' temporaries


def test_save_keeps_temporaries_of_live_writers(tmp_path):
    path = tmp_path / "ckpt.ember"
    live = tmp_path / f".ckpt.ember.{os.getppid()}.abcd.tmp"  # a save in progress in a process that is alive
    other = tmp_path / ".other.ember.1.abcd.tmp"  # another file's temporary
    for p in (live, other):
        p.write_bytes(b"partial")
    save([1], path)
    assert sorted(os.listdir(tmp_path)) == sorted(["ckpt.ember", live.name, other.name])


class RunsCodeWhenUnpickled:
    """A pickle payload: unpickling it runs a shell command that leaves a marker file."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_torch_saved_file_with_code_payload_is_refused(tmp_path, torch_ref):
    marker = tmp_path / "pwned"
    path = tmp_path / "model.pt"
    torch_ref.save({"w": torch_ref.ones(2), "evil": RunsCodeWhenUnpickled(str(marker))}, path)
    for kwargs in ({}, {"weights_only": False}, {"mmap": True}):
        with pytest.raises(RuntimeError, match=r"model\.pt.*not an ember file: it is a zip archive"):
            load(path, **kwargs)
    assert not marker.exists()


def test_pickle_behind_an_ember_magic_is_refused(tmp_path):
    import pickle

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
    with pytest.raises(RuntimeError, match=r"truncated ember file: the header needs \d+ bytes, the file has 2 left"):
        load(path)
    path.write_bytes(_file_with_header({"format": "ember", "version": 1, "tree": {"t": "none"}, "tensors": [],
                                        "storages": [{"offset": 0, "nbytes": length, "crc32": 0}]}, bytes(64)))
    for f in (path, io.BytesIO(path.read_bytes())):
        with pytest.raises(RuntimeError, match="truncated ember file: storage 0 needs"):
            load(f)


def test_corruption_in_a_middle_storage_is_caught_by_its_checksum(tmp_path):
    tensors = {"a": ember.arange(300.0), "b": ember.arange(500, dtype=ember.int32), "c": ember.ones(64)}
    buf = io.BytesIO()
    save(tensors, buf)
    data = buf.getvalue()
    middle = data.find(np.arange(500, dtype=np.int32).tobytes())  # storage 1 starts here
    assert middle > 0
    path = tmp_path / "bad.ember"
    for where in (middle, middle + 1000, middle + 1999):
        corrupted = bytearray(data)
        corrupted[where] ^= 0x10
        path.write_bytes(bytes(corrupted))
        with pytest.raises(RuntimeError, match=r"bad\.ember.*checksum mismatch in storage 1"):
            load(path)
    path.write_bytes(data)  # and the intact bytes load exactly
    loaded = load(path)
    assert all(np.array_equal(loaded[k].numpy(), v.numpy()) for k, v in tensors.items())
