"""Definitions shared by the CPU and CUDA kernels, written once for both.

Scalar functions (``numba.njit(inline="always")`` functions of numbers) that
the CPU inlines into its loops and the GPU builds as device functions (one way:
``ember.kernels.cuda.device_functions``), and the plain-Python tables and rules
that name them: ``scalar_ops`` and ``elementwise`` (the elementwise ops),
``reductions``, ``activations`` (the fused activations), ``sorting`` (the key
order), ``pooling`` (the max window), ``optim_updates`` (the optimizer steps),
``recurrent`` (the gates' tanh) and ``dtypes`` (the dtype kernels compute in: float16 and bfloat16 widened to
float32).
Beside them, the neutral helpers that are no backend's kernels, which the tensor layer takes from here too:
``layout`` (array layout facts: element strides, dense views, view roots, dimension collapsing), ``conv`` (the
geometry array of the conv kernels) and ``quiet`` (NumPy ufunc calls with floating-point warnings off).

Imports NumPy, Numba (never ``numba.cuda``), ml_dtypes (NumPy's bfloat16) and ``ember.opcodes`` only; both
backends import it, and it imports neither.
"""
