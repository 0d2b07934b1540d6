"""ember.save / ember.load: round trips, shared storage, torch's zip layout, files of ember's earlier format, atomic
saves, and clear errors for bad files (tests/test_torch_checkpoints.py checks the files against real torch)."""
from __future__ import annotations

import collections
import io
import math
import os
import pathlib
import pickle
import zipfile

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
import ember.nn
import ember.optim
from ember import serialization
from ember.serialization import atomic, load, save

V1_FIXTURE = pathlib.Path(__file__).parent / "data" / "ember_v1_checkpoint.bin"


def roundtrip(obj, **load_kwargs):
    buf = io.BytesIO()
    save(obj, buf)
    buf.seek(0)
    return load(buf, **load_kwargs)


def assert_same_tensor(a, b):
    assert type(a) is type(b)
    assert a.dtype == b.dtype and a.shape == b.shape and a.requires_grad == b.requires_grad
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def test_model_state_dict_roundtrip(tmp_path):
    model = ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.Identity(), ember.nn.Linear(4, 2))
    sd = model.state_dict()
    path = tmp_path / "model.pt"
    save(sd, path)
    back = load(path)
    assert type(back) is collections.OrderedDict and list(back) == list(sd)
    for k in sd:
        assert_same_tensor(back[k], sd[k])
    fresh = ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.Identity(), ember.nn.Linear(4, 2))
    fresh.load_state_dict(back)
    x = ember.randn(5, 3)
    np.testing.assert_array_equal(fresh(x).detach().numpy(), model(x).detach().numpy())


def test_optimizer_style_state_dict_roundtrip(tmp_path):
    state = {
        "state": {0: {"step": ember.tensor(3.0), "exp_avg": ember.randn(4, 3), "exp_avg_sq": ember.rand(4, 3)},
                  1: {"step": ember.tensor(3.0), "exp_avg": ember.randn(4), "exp_avg_sq": ember.rand(4)}},
        "param_groups": [{"lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0, "amsgrad": False,
                          "maximize": False, "foreach": None, "capturable": False, "differentiable": False,
                          "fused": None, "params": [0, 1]}],
    }
    path = str(tmp_path / "opt.pt")
    save(state, path)
    back = load(path)
    assert set(back["state"]) == {0, 1} and all(isinstance(k, int) for k in back["state"])
    for i in (0, 1):
        for k, v in state["state"][i].items():
            assert_same_tensor(back["state"][i][k], v)
    assert back["param_groups"] == state["param_groups"]
    assert isinstance(back["param_groups"][0]["betas"], tuple)


def test_real_optimizer_state_dict_roundtrip():
    p = ember.nn.Parameter(ember.randn(3))
    opt = ember.optim.Adam([p], lr=0.1)
    p.grad = ember.ones(3)
    opt.step()
    back = roundtrip(opt.state_dict())
    opt2 = ember.optim.Adam([ember.nn.Parameter(ember.zeros(3))], lr=0.5)
    opt2.load_state_dict(back)
    assert opt2.param_groups[0]["lr"] == 0.1
    np.testing.assert_array_equal(opt2.state[opt2.param_groups[0]["params"][0]]["exp_avg"].numpy(),
                                  opt.state[p]["exp_avg"].numpy())


def test_python_values_roundtrip_exactly():
    obj = [None, True, False, 0, -7, 2**70, 1.5, -0.0, math.inf, -math.inf, 1e-310, "naïve ✓", b"\x00\xff",
           (1, (2, [3])), {"nested": {"k": [1, {2: "two"}]}, (1, "t"): "tuple key"}, 3 + 4j, {1, "s"},
           bytearray(b"ab"), collections.Counter("aab"), ember.float16, ember.int64, ember.device("cpu"),
           ember.Size([2, 3])]
    back = roundtrip(obj)
    assert back == obj
    assert [type(v) for v in back] == [type(v) for v in obj]
    assert math.copysign(1, back[7]) == -1
    nan = roundtrip(float("nan"))
    assert math.isnan(nan)


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32",
                                   "float64"])
def test_every_dtype_roundtrips(dtype):
    t = (ember.arange(-6, 6).reshape(3, 4) % 5).to(getattr(ember, dtype))
    assert_same_tensor(roundtrip(t), t)


