"""ember: PyTorch's programming model in pure Python, on NumPy and Numba.

``import ember as torch`` gives the familiar names: tensors, dtypes, creation
functions, elementwise and reduction ops, views, matmul, autograd.

This module only re-exports: each name comes from the module that defines it, where its argument guard is
applied too (``ember.tensor.arguments``). Importing the layers binds ``Tensor``'s methods
(``ember.tensor.methods``, which ``ember.linalg`` hands its methods to).
"""
from . import _runtime  # noqa: F401  (must run before Numba is imported)

from . import autograd, linalg, random
from .autograd import enable_grad, inference_mode, is_anomaly_check_nan_enabled, is_anomaly_enabled, \
    is_grad_enabled, is_inference_mode_enabled, no_grad, set_grad_enabled
from .tensor.creation import arange, as_tensor, empty, empty_like, eye, from_numpy, full, full_like, linspace, \
    logspace, ones, ones_like, tensor, zeros, zeros_like
from .tensor.conversion import clone
from .tensor.device import device
from .tensor.dtypes import (  # noqa: A004 - torch's names
    bfloat16, bool, can_cast, dtype, float16, float32, float64, get_default_dtype, int8, int16, int32, int64,
    promote_types, result_type, set_default_dtype, uint8,
)
from .tensor.elementwise import add, addcdiv, addcmul, angle, bitwise_not, clamp, deg2rad, div, floor_divide, \
    isfinite, isinf, isnan, isneginf, isposinf, lerp, logical_not, mul, nan_to_num, positive, pow, rad2deg, round, \
    signbit, sub
from .tensor.elementwise_functions import *  # noqa: F401,F403  (ember.sin, ember.atan2, ember.sin_, ember.arcsin, ...)
from .tensor.indexing import argwhere, gather, index_add, index_copy, index_fill, index_put, index_put_, \
    index_select, masked_fill, masked_scatter, masked_select, nonzero, put, scatter, scatter_add, scatter_reduce, \
    take, take_along_dim, where
from .tensor.joins import atleast_1d, atleast_2d, atleast_3d, block_diag, broadcast_tensors, cartesian_prod, cat, \
    column_stack, concat, concatenate, diag, diag_embed, diagflat, diff, dstack, flip, fliplr, flipud, hstack, \
    meshgrid, repeat_interleave, roll, rot90, row_stack, stack, tile, tril, tril_indices, triu, triu_indices, vstack
from .tensor.closeness import allclose, equal, isclose
from .tensor.composite import float_power, heaviside, ldexp, ldexp_, logaddexp, logaddexp2, logit, logit_, sinc, \
    sinc_
from .tensor.contractions import cdist, einsum, inner, kron, tensordot, trace
from .tensor.nan_reduce import nanmean, nansum
from .tensor.matmul import addmm, bmm, dot, matmul, mm, mv, outer, outer as ger  # ger: torch's older name
from .tensor.memory_format import channels_last, channels_last_3d, contiguous_format, memory_format, \
    preserve_format
from .tensor.printing import get_printoptions, set_printoptions
from .tensor.random import Generator, default_generator, fork_rng, get_rng_state, initial_seed, manual_seed, \
    seed, set_rng_state
from .tensor.random_ops import bernoulli, multinomial, normal, rand, rand_like, randint, randint_like, randn, \
    randn_like, randperm
from .tensor.reduce import all, amax, amin, any, argmax, argmin, count_nonzero, cumprod, cumsum, logcumsumexp, \
    logsumexp, max, mean, median, min, norm, prod, std, std_mean, sum, var, var_mean
from .tensor.sorting import argsort, bincount, bucketize, cummax, cummin, histc, isin, kthvalue, mode, msort, \
    searchsorted, sort, topk, unique, unique_consecutive
from .linalg import det, inv as inverse, matrix_power
from .linalg.legacy import cholesky, cross, logdet, pinverse, qr, slogdet, svd
from .tensor.tensor import Size, Tensor, is_tensor
from .tensor.views import as_strided, broadcast_to, chunk, diagonal, expand, flatten, movedim, narrow, permute, \
    reshape, select, split, squeeze, t, transpose, unbind, unflatten, unsqueeze
from .tensor.views import movedim as moveaxis, transpose as swapaxes, transpose as swapdims  # torch's other names

from . import nn  # noqa: E402

globals().update(nn.functional.torch_functions())  # nn's functions torch also exports here: conv2d, softmax, ...

from . import cuda, optim, utils  # noqa: E402  (ember.cuda imports no numba-cuda until CUDA is used)
from . import profiler  # noqa: E402  (hooks nothing until a profile records)
from . import multiprocessing  # noqa: E402  (tensors sent between processes travel as shared memory)
from .serialization import load, save  # noqa: E402
from .utils.dlpack import from_dlpack  # noqa: E402  (and ember.utils.dlpack, as torch.utils.dlpack)

__version__ = "0.1.0"

float = float32  # noqa: A001 - torch's aliases
double = float64
half = float16
long = int64
int = int32  # noqa: A001
short = int16


