"""Compile every CUDA kernel the simulator tests launch with the real numba-cuda compiler, without a GPU.

The simulator runs kernels as Python, so it accepts code the real compiler
rejects (an untyped float16 math call, a Python object in a kernel). This tool
closes that gap on machines with no GPU:

1. ``record``: runs ``tests/cuda`` under ``NUMBA_ENABLE_CUDASIM=1`` with this
   module as a pytest plugin; every kernel launch is written down as the
   kernel's code, its closure (device functions recursively, other values
   pickled) and the Numba types of its arguments.
2. ``compile``: in a process with the real ``numba.cuda``, rebuilds each
   recorded kernel from its code in ember's real modules and compiles it to PTX
   for a compute capability (9.0 by default) through NVVM. No driver is touched.

``python tools/cuda_compile_check.py`` does both and prints one line per
failing kernel. It needs NVVM (a CUDA toolkit) and NVRTC (``pip install
nvidia-cuda-nvrtc``, used for float16) on the machine, but no GPU.
"""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import marshal
import os
import pickle
import subprocess
import sys
import types
from collections import Counter

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RECORD_ENV = "EMBER_KERNEL_RECORD"


# ----------------------------------------------------------------------------------------------- recording

def _function_spec(fn: types.FunctionType) -> tuple:
    cells = tuple(_value_spec(c.cell_contents) for c in fn.__closure__ or ())
    defaults = tuple(_value_spec(v) for v in fn.__defaults__ or ())
    module = sys.modules.get(fn.__module__)
    home = getattr(module, "__dict__", {})
    # globals rebound for the device (a twin in place of a CPU helper) differ from the module's own
    rebound = tuple((name, _value_spec(fn.__globals__[name])) for name in fn.__code__.co_names
                    if name in fn.__globals__ and home.get(name) is not fn.__globals__[name])
    return ("fn", fn.__module__, getattr(module, "__file__", None), marshal.dumps(fn.__code__), fn.__name__, cells,
            defaults, rebound)


def _value_spec(value: object) -> tuple:
    from numba.cuda.simulator.kernel import FakeCUDAKernel

    if isinstance(value, FakeCUDAKernel):
        return ("cuda.jit", value._device, _function_spec(value.fn))
    if isinstance(value, types.FunctionType):
        return ("py", _function_spec(value))
    return ("value", pickle.dumps(value))


def _argument_type(arg: object):
    import numpy as np
    from numba import types as nt
    from numba.np.numpy_support import from_dtype

    array = getattr(arg, "_ary", arg)  # a simulator device array keeps its host array in ``_ary``
    if isinstance(array, np.ndarray) and array.ndim > 0:
        flags = array.flags
        layout = "C" if flags.c_contiguous else "F" if flags.f_contiguous else "A"
        return nt.Array(from_dtype(array.dtype), array.ndim, layout)
    if isinstance(array, np.ndarray):
        return from_dtype(array.dtype)
    if isinstance(arg, (bool, np.bool_)):
        return nt.boolean
    if isinstance(arg, int):
        return nt.int64
    if isinstance(arg, float):
        return nt.float64
    if isinstance(arg, np.generic):
        return from_dtype(arg.dtype)
    if isinstance(arg, tuple):
        return nt.Tuple(tuple(_argument_type(a) for a in arg))
    raise TypeError(f"cannot type kernel argument {type(arg).__name__}")


def pytest_configure(config) -> None:
    """Wrap the simulator's launch so that each distinct (kernel, argument types) is written down once."""
    path = os.environ.get(RECORD_ENV)
    if not path:
        return
    from numba.cuda.simulator import kernel as sim

    seen: dict = {}
    launch = sim.FakeCUDAKernel.__call__

    shipped = tuple(os.path.join(ROOT, d) + os.sep for d in ("ember", "examples"))

    def recording_call(self, *args):
        # ember's kernels and the examples' (a test's own helper kernels are not shipped code)
        if not (self._device or sim._kernel_context) and self.fn.__code__.co_filename.startswith(shipped):
            try:
                argtypes = tuple(_argument_type(a) for a in args)
                key = (id(self), argtypes)  # the kernel object is kept below, so its id is not reused
                if key not in seen:
                    seen[key] = (self, (_function_spec(self.fn), pickle.dumps(argtypes)), self.fn.__qualname__)
            except Exception as exc:  # a kernel we cannot describe is reported, not hidden
                seen.setdefault(repr(exc), (None, ("unrecordable", self.fn.__module__, self.fn.__qualname__,
                                                   repr(exc)), "?"))
        return launch(self, *args)

    sim.FakeCUDAKernel.__call__ = recording_call
    config._ember_kernel_records = (path, seen)