@settings(max_examples=20, deadline=None)
@given(st.lists(st.integers(0, 4), max_size=4), st.sampled_from(["float32", "float64", "int32", "bool"]),
       st.booleans())
def test_random_shapes_roundtrip(shape, dtype, transpose):
    t = ember.from_numpy(np.asarray(np.random.default_rng(0).standard_normal(shape) * 3).astype(dtype))
    if transpose and t.dim() >= 2:
        t = t.transpose(0, -1)
    back = roundtrip(t)
    assert back.shape == t.shape and back.dtype == t.dtype
    np.testing.assert_array_equal(back.numpy(), t.numpy())


def test_views_share_storage_after_load():
    base = ember.arange(12.0).reshape(3, 4)
    obj = {"base": base, "col": base[:, 1], "t": base.t(), "same": base}
    back = roundtrip(obj)
    assert back["same"] is back["base"]
    assert back["t"].stride() == base.t().stride()
    back["base"][0, 1] = 100.0
    assert back["col"][0].item() == 100.0 and back["t"][1, 0].item() == 100.0
    # Unrelated tensors do not share.
    a, b = roundtrip([ember.zeros(2), ember.zeros(2)])
    a[0] = 1
    assert b[0].item() == 0


def test_broadcast_view_saved_as_compact_copy():
    t = ember.ones(3).expand(1000, 3)
    buf = io.BytesIO()
    save(t, buf)
    assert len(buf.getvalue()) < 16_000  # a 1000x3 float32 copy, not more
    buf.seek(0)
    back = load(buf)
    assert back.shape == (1000, 3) and back.numpy().sum() == 3000


def test_requires_grad_and_parameter_kept():
    p = ember.nn.Parameter(ember.randn(2, 2))
    frozen = ember.nn.Parameter(ember.randn(2), requires_grad=False)
    leaf = ember.ones(3, requires_grad=True)
    back = roundtrip({"p": p, "frozen": frozen, "leaf": leaf, "plain": ember.ones(1)})
    assert isinstance(back["p"], ember.nn.Parameter) and back["p"].requires_grad
    assert isinstance(back["frozen"], ember.nn.Parameter) and not back["frozen"].requires_grad
    assert back["leaf"].requires_grad and back["leaf"].grad_fn is None
    assert not back["plain"].requires_grad
    assert_same_tensor(back["p"], p)


NUMPY_GLOBALS = [np._core.multiarray._reconstruct, np.ndarray, np.dtype, np._core.multiarray.scalar,
                 type(np.dtype(np.int32)), type(np.dtype(np.float32)), type(np.dtype(np.bool_))]


def test_numpy_values_are_refused_by_default_and_load_when_allowed():
    obj = {"arr": np.arange(6, dtype=np.int32).reshape(2, 3)[:, ::2], "scalar": np.float32(2.5), "b": np.bool_(True)}
    buf = io.BytesIO()
    save(obj, buf)

    def check(back):
        np.testing.assert_array_equal(back["arr"], obj["arr"])
        assert back["arr"].dtype == np.int32 and type(back["arr"]) is np.ndarray
        assert back["scalar"] == np.float32(2.5) and type(back["scalar"]) is np.float32
        assert type(back["b"]) is np.bool_ and back["b"]

    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError, match=r"GLOBAL numpy\S*\._reconstruct was not an allowed global"):
        load(buf)  # as torch: weights_only=True takes no NumPy objects
    buf.seek(0)
    check(load(buf, weights_only=False))
    with serialization.safe_globals(NUMPY_GLOBALS):
        buf.seek(0)
        check(load(buf))
    assert serialization.get_safe_globals() == []


def test_path_pathlib_file_object_and_mmap(tmp_path):
    t = ember.randn(4, 5)
    for target in (str(tmp_path / "a.pt"), tmp_path / "b.pt"):
        save({"t": t}, target)
        assert_same_tensor(load(target)["t"], t)
        mapped = load(target, mmap=True)["t"]
        assert_same_tensor(mapped, t)
        mapped[0, 0] = 123.0  # copy-on-write: the file is untouched
        assert_same_tensor(load(target)["t"], t)
    with open(tmp_path / "c.pt", "wb") as fh:
        save(t, fh)
    with open(tmp_path / "c.pt", "rb") as fh:
        assert_same_tensor(load(fh), t)
    with pytest.raises(ValueError, match="f must be a file path in order to use the mmap argument"):
        load(io.BytesIO(b""), mmap=True)