# -- the everyday surface around the ops (issue 16): new imports go below this line --
from .tensor.blas_like import addbmm, addmv, addmv_, addr, baddbmm, chain_matmul, vdot  # noqa: E402
from .tensor.index_reduce import index_reduce  # noqa: E402
from .tensor.integration import cumulative_trapezoid, trapezoid, trapz  # noqa: E402
from .tensor.reduce import aminmax, nanmedian  # noqa: E402
from .tensor.renorm import renorm  # noqa: E402
from .tensor.special_math import frexp, i0, i0_, igamma, igammac, mvlgamma, polygamma  # noqa: E402
from .tensor.statistics import corrcoef, cov, histogram  # noqa: E402
from .tensor.windows import bartlett_window, blackman_window, hamming_window, hann_window, \
    kaiser_window  # noqa: E402
from .linalg.cholesky_solves import cholesky_inverse, cholesky_solve  # noqa: E402
from .linalg.householder import geqrf, householder_product as orgqr, ormqr  # noqa: E402
from .linalg.legacy import frobenius_norm, lu, lu_solve, nuclear_norm, triangular_solve, vander  # noqa: E402
from .linalg.pivoted_lu import lu_unpack  # noqa: E402
from .linalg.removed import eig, lstsq, matrix_rank, solve, symeig  # noqa: E402  (torch's raising stubs)
from .tensor.type_info import finfo, iinfo  # noqa: E402
from .tensor.splits import dsplit, hsplit, split_with_sizes, tensor_split, unsafe_chunk, unsafe_split, \
    unsafe_split_with_sizes, vsplit  # noqa: E402
from .tensor.shape_utils import broadcast_shapes, combinations, ravel, unravel_index  # noqa: E402
from .tensor.creation import asarray, empty_strided, scalar_tensor  # noqa: E402
from .tensor.range_factory import range  # noqa: E402,A004  (torch's deprecated inclusive range)
from .tensor.scatter_views import as_strided_scatter, diagonal_scatter, select_scatter, slice_scatter  # noqa: E402
from .tensor.view_copies import alias_copy, as_strided_copy, detach_copy, diagonal_copy, expand_copy, \
    narrow_copy, permute_copy, select_copy, slice_copy, split_copy, split_with_sizes_copy, squeeze_copy, t_copy, \
    transpose_copy, unbind_copy, unfold_copy, unsqueeze_copy, view_copy  # noqa: E402
from .tensor.predicates import adjoint, conj, conj_physical, conj_physical_, get_device, is_complex, is_conj, \
    is_floating_point, is_inference, is_neg, is_nonzero, is_same_size, is_signed, numel, resolve_conj, \
    resolve_neg  # noqa: E402
from .tensor.views import resize_as_  # noqa: E402
from .autograd.anomaly_mode import set_anomaly_enabled  # noqa: E402
from math import e, inf, nan, pi  # noqa: E402  (torch.e, torch.inf, torch.nan, torch.pi)
from .tensor.quantile import nanquantile, quantile  # noqa: E402
from .linalg.matrix_functions import matrix_exp  # noqa: E402
from .linalg.norms import dist  # noqa: E402
from . import accelerator, backends, distributed, futures  # noqa: E402
from ._settings import get_default_device, get_float32_matmul_precision, get_num_interop_threads, \
    get_num_threads, is_storage, set_default_device, set_float32_matmul_precision, set_num_interop_threads, \
    set_num_threads, typename  # noqa: E402
from . import hub, testing  # noqa: E402  (torch.hub's checkpoint cache, torch.testing's assert_close/make_tensor)
from . import _dynamo, compiler  # noqa: E402  (torch.compiler, torch._dynamo's reset/explain/config)
from .compiler import compile  # noqa: E402,A004  (torch.compile)
from . import special  # noqa: E402  (torch.special)
from . import func  # noqa: E402  (torch.func)
from . import distributions  # noqa: E402  (torch.distributions)
from .distributions._sampling import binomial, poisson, standard_gamma as _standard_gamma  # noqa: E402
from .tensor.legacy_types import CPU_TYPES as _LEGACY_TYPES, set_default_tensor_type  # noqa: E402
from ._determinism import are_deterministic_algorithms_enabled, get_deterministic_debug_mode, \
    is_deterministic_algorithms_warn_only_enabled, set_deterministic_debug_mode, \
    use_deterministic_algorithms  # noqa: E402
from .utils import deterministic as _deterministic  # noqa: E402,F401  (ember.utils.deterministic)
from . import amp, cpu  # noqa: E402  (torch.amp, torch.cpu.amp; ember.cuda.amp with ember.cuda)
from .amp.autocast_mode import autocast, autocast_decrement_nesting, autocast_increment_nesting, \
    clear_autocast_cache, get_autocast_cpu_dtype, get_autocast_dtype, get_autocast_gpu_dtype, \
    is_autocast_cache_enabled, is_autocast_cpu_enabled, is_autocast_enabled, set_autocast_cache_enabled, \
    set_autocast_cpu_dtype, set_autocast_cpu_enabled, set_autocast_dtype, set_autocast_enabled, \
    set_autocast_gpu_dtype  # noqa: E402

globals().update(_LEGACY_TYPES)  # FloatTensor, LongTensor, ... (torch's legacy tensor types, made from a table)

# Start-up policy, not exports, run last, once everything ember imports exists: one BLAS thread unless the
# environment says otherwise (every BLAS library loaded by now is capped), and the collector stops walking every
# object the imports above made (see ``_runtime.freeze_imported_objects``).
_settings.apply_blas_default()
_runtime.freeze_imported_objects()
