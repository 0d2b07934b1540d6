"""Reverse-mode automatic differentiation: ``backward``, ``grad``, ``Function`` and grad modes."""
from __future__ import annotations

from . import grad_mode, graph
from .anomaly_mode import detect_anomaly, is_anomaly_check_nan_enabled, is_anomaly_enabled, set_detect_anomaly
from .function import Function, FunctionCtx, Node, once_differentiable
from .grad_mode import enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad, \
    set_grad_enabled
from .gradients import backward, grad
from .gradcheck import gradcheck, gradgradcheck
from .variable import Variable
from . import forward_ad, functional, variable

__all__ = [
    "backward", "grad", "Function", "FunctionCtx", "Node", "once_differentiable", "no_grad", "enable_grad",
    "set_grad_enabled", "inference_mode", "is_grad_enabled", "is_inference_mode_enabled", "gradcheck",
    "gradgradcheck", "graph", "detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled",
    "is_anomaly_check_nan_enabled", "forward_ad", "Variable", "grad_mode", "variable", "functional",
]