def test_map_location_forms():
    t = ember.arange(3.0)
    for loc in (None, "cpu", ember.device("cpu"), {"cpu": "cpu"}):
        assert_same_tensor(roundtrip(t, map_location=loc), t)
    assert roundtrip(t, map_location=lambda s, loc: s * 2).tolist() == [0.0, 2.0, 4.0]
    with pytest.raises(RuntimeError, match="CUDA|cuda"):
        roundtrip(t, map_location="cuda:0")


def test_whole_modules_and_optimizers_save_and_load_when_trusted(tmp_path):
    model = ember.nn.Sequential(ember.nn.Linear(2, 3), ember.nn.ReLU(), ember.nn.Linear(3, 1))
    opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    path = tmp_path / "whole.pt"
    save({"model": model, "opt": opt}, path)
    with pytest.raises(pickle.UnpicklingError, match=r"GLOBAL ember\.nn\.modules\.container\.Sequential was not an "
                                                     "allowed global"):
        load(path)  # weights_only=True, the default, takes no module
    back = load(path, weights_only=False)
    assert type(back["model"]) is ember.nn.Sequential and type(back["opt"]) is ember.optim.SGD
    assert back["opt"].param_groups[0]["params"][0] is back["model"][0].weight  # shared objects stay shared
    x = ember.randn(4, 2)
    np.testing.assert_array_equal(back["model"](x).detach().numpy(), model(x).detach().numpy())


def test_cycles_and_unpicklable_objects():
    loop = []
    loop.append(loop)
    back = roundtrip(loop)
    assert back[0] is back
    local = type("Local", (), {})
    for bad in (lambda: 1, local()):
        with pytest.raises((pickle.PicklingError, AttributeError), match="Local|lambda"):
            save([1, bad], io.BytesIO())


def test_atomic_save_keeps_old_file_when_write_fails(tmp_path, monkeypatch):
    path = tmp_path / "ckpt.pt"
    save({"v": ember.ones(1000)}, path)
    real_fdopen = os.fdopen

    class Failing:
        def __init__(self, fh):
            self.fh = fh

        def write(self, data):
            if len(memoryview(data)) >= 20_000:  # the records before went out; die writing the tensor's bytes
                raise OSError("disk full")
            return self.fh.write(data)

        def __getattr__(self, name):
            return getattr(self.fh, name)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return self.fh.__exit__(*exc)

    monkeypatch.setattr(atomic.os, "fdopen", lambda fd, mode: Failing(real_fdopen(fd, mode)))
    with pytest.raises(OSError, match="disk full"):
        save({"v": ember.zeros(5000)}, path)
    monkeypatch.undo()
    assert load(path)["v"].tolist() == [1.0] * 1000
    assert sorted(os.listdir(tmp_path)) == ["ckpt.pt"]  # no temp file left behind
    with pytest.raises(pickle.PicklingError):  # an object that cannot be pickled fails the save the same way
        save({"v": ember.zeros(5000), "bad": lambda: 0}, path)
    assert load(path)["v"].tolist() == [1.0] * 1000 and sorted(os.listdir(tmp_path)) == ["ckpt.pt"]


def test_atomic_save_keeps_old_file_when_rename_fails(tmp_path, monkeypatch):
    path = tmp_path / "ckpt.pt"
    save([1, 2], path)

    def boom(src, dst):
        raise OSError("crash before rename")

    monkeypatch.setattr(atomic.os, "replace", boom)
    with pytest.raises(OSError, match="crash before rename"):
        save([3, 4], path)
    monkeypatch.undo()
    assert load(path) == [1, 2] and os.listdir(tmp_path) == ["ckpt.pt"]


def _bytes_of(obj) -> bytes:
    buf = io.BytesIO()
    save(obj, buf)
    return buf.getvalue()


