"""ember.accelerator and ember.backends against torch's CPU build: same answers, defaults, switches and errors.

Where ember lacks a library torch's CPU build has (oneDNN, distributed), ember's truthful answer is checked
instead. The no-accelerator tests need a machine where ember's CUDA backend is unusable (no GPU, no simulator).
"""
from __future__ import annotations

import importlib
import warnings

import pytest

import ember

no_accelerator = pytest.mark.skipif(ember.cuda.is_available(), reason="CUDA is usable here: an accelerator exists")


def _outcome(call):
    """What ``call()`` did: ("ok", result) or (exception type name, message)."""
    try:
        return "ok", call()
    except Exception as exc:  # noqa: BLE001 - the comparison is the point
        return type(exc).__name__, str(exc)


def _enter(context):
    with context:
        return None


# -- accelerator -------------------------------------------------------------------------------------------------

@no_accelerator
def test_no_accelerator_is_reported_as_torch_cpu_reports_it(torch_ref):
    for name in ("is_available", "device_count", "current_accelerator"):
        assert getattr(ember.accelerator, name)() == getattr(torch_ref.accelerator, name)()
    assert ember.accelerator.current_accelerator(check_available=True) is None
    assert ember.accelerator.device_count() == 0


ACCELERATOR_CALLS = {
    "current_device_index": lambda m: m.accelerator.current_device_index(),
    "set_device_index(0)": lambda m: m.accelerator.set_device_index(0),
    "set_device_index(-1)": lambda m: m.accelerator.set_device_index(-1),
    "set_device_index('cpu')": lambda m: m.accelerator.set_device_index("cpu"),
    "synchronize()": lambda m: m.accelerator.synchronize(),
    "synchronize(0)": lambda m: m.accelerator.synchronize(0),
    "synchronize('cuda')": lambda m: m.accelerator.synchronize("cuda"),
    "current_stream()": lambda m: m.accelerator.current_stream(),
    "empty_cache()": lambda m: m.accelerator.empty_cache(),
    "memory_allocated(0)": lambda m: m.accelerator.memory_allocated(0),
    "memory_stats('cpu')": lambda m: m.accelerator.memory_stats("cpu"),
    "max_memory_reserved()": lambda m: m.accelerator.max_memory_reserved(),
    "reset_peak_memory_stats()": lambda m: m.accelerator.reset_peak_memory_stats(),
    "device_index(0)": lambda m: _enter(m.accelerator.device_index(0)),
    "device_index(None)": lambda m: _enter(m.accelerator.device_index(None)),
    "device(0)": lambda m: m.device(0),
    "device(None)": lambda m: m.device(None),
}


@no_accelerator
@pytest.mark.parametrize("call", ACCELERATOR_CALLS.values(), ids=ACCELERATOR_CALLS.keys())
def test_without_an_accelerator_calls_succeed_or_fail_as_in_torch(torch_ref, call):
    ours, theirs = _outcome(lambda: call(ember)), _outcome(lambda: call(torch_ref))
    assert ours[0] == theirs[0]
    if ours[0] == "RuntimeError":
        assert ours[1] == theirs[1]


def test_a_device_object_is_accepted_where_torch_accepts_one(torch_ref):
    assert ember.device(ember.device("cpu")) == "cpu"
    assert str(ember.device(ember.device("cuda", 1))) == str(torch_ref.device(torch_ref.device("cuda", 1)))


@no_accelerator
@pytest.mark.parametrize("name, args", [("current_device_idx", ()), ("set_device_idx", (0,))])
def test_the_deprecated_index_aliases_warn_then_act(name, args):
    with pytest.warns(FutureWarning, match="instead"), pytest.raises(RuntimeError, match="none is available"):
        getattr(ember.accelerator, name)(*args)


# -- backends: answers and defaults --------------------------------------------------------------------------------

