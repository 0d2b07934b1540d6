"""ember's global switches (ember/_settings.py) against torch: the default device, typename/is_storage, threads.

Which creation functions follow the default device is compared with torch's under its "meta" device: ember has
no meta tensors, so it is given "cuda" instead, which (without a GPU) raises exactly where the default is used.
"""
from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import ember

ROOT = Path(__file__).resolve().parents[1]
CUDA_USABLE = ember.cuda.is_available()


@pytest.fixture
def default_device():
    """Leave the default device as the test found it (the CPU)."""
    yield
    ember.set_default_device(None)


CREATIONS = {
    "zeros": lambda m: m.zeros(2), "ones": lambda m: m.ones(2), "empty": lambda m: m.empty(2),
    "full": lambda m: m.full((2,), 1.0), "rand": lambda m: m.rand(2), "randn": lambda m: m.randn(2),
    "randint": lambda m: m.randint(0, 3, (2,)), "randperm": lambda m: m.randperm(3), "arange": lambda m: m.arange(3),
    "linspace": lambda m: m.linspace(0, 1, 3), "logspace": lambda m: m.logspace(0, 1, 3), "eye": lambda m: m.eye(2),
    "tensor": lambda m: m.tensor([1.0]), "as_tensor": lambda m: m.as_tensor([1.0]),
    "tensor(cpu tensor)": lambda m: m.tensor(m.ones(2, device="cpu")),
    "as_tensor(cpu tensor)": lambda m: m.as_tensor(m.ones(2, device="cpu")),
    "Linear": lambda m: m.nn.Linear(2, 2).weight, "Conv2d": lambda m: m.nn.Conv2d(1, 1, 1).bias,
    "BatchNorm1d buffer": lambda m: m.nn.BatchNorm1d(2).running_mean,
    "normal(floats)": lambda m: m.normal(0.0, 1.0, (2,)), "from_numpy": lambda m: m.from_numpy(np.ones(2)),
    "zeros_like": lambda m: m.zeros_like(m.ones(2, device="cpu")),
    "rand_like": lambda m: m.rand_like(m.ones(2, device="cpu")),
    "new_zeros": lambda m: m.ones(2, device="cpu").new_zeros(2),
    "explicit cpu": lambda m: m.zeros(2, device="cpu"), "Generator": lambda m: m.Generator(),
}


@pytest.mark.filterwarnings("ignore:To copy construct from a tensor")
@pytest.mark.parametrize("create", CREATIONS.values(), ids=CREATIONS.keys())
def test_the_functions_that_follow_the_default_device_are_torchs(torch_ref, default_device, create):
    torch_ref.set_default_device("meta")
    try:
        follows = create(torch_ref).device.type == "meta"
    finally:
        torch_ref.set_default_device(None)
    ember.set_default_device("cuda")
    if CUDA_USABLE:
        assert (create(ember).device.type == "cuda") is follows
    elif follows:
        with pytest.raises(AssertionError, match="CUDA"):  # also a RuntimeError: torch's two errors for no CUDA
            create(ember)
    else:
        assert create(ember).device.type == "cpu"


def test_set_and_get_default_device(torch_ref, default_device):
    assert ember.get_default_device() == str(torch_ref.get_default_device()) == "cpu"
    ember.set_default_device(ember.device("cpu"))
    assert ember.get_default_device() == "cpu" and ember.zeros(1).device == "cpu"
    ember.set_default_device("cuda")
    if not CUDA_USABLE:
        with pytest.raises(AssertionError):
            ember.get_default_device()  # torch's CPU build: "Torch not compiled with CUDA enabled"
    ember.set_default_device(None)
    assert ember.get_default_device() == "cpu"
    for module in (ember, torch_ref):
        with pytest.raises(RuntimeError, match="device type at start of device string"):
            module.set_default_device("nonsense")


def test_the_default_device_is_per_thread(default_device):
    ember.set_default_device("cuda")
    seen = []
    worker = threading.Thread(target=lambda: seen.append((ember.get_default_device(), ember.zeros(1).device)))
    worker.start()
    worker.join(timeout=60)
    assert seen == [(ember.device("cpu"), ember.device("cpu"))]


def _creates_away_from_cpu(module) -> bool:
    """Whether ``module.zeros(1)`` goes to the other device (torch: meta; ember: CUDA, which raises without one)."""
    try:
        return module.zeros(1).device.type != "cpu"
    except AssertionError:
        return module is ember and not CUDA_USABLE


@pytest.mark.parametrize("module_name, other", [("ember", "cuda"), ("torch", "meta")])
def test_with_device_sets_the_default_inside_the_block_only(torch_ref, default_device, module_name, other):
    module = ember if module_name == "ember" else torch_ref
    try:
        with module.device(other) as entered:
            assert entered == module.device(other) and _creates_away_from_cpu(module)
            with module.device("cpu"):
                assert not _creates_away_from_cpu(module)
            assert _creates_away_from_cpu(module)
            if module is ember:  # torch 2.13's function-mode stack stays broken after this (not copied)
                module.set_default_device("cpu")
                assert not _creates_away_from_cpu(module)
        assert not _creates_away_from_cpu(module)  # the block's end put back what it found
        module.set_default_device(other)
        with module.device("cpu"):
            assert not _creates_away_from_cpu(module)
        assert _creates_away_from_cpu(module)
    finally:
        module.set_default_device(None)