@pytest.mark.parametrize("cut", [4, 20, 60, 200, -200, -100, -22, -1])
def test_truncated_files_raise_naming_the_file(tmp_path, cut):
    data = _bytes_of({"w": ember.randn(64)})
    path = tmp_path / "cut.pt"
    path.write_bytes(data[:cut])
    with pytest.raises(RuntimeError, match=r"cut\.pt.*not a readable zip archive"):
        load(path)


def test_corrupt_bytes_detected(tmp_path):
    w = ember.randn(64)
    data = _bytes_of({"w": w})
    path = tmp_path / "bad.pt"
    in_tensor, in_pickle = data.index(w.numpy().tobytes()) + 100, data.index(b"torch._utils")
    for offset, record in ((in_tensor, "data/0"), (in_pickle, "data.pkl")):
        flipped = bytearray(data)
        flipped[offset] ^= 0x01
        path.write_bytes(bytes(flipped))
        with pytest.raises(RuntimeError, match=rf"bad\.pt.*corrupt record archive/{record} \(Bad CRC-32"):
            load(path)


def test_malicious_header_cannot_reach_outside_storage(tmp_path):
    import json
    import struct
    import zlib

    header = json.dumps({"format": "ember", "version": 1, "tree": {"t": "tensor", "i": 0},
                         "tensors": [{"dtype": "float64", "shape": [1000], "strides": [8], "storage": 0,
                                      "offset": 0}],
                         "storages": [{"offset": 0, "nbytes": 8, "crc32": zlib.crc32(bytes(8))}]}).encode()
    pre = struct.pack("<8sIQI", b"EMBERSV\0", 1, len(header), zlib.crc32(header))
    pad = b"\0" * (-(len(pre) + len(header)) % 64)
    path = tmp_path / "evil.ember"
    path.write_bytes(pre + header + pad + bytes(8) + bytes(56))
    with pytest.raises(RuntimeError, match="reaches outside its storage"):
        load(path)


def test_files_that_are_not_checkpoints_are_named(tmp_path):
    plain = tmp_path / "plain.pkl"
    plain.write_bytes(pickle.dumps({"a": 1}, protocol=2))
    with pytest.raises(RuntimeError, match=r"plain\.pkl.*not a torch checkpoint: a pickle without torch's magic"):
        load(plain)
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    with pytest.raises(RuntimeError, match=r"empty.*the file is empty"):
        load(empty)
    with pytest.raises(RuntimeError, match="not a checkpoint: neither torch's zip or legacy format, nor ember's"):
        load(io.BytesIO(b"hello world, definitely not a checkpoint"))
    other_zip = io.BytesIO()
    with zipfile.ZipFile(other_zip, "w") as zf:
        zf.writestr("readme.txt", "hi")
    other_zip.seek(0)
    with pytest.raises(RuntimeError, match=r"not a torch checkpoint: the archive has no <name>/data\.pkl record"):
        load(other_zip)


def test_load_runs_no_code(tmp_path):
    class Bomb:
        def __reduce__(self):
            return (os.system, ("echo pwned > " + str(tmp_path / "pwned"),))

    path = tmp_path / "bomb.pt"
    path.write_bytes(pickle.dumps(Bomb(), protocol=2))
    with pytest.raises(pickle.UnpicklingError, match=r"GLOBAL (posix|nt)\.system was not an allowed global"):
        load(path)
    assert not (tmp_path / "pwned").exists()


def test_file_size_is_data_plus_small_header(tmp_path):
    path = pathlib.Path(tmp_path / "big.pt")
    save({"w": ember.zeros(100_000)}, path)
    assert 400_000 <= path.stat().st_size < 400_000 + 2048


def _records(data: bytes) -> dict:
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        return {info.filename: zf.read(info) for info in zf.infolist()}


