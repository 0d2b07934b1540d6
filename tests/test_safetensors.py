"""safetensors files: ember.utils.safetensors (shaped like safetensors.torch) and the engine under ember.save/load.

Files go ember -> ember, ember -> safetensors.torch and safetensors.torch -> ember (the torch tests skip without
torch); the whole file skips without the safetensors package. The tests at the end (test_ember_save_load_dispatch_*)
cover ember.save/ember.load choosing this format by extension or ``format=``; they skip while ember.save still
writes another format for ``.safetensors`` paths.
"""
from __future__ import annotations

import io
import json
import struct
import sys

import numpy as np
import pytest

safetensors = pytest.importorskip("safetensors")

import ember  # noqa: E402
from ember import nn  # noqa: E402
from ember.serialization import atomic, safetensors_format as fmt  # noqa: E402
from ember.serialization.files import CorruptFile  # noqa: E402
from ember.utils import safetensors as es  # noqa: E402

needs_cuda = pytest.mark.skipif(not ember.cuda.is_available(), reason="needs CUDA (a GPU or the simulator)")

# every ember dtype, with a NumPy sample whose values exercise it (signs, fractions, extremes)
SAMPLES = {
    "bool": np.array([[True, False, True], [False, False, True]]),
    "uint8": np.array([0, 1, 255], np.uint8),
    "int8": np.array([-128, 0, 127], np.int8),
    "int16": np.array([[-32768, 7], [3, 32767]], np.int16),
    "int32": np.array([-(2 ** 31), 5, 2 ** 31 - 1], np.int32),
    "int64": np.array([-(2 ** 63), 0, 2 ** 63 - 1], np.int64),
    "float16": np.array([-65504.0, 0.5, 6.1e-05], np.float16),
    "float32": np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 7,
    "float64": np.array([np.pi, -np.e, 1e-300], np.float64),
}
CODES = {"bool": "BOOL", "uint8": "U8", "int8": "I8", "int16": "I16", "int32": "I32", "int64": "I64",
         "float16": "F16", "float32": "F32", "float64": "F64"}


def _state() -> dict[str, ember.Tensor]:
    """One tensor per ember dtype, plus a 0-d and an empty one."""
    state = {name: ember.from_numpy(a.copy()) for name, a in SAMPLES.items()}
    state["scalar"] = ember.tensor(2.25, dtype=ember.float64)
    state["empty"] = ember.zeros(0, 3, dtype=ember.int32)
    return state


def _assert_same(loaded: dict, expected: dict) -> None:
    assert sorted(loaded) == sorted(expected)
    for name, t in expected.items():
        got = loaded[name]
        assert isinstance(got, ember.Tensor), name
        assert got.dtype == t.dtype and tuple(got.shape) == tuple(t.shape), name
        np.testing.assert_array_equal(got.numpy(), t.numpy(), err_msg=name)


@pytest.fixture
def torch_st(torch_ref):
    return pytest.importorskip("safetensors.torch")


def _to_torch(torch, state: dict) -> dict:
    return {name: torch.from_numpy(t.numpy().copy()) for name, t in state.items()}


def _assert_torch_same(torch, loaded: dict, expected: dict) -> None:
    assert sorted(loaded) == sorted(expected)
    for name, t in expected.items():
        got = loaded[name]
        assert str(got.dtype) == f"torch.{t.dtype.name}" and tuple(got.shape) == tuple(t.shape), name
        np.testing.assert_array_equal(got.numpy(), t.numpy(), err_msg=name)


# ---- ember -> ember ----------------------------------------------------------------------------------------------

def test_file_round_trip_keeps_every_dtype_shape_and_value(tmp_path):
    state = _state()
    es.save_file(state, tmp_path / "m.safetensors")
    loaded = es.load_file(tmp_path / "m.safetensors")
    _assert_same(loaded, state)
    with es.safe_open(tmp_path / "m.safetensors") as f:
        assert {name: f.get_slice(name).get_dtype() for name in SAMPLES} == CODES