def test_generator_takes_a_device_and_exposes_it(torch_ref):
    for device in ("cpu", ember.device("cpu"), "cpu:0", None):
        theirs = torch_ref.Generator(device=None if device is None else str(device)).device
        assert ember.Generator(device=device).device == str(theirs) == "cpu"
    assert ember.Generator().device == "cpu"
    if not CUDA_USABLE:
        with pytest.raises(RuntimeError):
            ember.Generator("cuda")


# -- typename / is_storage ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("make", [lambda m: 1, lambda m: int, lambda m: [], lambda m: len, lambda m: "s",
                                  lambda m: m.zeros(1), lambda m: m.zeros(1, dtype=m.int64),
                                  lambda m: m.zeros(1, dtype=m.bool), lambda m: m.zeros(1, dtype=m.float64),
                                  lambda m: m.zeros(2, requires_grad=True)])
def test_typename_matches_torch(torch_ref, make):
    assert ember.typename(make(ember)) == torch_ref.typename(make(torch_ref))


def test_typename_of_ember_classes_and_instances_names_their_module():
    assert ember.typename(ember.nn.Linear(1, 1)) == "ember.nn.modules.linear.Linear"
    assert ember.typename(ember.nn.Parameter) == "ember.nn.parameter.Parameter"
    assert ember.typename(test_typename_matches_torch) == f"{__name__}.test_typename_matches_torch"


def test_is_storage_is_false_without_storage_objects(torch_ref):
    for obj in (ember.zeros(2), [1], None, np.zeros(2)):
        assert ember.is_storage(obj) is False
    assert torch_ref.is_storage(torch_ref.zeros(2)) is False


# -- threads --------------------------------------------------------------------------------------------------------

def _blas_threads() -> list[int]:
    from threadpoolctl import threadpool_info

    return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]


@pytest.fixture
def threads():
    """Put the thread counts back after the test."""
    import numba

    before, numba_before, blas_before = ember.get_num_threads(), numba.get_num_threads(), max(_blas_threads())
    yield
    ember.set_num_threads(before)
    numba.set_num_threads(numba_before)
    from threadpoolctl import threadpool_limits

    threadpool_limits(blas_before, user_api="blas")


@pytest.mark.parametrize("bad", [0, -1, "2", 2.0, True])
@pytest.mark.parametrize("name", ["set_num_threads", "set_num_interop_threads"])
def test_thread_count_errors_match_torch(torch_ref, name, bad):
    for module in (ember, torch_ref):
        with pytest.raises(RuntimeError) as caught:
            getattr(module, name)(bad)
        if module is ember:
            ours = str(caught.value)
    assert ours == str(caught.value)


def test_set_num_threads_caps_numba_and_the_blas(threads):
    import numba

    ember.set_num_threads(1)
    assert ember.get_num_threads() == 1 and numba.get_num_threads() == 1 and max(_blas_threads()) == 1
    ember.set_num_threads(np.int64(64))  # more than the cores: Numba's pool size, the BLAS one thread per core
    assert ember.get_num_threads() == 64
    assert numba.get_num_threads() == numba.config.NUMBA_NUM_THREADS
    assert set(_blas_threads()) == {numba.config.NUMBA_DEFAULT_NUM_THREADS}


def test_interop_threads_can_be_set_once(torch_ref, monkeypatch):
    monkeypatch.setattr(ember._settings, "_interop_threads", None)
    assert ember.get_num_interop_threads() == torch_ref.get_num_interop_threads()
    ember.set_num_interop_threads(3)
    assert ember.get_num_interop_threads() == 3
    with pytest.raises(RuntimeError, match="cannot set number of interop threads"):
        ember.set_num_interop_threads(2)


def test_the_default_intra_op_count_is_one_thread_per_available_core(monkeypatch):
    if "NUMBA_NUM_THREADS" in os.environ:
        pytest.skip("Numba's pool size chosen through the environment")
    import numba

    monkeypatch.setattr(ember._settings, "_intra_op_threads", None)  # as before any set_num_threads
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert ember.get_num_threads() == numba.config.NUMBA_NUM_THREADS == cores


BLAS_PROBE = ("import json, threadpoolctl; {first}import ember, os; print(json.dumps([os.environ.get("
              "'OPENBLAS_NUM_THREADS'), [l['num_threads'] for l in threadpoolctl.threadpool_info() "
              "if l['user_api'] == 'blas']]))")


@pytest.mark.parametrize("first", ["", "import numpy; "], ids=["ember first", "numpy first"])
def test_the_blas_starts_with_one_thread_unless_the_environment_says(first):
    import json

    env = {k: v for k, v in os.environ.items() if k not in ember._settings.BLAS_THREAD_VARIABLES}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    probe = BLAS_PROBE.format(first=first)
    run = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    variable, counts = json.loads(run.stdout)
    assert variable is None and counts and set(counts) == {1}  # capped through threadpoolctl, not the variable
    if (os.cpu_count() or 1) >= 2:
        env["OPENBLAS_NUM_THREADS"] = "2"
        run = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr[-2000:]
        assert json.loads(run.stdout) == ["2", [2] * len(counts)]