SAME_AS_TORCH_CPU = [
    "cudnn.is_available()", "cudnn.version()", "cudnn.enabled", "cudnn.benchmark", "cudnn.deterministic",
    "cudnn.allow_tf32", "cudnn.benchmark_limit", "mps.is_available()", "mps.is_built()", "cuda.matmul.allow_tf32",
    "cuda.matmul.allow_fp16_reduced_precision_reduction", "cuda.matmul.allow_bf16_reduced_precision_reduction",
    "mkldnn.enabled", "mkldnn.deterministic",
]


@pytest.mark.parametrize("expression", SAME_AS_TORCH_CPU)
def test_backends_answers_and_defaults_match_torch_cpu(torch_ref, expression):
    assert eval(f"ember.backends.{expression}") == eval(f"torch_ref.backends.{expression}")  # noqa: S307


def test_opt_einsum_answers_as_torch_without_the_package(torch_ref):
    if torch_ref.backends.opt_einsum.is_available():
        pytest.skip("opt_einsum is installed: torch uses it, ember never does")
    for name in ("enabled", "strategy"):
        assert getattr(ember.backends.opt_einsum, name) == getattr(torch_ref.backends.opt_einsum, name)
    assert ember.backends.opt_einsum.is_available() is False
    assert ember.backends.opt_einsum.get_opt_einsum() is None
    for kwargs in ({"enabled": True}, {"strategy": "auto"}):
        for module in (ember, torch_ref):
            block = module.backends.opt_einsum.flags(**kwargs)
            with pytest.raises(ValueError, match="opt_einsum is not available"), block:
                pass
    with ember.backends.opt_einsum.flags(enabled=False):
        assert ember.backends.opt_einsum.enabled is False


def test_cpu_capability_is_torchs_name_for_this_cpu(torch_ref, monkeypatch):
    monkeypatch.delenv("ATEN_CPU_CAPABILITY", raising=False)
    assert ember.backends.cpu.get_cpu_capability() in ("AVX512", "AVX2", "DEFAULT")
    assert ember.backends.cpu.get_cpu_capability() == torch_ref.backends.cpu.get_cpu_capability()


def test_what_ember_lacks_is_reported_truthfully():
    import numpy as np

    assert ember.backends.mkldnn.is_available() is False  # torch's CPU build has oneDNN; ember does not
    assert ember.backends.cudnn.is_acceptable(ember.zeros(1)) is False
    blas = np.__config__.CONFIG["Build Dependencies"]["blas"]["name"]
    assert ember.backends.mkl.is_available() is ("mkl" in blas.lower())
    assert ember.backends.openmp.is_available() is (importlib.util.find_spec("numba.np.ufunc.omppool") is not None)
    try:
        importlib.import_module("numba.cuda")
        has_numba_cuda = True
    except Exception:  # noqa: BLE001
        has_numba_cuda = False
    assert ember.backends.cuda.is_built() is has_numba_cuda
    assert ember.distributed.is_available() is (importlib.util.find_spec("mpi4py") is not None)
    assert set(ember.distributed.__all__) <= set(vars(ember.distributed))
    assert {"init_process_group", "all_reduce", "ReduceOp", "new_group", "barrier"} <= set(ember.distributed.__all__)


# -- backends: switches ---------------------------------------------------------------------------------------------

SWITCHES = [("cudnn", "enabled"), ("cudnn", "benchmark"), ("cudnn", "deterministic"), ("cudnn", "allow_tf32"),
            ("mkldnn", "enabled"), ("mkldnn", "deterministic"), ("cuda.matmul", "allow_tf32")]


def _target(module, path):
    target = module.backends
    for part in path.split("."):
        target = getattr(target, part)
    return target


@pytest.fixture
def restore_switches():
    """Put every switch (and the matmul precision) back as it was after the test."""
    saved = [(path, name, getattr(_target(ember, path), name)) for path, name in SWITCHES]
    precision = ember.get_float32_matmul_precision()
    yield
    for path, name, value in saved:
        setattr(_target(ember, path), name, value)
    ember.set_float32_matmul_precision(precision)


