"""ember.save / ember.load: round trips, shared storage, atomic saves, and clear errors for bad files."""
from __future__ import annotations

import collections
import io
import math
import os
import pathlib
import pickle

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
import ember.nn
import ember.optim
from ember import serialization
from ember.serialization import load, save


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
    path = tmp_path / "model.ember"
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
    path = str(tmp_path / "opt.ember")
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
           (1, (2, [3])), {"nested": {"k": [1, {2: "two"}]}, (1, "t"): "tuple key"}, 3 + 4j,
           ember.float16, ember.int64, ember.device("cpu"), ember.Size([2, 3])]
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


def test_numpy_values_roundtrip():
    obj = {"arr": np.arange(6, dtype=np.int32).reshape(2, 3)[:, ::2], "scalar": np.float32(2.5), "b": np.bool_(True)}
    back = roundtrip(obj)
    np.testing.assert_array_equal(back["arr"], obj["arr"])
    assert back["scalar"] == np.float32(2.5) and type(back["scalar"]) is np.float32
    assert type(back["b"]) is np.bool_


def test_path_pathlib_file_object_and_mmap(tmp_path):
    t = ember.randn(4, 5)
    for target in (str(tmp_path / "a.ember"), tmp_path / "b.ember"):
        save({"t": t}, target)
        assert_same_tensor(load(target)["t"], t)
        mapped = load(target, mmap=True)["t"]
        assert_same_tensor(mapped, t)
        mapped[0, 0] = 123.0  # copy-on-write: the file is untouched
        assert_same_tensor(load(target)["t"], t)
    with open(tmp_path / "c.ember", "wb") as fh:
        save(t, fh)
    with open(tmp_path / "c.ember", "rb") as fh:
        assert_same_tensor(load(fh), t)
    with pytest.raises(ValueError, match="mmap=True needs a path"):
        load(io.BytesIO(b""), mmap=True)


def test_map_location_forms():
    t = ember.arange(3.0)
    for loc in (None, "cpu", ember.device("cpu"), {"cpu": "cpu"}):
        assert_same_tensor(roundtrip(t, map_location=loc), t)
    assert roundtrip(t, map_location=lambda s, loc: s * 2).tolist() == [0.0, 2.0, 4.0]
    with pytest.raises(RuntimeError, match="CUDA|cuda"):
        roundtrip(t, map_location="cuda:0")


def test_saving_module_or_optimizer_points_to_state_dict():
    model = ember.nn.Linear(2, 2)
    with pytest.raises(TypeError, match=r"cannot store a Linear object .*state_dict\(\)"):
        save(model, io.BytesIO())
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(TypeError, match=r"cannot store a SGD object \(at obj\['opt'\]\).*state_dict"):
        save({"opt": opt}, io.BytesIO())


def test_unsupported_and_cyclic_objects():
    with pytest.raises(TypeError, match=r"cannot store an object of type builtins.set \(at obj\[1\]\)"):
        save([1, {2}], io.BytesIO())
    loop = []
    loop.append(loop)
    with pytest.raises(ValueError, match="contains itself"):
        save(loop, io.BytesIO())


def test_atomic_save_keeps_old_file_when_write_fails(tmp_path, monkeypatch):
    path = tmp_path / "ckpt.ember"
    save({"v": ember.ones(1000)}, path)
    real_fdopen = os.fdopen

    class Failing:
        def __init__(self, fh):
            self.fh, self.writes = fh, 0

        def write(self, data):
            self.writes += 1
            if self.writes == 3:  # preamble and header went out; die while writing tensor bytes
                raise OSError("disk full")
            return self.fh.write(data)

        def __getattr__(self, name):
            return getattr(self.fh, name)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return self.fh.__exit__(*exc)

    monkeypatch.setattr(serialization.os, "fdopen", lambda fd, mode: Failing(real_fdopen(fd, mode)))
    with pytest.raises(OSError, match="disk full"):
        save({"v": ember.zeros(5000)}, path)
    monkeypatch.undo()
    assert load(path)["v"].tolist() == [1.0] * 1000
    assert sorted(os.listdir(tmp_path)) == ["ckpt.ember"]  # no temp file left behind


def test_atomic_save_keeps_old_file_when_rename_fails(tmp_path, monkeypatch):
    path = tmp_path / "ckpt.ember"
    save([1, 2], path)

    def boom(src, dst):
        raise OSError("crash before rename")

    monkeypatch.setattr(serialization.os, "replace", boom)
    with pytest.raises(OSError, match="crash before rename"):
        save([3, 4], path)
    monkeypatch.undo()
    assert load(path) == [1, 2] and os.listdir(tmp_path) == ["ckpt.ember"]


def _bytes_of(obj) -> bytes:
    buf = io.BytesIO()
    save(obj, buf)
    return buf.getvalue()


@pytest.mark.parametrize("cut", [4, 20, 60, -100, -1])
def test_truncated_files_raise_naming_the_file(tmp_path, cut):
    data = _bytes_of({"w": ember.randn(64)})
    path = tmp_path / "cut.ember"
    path.write_bytes(data[:cut])
    with pytest.raises(RuntimeError, match=r"cut\.ember.*truncated ember file"):
        load(path)


def test_corrupt_bytes_detected(tmp_path):
    data = bytearray(_bytes_of({"w": ember.randn(64)}))
    path = tmp_path / "bad.ember"
    flipped = bytearray(data)
    flipped[-20] ^= 0xFF  # inside tensor bytes
    path.write_bytes(bytes(flipped))
    with pytest.raises(RuntimeError, match=r"bad\.ember.*checksum mismatch in storage 0"):
        load(path)
    flipped = bytearray(data)
    flipped[40] ^= 0x01  # inside the JSON header
    path.write_bytes(bytes(flipped))
    with pytest.raises(RuntimeError, match=r"bad\.ember.*header checksum mismatch"):
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


def test_foreign_files_are_named_not_ember(tmp_path, torch_ref):
    pt = tmp_path / "model.pt"
    torch_ref.save({"w": torch_ref.ones(2)}, pt)
    with pytest.raises(RuntimeError, match=r"model\.pt.*not an ember file: it is a zip archive.*torch\.save"):
        load(pt)
    legacy = tmp_path / "legacy.pt"
    legacy.write_bytes(pickle.dumps({"a": 1}, protocol=2))
    with pytest.raises(RuntimeError, match=r"legacy\.pt.*not an ember file: it looks like a pickle"):
        load(legacy)
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    with pytest.raises(RuntimeError, match="the file is empty"):
        load(empty)
    with pytest.raises(RuntimeError, match="not an ember file"):
        load(io.BytesIO(b"hello world, definitely not ember"))


def test_load_never_unpickles(tmp_path):
    class Bomb:
        def __reduce__(self):
            return (os.system, ("echo pwned > " + str(tmp_path / "pwned"),))

    path = tmp_path / "bomb.pt"
    path.write_bytes(pickle.dumps(Bomb()))
    with pytest.raises(RuntimeError, match="not an ember file"):
        load(path)
    assert not (tmp_path / "pwned").exists()


def test_file_size_is_data_plus_small_header(tmp_path):
    path = pathlib.Path(tmp_path / "big.ember")
    save({"w": ember.zeros(100_000)}, path)
    assert 400_000 <= path.stat().st_size < 400_000 + 1024