def test_files_are_torch_zip_archives(tmp_path):
    base = ember.arange(6, dtype=ember.int32)
    save({"a": base, "b": base[1:], "c": ember.ones(2)}, tmp_path / "model.pt")
    records = _records((tmp_path / "model.pt").read_bytes())
    assert list(records)[:4] == ["model/data.pkl", "model/.format_version", "model/.storage_alignment",
                                 "model/byteorder"]
    assert sorted(records)[-3:] == ["model/data/0", "model/data/1", "model/version"]
    assert records["model/byteorder"] == b"little" and records["model/version"] == b"3\n"
    assert records["model/.storage_alignment"] == b"64" and records["model/.format_version"] == b"1"
    assert records["model/data/0"] == np.arange(6, dtype=np.int32).tobytes()  # the views' storage, once
    assert records["model/data/1"] == np.ones(2, np.float32).tobytes()
    pkl = records["model/data.pkl"]
    assert pkl[:2] == b"\x80\x02" and b"torch._utils\n_rebuild_tensor_v2" in pkl and b"torch\nIntStorage" in pkl
    assert list(_records(_bytes_of(1)))[0] == "archive/data.pkl"  # a file object: torch's default name
    buf = io.BytesIO()
    save(base, buf, _disable_byteorder_record=True)
    assert "archive/byteorder" not in _records(buf.getvalue())
    buf.seek(0)
    assert load(buf).tolist() == list(range(6))


def test_legacy_format_roundtrip():
    base = ember.arange(12.0).reshape(3, 4)
    obj = {"base": base, "t": base.t(), "row": base[1], "p": ember.nn.Parameter(ember.ones(2)), "n": [1, "x"]}
    buf = io.BytesIO()
    save(obj, buf, _use_new_zipfile_serialization=False)
    assert buf.getvalue()[:2] == b"\x80\x02"
    buf.seek(0)
    back = load(buf)
    for k in ("base", "t", "row", "p"):
        assert_same_tensor(back[k], obj[k])
        assert back[k].stride() == obj[k].stride() and back[k].storage_offset() == obj[k].storage_offset()
    assert back["n"] == [1, "x"]
    back["base"][1, 0] = -5.0
    assert back["row"][0].item() == -5.0 and back["t"][0, 1].item() == -5.0


def test_ember_v1_checkpoint_still_loads():
    """tests/data/ember_v1_checkpoint.bin was written by ember's earlier writer (JSON header, "EMBERSV")."""
    for kwargs in ({}, {"mmap": True}, {"map_location": "cpu"}, {"weights_only": False}):
        ckpt = load(V1_FIXTURE, **kwargs)
        assert type(ckpt) is collections.OrderedDict
        assert list(ckpt) == ["weight", "base", "row", "col", "steps", "flags", "half", "meta"]
        ember.manual_seed(0)
        expected = ember.randn(3, 4)
        assert type(ckpt["weight"]) is ember.nn.Parameter and ckpt["weight"].requires_grad
        assert_same_tensor(ckpt["weight"].detach(), expected)
        base = ckpt["base"]
        assert base.dtype == ember.float32 and base.tolist() == np.arange(12.0).reshape(3, 4).tolist()
        assert ckpt["row"].tolist() == [4.0, 5.0, 6.0, 7.0] and ckpt["row"].storage_offset() == 4
        assert ckpt["col"].tolist() == [2.0, 6.0, 10.0]
        assert ckpt["col"].storage_offset() == 2 and ckpt["col"].stride() == (4,)
        assert ckpt["steps"].dtype == ember.int64 and ckpt["steps"].tolist() == [1, 2, 3]
        assert ckpt["flags"].dtype == ember.bool and ckpt["flags"].tolist() == [True, False]
        assert ckpt["half"].dtype == ember.float16 and ckpt["half"].tolist() == [0.5, -2.0]
        assert not any(ckpt[k].requires_grad for k in ("base", "row", "col", "steps", "flags", "half"))
        meta = ckpt["meta"]
        assert meta == {"lr": 0.1, "betas": (0.9, 0.999), "name": "adam", "n": 7, "none": None,
                        "dtype": ember.float64, "size": ember.Size([2, 3]), "blob": b"\x00\x01"}
        assert type(meta["betas"]) is tuple and type(meta["size"]) is ember.Size and meta["dtype"] is ember.float64
        base[1, 2] = 99.0  # row and col view base's storage
        assert ckpt["row"][2].item() == 99.0 and ckpt["col"][1].item() == 99.0
    assert V1_FIXTURE.read_bytes()[:8] == b"EMBERSV\0"  # mmap=True wrote nothing back (copy-on-write)
    assert load(V1_FIXTURE)["base"][1, 2].item() == 6.0