def test_bytes_round_trip_and_file_objects(tmp_path):
    state = _state()
    data = es.save(state)
    assert isinstance(data, bytes)
    _assert_same(es.load(data), state)
    buf = io.BytesIO()
    fmt.save_state(state, buf)
    assert buf.getvalue() == data  # the same bytes whichever way it is written
    buf.seek(0)
    _assert_same(fmt.load_state(buf), state)
    fmt.save_state(state, tmp_path / "s.safetensors")
    assert (tmp_path / "s.safetensors").read_bytes() == data
    _assert_same(fmt.load_state(str(tmp_path / "s.safetensors")), state)


def test_loaded_tensors_are_writable_and_do_not_write_to_the_file(tmp_path):
    path = tmp_path / "w.safetensors"
    es.save_file({"w": ember.arange(6.0).reshape(2, 3)}, path)
    before = path.read_bytes()
    for loaded in (es.load_file(path)["w"], es.load(before)["w"], fmt.load_state(io.BytesIO(before))["w"]):
        loaded.add_(1.0)
        loaded[0, 0] = -5.0
        assert loaded.tolist() == [[-5.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    assert path.read_bytes() == before
    assert es.load_file(path)["w"].tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]


def test_loads_wrap_the_packages_arrays_without_a_copy(tmp_path, monkeypatch):
    """Each tensor's storage is the array the package returned (a path) or its buffer for the tensor (bytes)."""
    path = tmp_path / "z.safetensors"
    es.save_file({"a": ember.arange(4.0)}, path)
    returned, buffers = [], []
    real_open, real_deserialize = safetensors.safe_open, safetensors.deserialize

    class Recording:
        def __init__(self, *args, **kwargs):
            self.inner = real_open(*args, **kwargs)

        def get_tensor(self, name):
            returned.append(self.inner.get_tensor(name))
            return returned[-1]

        def __getattr__(self, name):
            return getattr(self.inner, name)

    def deserialize(data):
        entries = real_deserialize(data)
        buffers.extend(entry["data"] for _, entry in entries)
        return entries

    monkeypatch.setattr(safetensors, "safe_open", Recording)
    monkeypatch.setattr(safetensors, "deserialize", deserialize)
    assert es.load_file(path)["a"].numpy() is returned[-1]
    loaded = es.load(path.read_bytes())["a"].numpy()
    assert np.shares_memory(loaded, np.frombuffer(buffers[-1], np.uint8)) and loaded.flags.writeable


def test_parameters_and_tensors_that_require_grad_save_their_values(tmp_path):
    layer = nn.Linear(3, 2)
    es.save_file({"weight": layer.weight, "bias": layer.bias}, tmp_path / "p.safetensors")
    loaded = es.load_file(tmp_path / "p.safetensors")
    np.testing.assert_array_equal(loaded["weight"].numpy(), layer.weight.detach().numpy())
    assert not loaded["weight"].requires_grad and type(loaded["weight"]) is ember.Tensor  # as safetensors.torch


def test_disjoint_views_of_one_buffer_save_as_separate_tensors(tmp_path):
    w = ember.arange(12.0).reshape(4, 3)
    es.save_file({"top": w[:2], "bottom": w[2:]}, tmp_path / "v.safetensors")
    loaded = es.load_file(tmp_path / "v.safetensors")
    assert loaded["top"].tolist() == w[:2].tolist() and loaded["bottom"].tolist() == w[2:].tolist()


# ---- metadata ----------------------------------------------------------------------------------------------------

def test_metadata_round_trips_and_is_none_when_absent(tmp_path):
    meta = {"format": "pt", "note": "ünïcode ✓", "empty": ""}
    es.save_file({"a": ember.ones(2)}, tmp_path / "m.safetensors", metadata=meta)
    es.save_file({"a": ember.ones(2)}, tmp_path / "n.safetensors")
    with es.safe_open(tmp_path / "m.safetensors") as f:
        assert f.metadata() == meta
    with es.safe_open(tmp_path / "n.safetensors") as f:
        assert f.metadata() is None
    header_len = struct.unpack("<Q", es.save({"a": ember.ones(2)}, metadata=meta)[:8])[0]
    header = json.loads(es.save({"a": ember.ones(2)}, metadata=meta)[8:8 + header_len])
    assert header["__metadata__"] == meta and header["a"] == {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}


@pytest.mark.parametrize("metadata", [{"k": 1}, ["k"], {2: "v"}])
def test_metadata_must_map_str_to_str(metadata):
    with pytest.raises(TypeError):
        es.save({"a": ember.ones(1)}, metadata=metadata)


# ---- interchange with safetensors.torch --------------------------------------------------------------------------

def test_ember_files_load_in_safetensors_torch(tmp_path, torch_st):
    import torch

    state = _state()
    es.save_file(state, tmp_path / "e.safetensors", metadata={"by": "ember"})
    _assert_torch_same(torch, torch_st.load_file(tmp_path / "e.safetensors"), state)
    _assert_torch_same(torch, torch_st.load(es.save(state)), state)
    with torch_st.safe_open(str(tmp_path / "e.safetensors"), framework="pt") as f:
        assert f.metadata() == {"by": "ember"}


def test_safetensors_torch_files_load_in_ember(tmp_path, torch_st):
    import torch

    state = _state()
    torch_st.save_file(_to_torch(torch, state), tmp_path / "t.safetensors", metadata={"by": "torch"})
    _assert_same(es.load_file(tmp_path / "t.safetensors"), state)
    _assert_same(es.load(torch_st.save(_to_torch(torch, state))), state)
    with es.safe_open(tmp_path / "t.safetensors") as f:
        assert f.metadata() == {"by": "torch"}


def test_ember_and_safetensors_torch_write_the_same_bytes(torch_st):
    import torch

    state, meta = _state(), {"k": "v"}
    assert es.save(state, metadata=meta) == torch_st.save(_to_torch(torch, state), metadata=meta)


def test_load_file_returns_tensors_in_the_order_safetensors_torch_does(tmp_path, torch_st):
    state = _state()
    es.save_file(state, tmp_path / "o.safetensors")
    assert list(es.load_file(tmp_path / "o.safetensors")) == list(torch_st.load_file(tmp_path / "o.safetensors"))


def test_tied_model_files_interchange_with_safetensors_torch(tmp_path, torch_st):
    import torch

    class TorchTied(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(5, 3)
            self.head = torch.nn.Linear(3, 5, bias=False)
            self.head.weight = self.emb.weight

    torch_model = TorchTied()
    torch_st.save_model(torch_model, tmp_path / "t.safetensors")
    model = _Tied()
    assert es.load_model(model, tmp_path / "t.safetensors") == ([], [])
    np.testing.assert_array_equal(model.emb.weight.detach().numpy(), torch_model.emb.weight.detach().numpy())
    assert model.head.weight is model.emb.weight

    ember.manual_seed(3)
    model = _Tied()
    es.save_model(model, tmp_path / "e.safetensors")
    torch_model = TorchTied()
    missing, unexpected = torch_st.load_model(torch_model, tmp_path / "e.safetensors")
    assert not missing and not unexpected
    np.testing.assert_array_equal(torch_model.head.weight.detach().numpy(), model.emb.weight.detach().numpy())


def test_slices_match_safetensors_torch(tmp_path, torch_st):
    es.save_file({"w": ember.arange(60.0).reshape(3, 4, 5)}, tmp_path / "s.safetensors")
    keys = [0, -1, slice(1, None), (slice(None), 2), (Ellipsis, slice(1, 4, 2)), (1, Ellipsis, -2),
            (slice(-2, None), slice(None, None, 3), 4), (slice(10, 20),), (slice(2, 1),), (), Ellipsis,
            None, (None, 0), [0, 2], (slice(None), [3, 1])]
    with es.safe_open(tmp_path / "s.safetensors") as ours, \
            torch_st.safe_open(str(tmp_path / "s.safetensors"), framework="pt") as theirs:
        for key in keys:
            got, want = ours.get_slice("w")[key], theirs.get_slice("w")[key]
            assert tuple(got.shape) == tuple(want.shape), key
            np.testing.assert_array_equal(got.numpy(), want.numpy(), err_msg=str(key))
        for key, error in [(3, IndexError), ((0, 0, 0, 0), IndexError), (slice(None, None, -1), ValueError),
                           ((0, -5), IndexError)]:
            with pytest.raises(error):
                theirs.get_slice("w")[key]
            with pytest.raises(error):
                ours.get_slice("w")[key]


# ---- safe_open and get_slice -------------------------------------------------------------------------------------

def test_safe_open_reads_names_tensors_and_metadata(tmp_path):
    state = {"b": ember.arange(3), "a": ember.ones(2, 2, dtype=ember.float64)}
    es.save_file(state, tmp_path / "o.safetensors", metadata={"m": "1"})
    with es.safe_open(tmp_path / "o.safetensors", framework="pt", device="cpu") as f:
        assert f.keys() == ["a", "b"]
        assert sorted(f.offset_keys()) == ["a", "b"]
        assert f.metadata() == {"m": "1"}
        assert f.get_tensor("b").tolist() == [0, 1, 2] and f.get_tensor("a").dtype == ember.float64
        _assert_same(f.get_tensors(), state)
        with pytest.raises(safetensors.SafetensorError, match="does not contain tensor zz"):
            f.get_tensor("zz")
    f = es.safe_open(tmp_path / "o.safetensors")  # without a with block, as the package allows
    assert f.get_tensor("b").tolist() == [0, 1, 2]


def test_safe_open_refuses_other_frameworks(tmp_path):
    es.save_file({"a": ember.ones(1)}, tmp_path / "f.safetensors")
    with pytest.raises(ValueError, match="framework numpy is invalid"):
        es.safe_open(tmp_path / "f.safetensors", framework="numpy")


def test_plain_slices_read_only_their_part(tmp_path):
    """Ints, slices and ``...`` go to the package as non-negative ints and forward slices (the package then reads
    only those bytes); other keys read the whole tensor and index it with ember's rules."""
    es.save_file({"w": ember.arange(24.0).reshape(4, 6)}, tmp_path / "p.safetensors")
    with es.safe_open(tmp_path / "p.safetensors") as f:
        piece = f.get_slice("w")
        seen = []
        raw = piece._raw

        class Recorder:
            def __getitem__(self, key):
                seen.append(key)
                return raw[key]

            def get_dtype(self):
                return raw.get_dtype()

            def get_shape(self):
                return raw.get_shape()

        piece._raw = Recorder()
        assert piece.get_shape() == [4, 6] and piece.get_dtype() == "F32"
        assert piece[-1, 1:5:2].tolist() == [19.0, 21.0]
        assert piece[..., -1].tolist() == [5.0, 11.0, 17.0, 23.0]
        assert piece[None, 0].shape == (1, 6)
        assert seen == [(3, slice(1, 5, 2)), (slice(0, 4, 1), 5), Ellipsis]


# ---- save_model / load_model -------------------------------------------------------------------------------------

class _Tied(nn.Module):
    """An embedding whose weight the output layer shares (a tied language-model head)."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(5, 3)
        self.head = nn.Linear(3, 5, bias=False)
        self.head.weight = self.emb.weight


def test_save_file_refuses_tied_weights_and_points_at_save_model(tmp_path):
    with pytest.raises(RuntimeError, match=r"(?s)share memory.*\[\['emb.weight', 'head.weight'\]\].*save_model"):
        es.save_file(_Tied().state_dict(), tmp_path / "t.safetensors")
    w = ember.ones(3, 4)
    with pytest.raises(RuntimeError, match="share memory"):
        es.save({"all": w, "row": w[1]})
    assert not (tmp_path / "t.safetensors").exists()


def test_save_model_stores_tied_weights_once_and_load_model_restores_them(tmp_path):
    ember.manual_seed(0)
    model = _Tied()
    es.save_model(model, tmp_path / "m.safetensors", metadata={"user": "kept"})
    with es.safe_open(tmp_path / "m.safetensors") as f:
        assert f.keys() == ["emb.weight"]
        assert f.metadata() == {"user": "kept", "head.weight": "emb.weight"}
    fresh = _Tied()
    assert es.load_model(fresh, tmp_path / "m.safetensors") == ([], [])
    np.testing.assert_array_equal(fresh.emb.weight.detach().numpy(), model.emb.weight.detach().numpy())
    assert fresh.head.weight is fresh.emb.weight
    x = ember.tensor([1, 4])
    np.testing.assert_allclose(fresh.head(fresh.emb(x)).detach().numpy(), model.head(model.emb(x)).detach().numpy())


def test_save_model_does_not_change_the_callers_metadata(tmp_path):
    meta = {"a": "b"}
    es.save_model(_Tied(), tmp_path / "m.safetensors", metadata=meta)
    assert meta == {"a": "b"}


def test_load_model_reports_missing_and_unexpected_names(tmp_path):
    es.save_file({"weight": ember.ones(2, 3), "extra": ember.zeros(1)}, tmp_path / "l.safetensors")
    model = nn.Linear(3, 2)
    with pytest.raises(RuntimeError, match='Error\\(s\\) in loading state_dict for Linear:\n    Missing key\\(s\\) '
                                           'in state_dict: "bias"\n    Unexpected key\\(s\\) in state_dict: "extra"'):
        es.load_model(model, tmp_path / "l.safetensors")
    missing, unexpected = es.load_model(model, tmp_path / "l.safetensors", strict=False)
    assert (missing, unexpected) == (["bias"], ["extra"])
    assert model.weight.tolist() == [[1.0] * 3] * 2


def test_save_model_makes_tensors_contiguous_unless_told_not_to(tmp_path):
    class Transposed(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("w", ember.arange(12.0).reshape(3, 4).t())

    es.save_model(Transposed(), tmp_path / "c.safetensors")
    assert es.load_file(tmp_path / "c.safetensors")["w"].tolist() == ember.arange(12.0).reshape(3, 4).t().tolist()
    with pytest.raises(ValueError, match="non contiguous tensor: `w`.*force_contiguous=True"):
        es.save_model(Transposed(), tmp_path / "n.safetensors", force_contiguous=False)


def test_save_model_keeps_the_name_that_covers_a_shared_buffer(tmp_path):
    class Views(nn.Module):
        def __init__(self, partial_only: bool):
            super().__init__()
            base = ember.arange(12.0).reshape(3, 4)
            if not partial_only:
                self.register_buffer("whole", base)
            self.register_buffer("row", base[1])
            self.register_buffer("rows", base[:2])

    es.save_model(Views(False), tmp_path / "v.safetensors")
    with es.safe_open(tmp_path / "v.safetensors") as f:
        assert f.keys() == ["whole"] and f.metadata() == {"row": "whole", "rows": "whole"}
    with pytest.raises(RuntimeError, match="found no suitable name to keep"):
        es.save_model(Views(True), tmp_path / "p.safetensors")


# ---- atomic saves ------------------------------------------------------------------------------------------------

def test_a_failed_save_leaves_the_previous_file(tmp_path, monkeypatch):
    path = tmp_path / "a.safetensors"
    es.save_file({"old": ember.arange(3.0)}, path)
    before = path.read_bytes()

    class FailsMidWrite:
        def __init__(self, out):
            self.out = out

        def write(self, data):
            self.out.write(data[: len(data) // 2])
            self.out.flush()
            raise OSError("disk full")

    def write_half(target, write):
        atomic.write_atomic(target, lambda out: write(FailsMidWrite(out)))

    monkeypatch.setattr(fmt, "write_atomic", write_half)
    for save in (lambda: es.save_file({"new": ember.ones(1000)}, path),
                 lambda: fmt.save_state({"new": ember.ones(1000)}, path)):
        with pytest.raises(OSError, match="disk full"):
            save()
        assert path.read_bytes() == before
        assert sorted(p.name for p in tmp_path.iterdir()) == ["a.safetensors"]  # no temporary left behind
    assert es.load_file(path)["old"].tolist() == [0.0, 1.0, 2.0]


def test_refused_tensors_leave_the_previous_file(tmp_path):
    path = tmp_path / "r.safetensors"
    es.save_file({"old": ember.ones(2)}, path)
    with pytest.raises(ValueError, match="non contiguous"):
        es.save_file({"t": ember.ones(2, 3).t()}, path)
    assert es.load_file(path)["old"].tolist() == [1.0, 1.0]


# ---- errors ------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("bad, found", [([ember.ones(1)], "list"), (ember.ones(1), "Tensor")])
def test_only_dicts_of_tensors_save(tmp_path, bad, found):
    with pytest.raises(ValueError, match=f"Expected a dict of \\[str, ember.Tensor\\] but received .*{found}"):
        es.save_file(bad, tmp_path / "x.safetensors")
    with pytest.raises(TypeError, match=f"Expected a dict.*{found}"):  # ember.save's kind of error
        fmt.save_state(bad, tmp_path / "x.safetensors")


def test_values_must_be_tensors_and_keys_strings():
    with pytest.raises(ValueError, match="Key `a` is invalid, expected ember.Tensor but received <class 'int'>"):
        es.save({"a": 1})
    with pytest.raises(TypeError, match="Key `a` is invalid.*numpy.ndarray"):
        fmt.save_state({"a": np.ones(2)}, io.BytesIO())
    with pytest.raises(TypeError, match="by str, but a key is int 1"):
        es.save({1: ember.ones(1)})


def test_non_contiguous_tensors_are_refused_as_safetensors_torch_does():
    base = ember.arange(12.0).reshape(3, 4)
    for view in (base.t(), base[:, ::2], base.expand(2, 3, 4)):
        with pytest.raises(ValueError, match="non contiguous tensor: `v`.*`.contiguous\\(\\)`"):
            es.save({"v": view})
    assert es.load(es.save({"v": base.t().contiguous()}))["v"].tolist() == base.t().tolist()
    assert es.load(es.save({"v": base[1:]}))["v"].tolist() == base[1:].tolist()  # a contiguous view is fine


def _file_with_dtype(tmp_path, code: str, data: bytes, shape: list[int]):
    header = json.dumps({"x": {"dtype": code, "shape": shape, "data_offsets": [0, len(data)]}}).encode()
    header += b" " * (-len(header) % 8)
    path = tmp_path / f"{code}.safetensors"
    path.write_bytes(struct.pack("<Q", len(header)) + header + data)
    return path


def test_bfloat16_files_load_as_bfloat16(tmp_path):
    path = _file_with_dtype(tmp_path, "BF16", b"\x80\x3f\x00\x40", [2])  # 1.0, 2.0
    for load in (lambda: es.load_file(path), lambda: es.load(path.read_bytes()), lambda: fmt.load_state(path)):
        x = load()["x"]
        assert x.dtype == ember.bfloat16 and x.float().tolist() == [1.0, 2.0]
    with es.safe_open(path) as f:
        piece = f.get_slice("x")
        assert piece.get_dtype() == "BF16" and piece.get_shape() == [2]
        assert piece[1:].float().tolist() == [2.0]
    back = es.load(es.save({"y": ember.tensor([0.5, -3.0]).bfloat16()}))["y"]
    assert back.dtype == ember.bfloat16 and back.float().tolist() == [0.5, -3.0]


@pytest.mark.parametrize("code, data", [("C64", b"\0" * 8), ("U16", b"\1\0"), ("F8_E4M3", b"\1")])
def test_other_dtypes_ember_lacks_are_refused_by_name(tmp_path, code, data):
    path = _file_with_dtype(tmp_path, code, data, [1])
    with pytest.raises(TypeError, match=f"'x' of safetensors dtype {code}: ember has no dtype for it"):
        es.load_file(path)


def test_damaged_files_raise_the_packages_error_or_corrupt_file(tmp_path):
    data = es.save({"a": ember.arange(10.0), "b": ember.ones(3, dtype=ember.int64)})
    (tmp_path / "t.safetensors").write_bytes(data[:-3])
    with pytest.raises(safetensors.SafetensorError):
        es.load_file(tmp_path / "t.safetensors")
    with pytest.raises(CorruptFile, match="not a valid safetensors file"):
        fmt.load_state(tmp_path / "t.safetensors")
    for damaged in (data[:-3], data[:5], b"", b"PK\x03\x04 a zip, not safetensors"):
        with pytest.raises(safetensors.SafetensorError):
            es.load(damaged)
        with pytest.raises(CorruptFile):
            fmt.load_state(io.BytesIO(damaged))
    with pytest.raises(FileNotFoundError):
        es.load_file(tmp_path / "missing.safetensors")


def test_bit_flipped_files_load_or_are_refused(tmp_path):
    """No byte string crashes the reader: every damaged copy loads or raises one of the documented errors."""
    data = bytearray(es.save({"a": ember.arange(10.0), "b": ember.ones(3, dtype=ember.int64)}, metadata={"k": "v"}))
    rng = np.random.default_rng(0)
    for _ in range(300):
        flipped = bytearray(data)
        at = int(rng.integers(len(flipped)))
        flipped[at] ^= 1 << int(rng.integers(8))
        try:
            loaded = fmt.load_state(io.BytesIO(bytes(flipped)))
        except (CorruptFile, TypeError):
            continue
        assert all(isinstance(t, ember.Tensor) for t in loaded.values())


def test_a_missing_package_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "safetensors", None)  # import safetensors now raises ImportError
    for call in (lambda: es.save({"a": ember.ones(1)}), lambda: fmt.load_state(io.BytesIO(b"")),
                 lambda: es.safe_open("x.safetensors")):
        with pytest.raises(ImportError, match=r"pip install 'ember\[safetensors\]'"):
            call()


def test_ember_imports_without_the_package():
    import subprocess

    code = ("import sys; sys.modules['safetensors'] = None; import ember, ember.utils.safetensors; "
            "print(ember.ones(1).tolist())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[1.0]"


# ---- where tensors load ------------------------------------------------------------------------------------------

def test_map_location_sees_cpu_as_the_saved_device(tmp_path):
    es.save_file({"a": ember.arange(3.0)}, tmp_path / "m.safetensors")
    seen = []
    loaded = fmt.load_state(tmp_path / "m.safetensors", map_location=lambda t, saved: seen.append(saved) or t * 2)
    assert seen == ["cpu"] and loaded["a"].tolist() == [0.0, 2.0, 4.0]
    for location in (None, "cpu", ember.device("cpu"), {"cpu": "cpu"}, lambda t, saved: None):
        loaded = fmt.load_state(tmp_path / "m.safetensors", map_location=location)
        assert loaded["a"].device == ember.device("cpu") and loaded["a"].tolist() == [0.0, 1.0, 2.0]


@pytest.mark.skipif(ember.cuda.is_available(), reason="checks the CPU-only error")
def test_cuda_placement_without_cuda_says_so(tmp_path):
    es.save_file({"a": ember.ones(1)}, tmp_path / "c.safetensors")
    with pytest.raises(RuntimeError, match="CUDA"):
        es.load_file(tmp_path / "c.safetensors", device="cuda")
    with pytest.raises(RuntimeError, match="CUDA"):
        fmt.load_state(tmp_path / "c.safetensors", map_location="cuda")


@needs_cuda
def test_cuda_tensors_save_through_the_host_and_load_where_asked(tmp_path):
    state = {"w": ember.arange(12.0, device="cuda").reshape(3, 4), "i": ember.tensor([1, 2], device="cuda")}
    es.save_file(state, tmp_path / "g.safetensors")
    on_cpu = es.load_file(tmp_path / "g.safetensors")
    assert not on_cpu["w"].is_cuda and on_cpu["w"].tolist() == state["w"].cpu().tolist()
    for device in ("cuda", "cuda:0", 0, ember.device("cuda")):
        on_gpu = es.load_file(tmp_path / "g.safetensors", device=device)
        assert on_gpu["w"].is_cuda and on_gpu["i"].cpu().tolist() == [1, 2]
    with es.safe_open(tmp_path / "g.safetensors", device="cuda") as f:
        part = f.get_slice("w")[1:, 2]
        assert part.is_cuda and part.cpu().tolist() == [6.0, 10.0]
    assert fmt.load_state(tmp_path / "g.safetensors", map_location="cuda")["w"].is_cuda
    with pytest.raises(RuntimeError, match="share memory"):
        es.save({"w": state["w"], "row": state["w"][0]})
    es.save_file({"row": state["w"][1]}, tmp_path / "r.safetensors")  # a view of a bigger device buffer
    assert es.load_file(tmp_path / "r.safetensors")["row"].tolist() == [4.0, 5.0, 6.0, 7.0]


@needs_cuda
def test_tied_cuda_model_round_trips(tmp_path):
    model = _Tied().to("cuda")
    es.save_model(model, tmp_path / "m.safetensors")
    fresh = _Tied().to("cuda")
    assert es.load_model(fresh, tmp_path / "m.safetensors", device="cuda") == ([], [])
    assert fresh.emb.weight.is_cuda and fresh.head.weight is fresh.emb.weight
    np.testing.assert_array_equal(fresh.emb.weight.detach().cpu().numpy(), model.emb.weight.detach().cpu().numpy())


# ---- ember.save / ember.load of .safetensors paths ------------------------------------------------------------

def test_ember_save_load_dispatch_by_extension(tmp_path):
    state = _state()
    ember.save(state, tmp_path / "m.safetensors")
    _assert_same(es.load_file(tmp_path / "m.safetensors"), state)
    _assert_same(ember.load(tmp_path / "m.safetensors"), state)
    _assert_same(ember.load(str(tmp_path / "m.safetensors"), weights_only=True), state)


def test_ember_save_load_dispatch_by_format_argument(tmp_path):
    state = _state()
    ember.save(state, tmp_path / "weights.bin", format="safetensors")
    _assert_same(es.load_file(tmp_path / "weights.bin"), state)
    _assert_same(ember.load(tmp_path / "weights.bin", format="safetensors"), state)
    buf = io.BytesIO()
    ember.save(state, buf, format="safetensors")
    assert buf.getvalue() == es.save(state)
    buf.seek(0)
    _assert_same(ember.load(buf, format="safetensors"), state)


def test_ember_save_load_dispatch_module_state_and_map_location(tmp_path):
    layer = nn.Linear(3, 2)
    ember.save(layer.state_dict(), tmp_path / "l.safetensors")
    fresh = nn.Linear(3, 2)
    fresh.load_state_dict(ember.load(tmp_path / "l.safetensors", map_location="cpu"))
    np.testing.assert_array_equal(fresh.weight.detach().numpy(), layer.weight.detach().numpy())
    seen = []
    ember.load(tmp_path / "l.safetensors", map_location=lambda t, saved: seen.append(saved))
    assert seen == ["cpu", "cpu"]


def test_ember_save_load_dispatch_refuses_what_safetensors_cannot_hold(tmp_path):
    with pytest.raises(TypeError, match="Expected a dict of \\[str, ember.Tensor\\] but received .*list"):
        ember.save([ember.ones(1)], tmp_path / "x.safetensors")
    with pytest.raises(TypeError, match="Key `step` is invalid"):
        ember.save({"step": 3}, tmp_path / "x.safetensors")
    with pytest.raises(RuntimeError, match="share memory"):
        ember.save(_Tied().state_dict(), tmp_path / "x.safetensors")
    (tmp_path / "bad.safetensors").write_bytes(b"\x08\0\0\0\0\0\0\0{bad json")
    with pytest.raises(RuntimeError, match="bad.safetensors"):  # ember.load names the damaged file
        ember.load(tmp_path / "bad.safetensors")
