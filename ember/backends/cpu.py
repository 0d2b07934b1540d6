"""``ember.backends.cpu``: the vector instructions ember's CPU kernels are compiled for."""
from __future__ import annotations

# torch's names, best first, each with the x86 features it needs.
_X86_LEVELS = (("AVX512", ("avx512f", "avx512bw", "avx512vl", "avx512dq", "fma")), ("AVX2", ("avx2", "fma")))


def get_cpu_capability() -> str:
    """torch's name for the widest vector extension of this CPU, which Numba compiles ember's kernels for (it
    targets the host): "AVX512", "AVX2" or "DEFAULT"."""
    import llvmlite.binding as llvm

    features = llvm.get_host_cpu_features()
    for name, needed in _X86_LEVELS:
        if all(features.get(feature, False) for feature in needed):
            return name
    return "DEFAULT"