def pytest_unconfigure(config) -> None:
    records = getattr(config, "_ember_kernel_records", None)
    if records:
        path, seen = records
        with open(path, "wb") as f:
            pickle.dump([(entry, qualname) for _, entry, qualname in seen.values()], f)


# ----------------------------------------------------------------------------------------------- compiling

def _rebuild_value(spec: tuple, cuda):
    kind = spec[0]
    if kind == "cuda.jit":
        fn = _rebuild_function(spec[2], cuda)
        return cuda.jit(device=True)(fn) if spec[1] else cuda.jit(fn)
    if kind == "py":
        return _rebuild_function(spec[1], cuda)
    return pickle.loads(spec[1])


def _module(name: str, path: str | None):
    """Import ``name``, or load it from ``path`` (a test or example module that is not on ``sys.path``)."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError:
        if not path:
            raise
    loaded = importlib.util.spec_from_file_location(name, path)
    module = sys.modules[name] = importlib.util.module_from_spec(loaded)
    loaded.loader.exec_module(module)
    return module


def _rebuild_function(spec: tuple, cuda) -> types.FunctionType:
    _, module, path, code, name, cells, defaults, rebound = spec
    namespace = _module(module, path).__dict__
    if rebound:
        namespace = {**namespace, **{k: _rebuild_value(v, cuda) for k, v in rebound}}
    closure = tuple(types.CellType(_rebuild_value(c, cuda)) for c in cells) or None
    return types.FunctionType(marshal.loads(code), namespace, name,
                              tuple(_rebuild_value(d, cuda) for d in defaults) or None, closure)


def _pretend_device(cc: tuple[int, int]) -> None:
    """Device functions compile for the current device's capability: answer it without a driver."""
    from numba.cuda import dispatcher

    class _Device:
        compute_capability = cc
        id = 0

    dispatcher.get_current_device = lambda: _Device()


def _canonical(spec: tuple) -> tuple:
    """``spec`` with code objects in place of their marshal bytes (which vary with reference counts; code objects
    compare by value), so one kernel recorded several times compiles once."""
    if spec[0] == "fn":
        _, module, path, code, name, cells, defaults, rebound = spec
        return ("fn", module, marshal.loads(code), name, tuple(_canonical(c) for c in cells),
                tuple(_canonical(d) for d in defaults), tuple((k, _canonical(v)) for k, v in rebound))
    if spec[0] == "cuda.jit":
        return ("cuda.jit", spec[1], _canonical(spec[2]))
    if spec[0] == "py":
        return ("py", _canonical(spec[1]))
    return spec


def compile_all(path: str, cc: tuple[int, int]) -> int:
    """Compile each recorded kernel to PTX; print failures; return how many failed."""
    from numba import cuda

    _pretend_device(cc)
    with open(path, "rb") as f:
        records = pickle.load(f)
    failures, compiled, done = Counter(), 0, set()
    for entry, qualname in records:
        if entry[0] == "unrecordable":
            failures[f"{entry[1]}.{entry[2]}: not recorded ({entry[3]})"] += 1
            continue
        key = (_canonical(entry[0]), pickle.loads(entry[1]))  # numba types compare by value; their pickles vary
        if key in done:
            continue
        done.add(key)
        spec, argtypes = entry[0], pickle.loads(entry[1])
        try:
            cuda.compile_ptx(_rebuild_function(spec, cuda), argtypes, cc=cc)
            compiled += 1
        except Exception as exc:
            first = str(exc).strip().splitlines()
            failures[f"{spec[1]}.{qualname}{tuple(str(t) for t in argtypes)}: "
                     f"{type(exc).__name__}: {first[0][:200] if first else ''}"] += 1
    for line in sorted(failures):
        print("FAIL", line)
    print(f"{compiled} kernel signatures compiled for sm_{cc[0]}{cc[1]}, {sum(failures.values())} failed")
    return sum(failures.values())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("step", nargs="?", choices=("all", "record", "compile"), default="all")
    parser.add_argument("--records", default=os.path.join(ROOT, ".kernel_records.pkl"))
    parser.add_argument("--cc", default="9.0", help="compute capability to compile for")
    parser.add_argument("--tests", nargs="+", default=["tests/cuda"], help="what the record step runs")
    args = parser.parse_args()
    cc = tuple(int(p) for p in args.cc.split("."))
    if args.step in ("all", "record"):
        env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", **{RECORD_ENV: args.records})
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [ROOT, os.path.join(ROOT, "tools"), env.get("PYTHONPATH")]))
        subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "cuda_compile_check",
                        *args.tests], cwd=ROOT, env=env, check=False)
    if args.step in ("all", "compile"):
        env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
        if env != dict(os.environ):  # the compile step needs the real numba.cuda
            return subprocess.run([sys.executable, __file__, "compile", "--records", args.records, "--cc", args.cc],
                                  env=env).returncode
        return 1 if compile_all(args.records, cc) else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