@pytest.mark.parametrize("path, name", SWITCHES)
def test_switches_take_bools_only_and_read_back(torch_ref, restore_switches, path, name):
    for bad in (1, None, "yes"):
        ours = _outcome(lambda: setattr(_target(ember, path), name, bad))
        theirs = _outcome(lambda: setattr(_target(torch_ref, path), name, bad))
        assert ours[0] == theirs[0] == "RuntimeError" and "expects a bool, but got" in ours[1]
    default = getattr(_target(ember, path), name)
    setattr(_target(ember, path), name, not default)
    assert getattr(_target(ember, path), name) is (not default)


def test_flags_blocks_set_torchs_defaults_and_restore(torch_ref, restore_switches):
    ember.backends.cudnn.benchmark = True
    inside = {}
    for module in (ember, torch_ref):
        with module.backends.cudnn.flags():
            cudnn = module.backends.cudnn
            inside[module] = [cudnn.enabled, cudnn.benchmark, cudnn.deterministic, cudnn.allow_tf32]
    assert inside[ember] == inside[torch_ref] == [False, False, False, True]
    assert ember.backends.cudnn.enabled is True and ember.backends.cudnn.benchmark is True
    with pytest.raises(RuntimeError), ember.backends.cudnn.flags(enabled=True, deterministic=3):
        pass
    assert ember.backends.cudnn.deterministic is False and ember.backends.cudnn.enabled is True
    with ember.backends.mkldnn.flags(enabled=False):
        assert ember.backends.mkldnn.enabled is False
    assert ember.backends.mkldnn.enabled is True


def test_cudnn_deterministic_does_not_switch_on_deterministic_algorithms(torch_ref, restore_switches):
    for module in (ember, torch_ref):
        module.backends.cudnn.deterministic = True
        assert module.are_deterministic_algorithms_enabled() is False
        module.backends.cudnn.deterministic = False


def test_allow_tf32_and_the_matmul_precision_move_together_as_in_torch(torch_ref, restore_switches):
    steps = [("precision", "high"), ("precision", "medium"), ("tf32", False), ("tf32", True), ("precision", "highest"),
             ("precision", "medium"), ("tf32", True)]
    try:
        for kind, value in steps:
            for module in (ember, torch_ref):
                if kind == "precision":
                    module.set_float32_matmul_precision(value)
                else:
                    module.backends.cuda.matmul.allow_tf32 = value
            assert ember.backends.cuda.matmul.allow_tf32 == torch_ref.backends.cuda.matmul.allow_tf32
            theirs = _outcome(torch_ref.get_float32_matmul_precision)  # torch 2.13 refuses some mixes of the two
            if theirs[0] == "ok":
                assert ember.get_float32_matmul_precision() == theirs[1]
    finally:
        torch_ref.set_float32_matmul_precision("highest")


def test_a_bad_precision_warns_or_raises_as_in_torch(torch_ref, restore_switches):
    for module in (ember, torch_ref):
        module.set_float32_matmul_precision("high")
        with pytest.warns(UserWarning, match="is not one of"):
            module.set_float32_matmul_precision("low")
        assert module.get_float32_matmul_precision() == "high"
        with pytest.raises(RuntimeError, match="expects a str, but got int"):
            module.set_float32_matmul_precision(3)
    torch_ref.set_float32_matmul_precision("highest")


def test_unknown_matmul_attributes_are_torchs_attribute_error(torch_ref):
    for module in (ember, torch_ref):
        with pytest.raises(AttributeError, match="Unknown attribute nonsense"):
            module.backends.cuda.matmul.nonsense  # noqa: B018
        with pytest.raises(AttributeError, match="Unknown attribute nonsense"):
            module.backends.cuda.matmul.nonsense = True
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ember.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    assert ember.backends.cuda.matmul.allow_fp16_reduced_precision_reduction is False
    ember.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = True
