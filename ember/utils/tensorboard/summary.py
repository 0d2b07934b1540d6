"""The ``Summary`` protocol buffers SummaryWriter writes, built with tensorboard's own proto classes and plugin
metadata helpers from ember tensors, NumPy arrays and numbers (the same records torch.utils.tensorboard writes)."""
from __future__ import annotations

import functools
import io
from typing import Any, Sequence

import numpy as np
from google.protobuf import struct_pb2
from tensorboard.compat.proto.summary_pb2 import HistogramProto, Summary, SummaryMetadata
from tensorboard.compat.proto.tensor_pb2 import TensorProto
from tensorboard.plugins.hparams import api_pb2, plugin_data_pb2
from tensorboard.plugins.hparams import metadata as hparams_metadata
from tensorboard.plugins.scalar import metadata as scalar_metadata
from tensorboard.plugins.text import metadata as text_metadata
from tensorboard.util import tensor_util

from ...tensor.tensor import Tensor


def to_numpy(value: Any, op: str) -> np.ndarray:
    """An ember Tensor (detached, on the host), a NumPy array or a number as a NumPy array."""
    if isinstance(value, Tensor):
        return value.detach().cpu().numpy()
    if isinstance(value, np.ndarray):
        return value
    if np.isscalar(value):
        return np.array([value])
    raise TypeError(f"SummaryWriter.{op}: expected an ember Tensor, a NumPy array or a number, "
                    f"got {type(value).__name__}")


def scalar(tag: str, value: Any, new_style: bool = False, double_precision: bool = False) -> Summary:
    """One scalar: a ``simple_value`` or, with ``new_style``, a float (or double) tensor for the scalars plugin."""
    array = to_numpy(value, "add_scalar").squeeze()
    if array.ndim != 0:
        raise AssertionError(f"SummaryWriter.add_scalar: the value should hold one element, but it has "
                             f"{array.size} elements in {array.ndim} dimensions")
    number = float(array)
    if not new_style:
        return Summary(value=[Summary.Value(tag=tag, simple_value=number)])
    proto = TensorProto(double_val=[number], dtype="DT_DOUBLE") if double_precision else \
        TensorProto(float_val=[number], dtype="DT_FLOAT")
    plugin = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name=scalar_metadata.PLUGIN_NAME))
    return Summary(value=[Summary.Value(tag=tag, tensor=proto, metadata=plugin)])


@functools.lru_cache(maxsize=1)
def tensorflow_bins() -> tuple[float, ...]:
    """TensorFlow's default histogram bucket edges: +-1e-12 growing by 10% per bucket up to 1e20, and 0."""
    positive, edge = [], 1e-12
    while edge < 1e20:  # repeated multiplication, so the edges are the very numbers torch writes
        positive.append(edge)
        edge *= 1.1
    return (*(-v for v in reversed(positive)), 0.0, *positive)


def histogram_proto(min: float, max: float, num: int, sum: float, sum_squares: float,  # noqa: A002
                    bucket_limits: Sequence[float], bucket_counts: Sequence[float]) -> HistogramProto:
    """A histogram from its statistics; ``bucket_limits`` are the buckets' right edges."""
    return HistogramProto(min=min, max=max, num=num, sum=sum, sum_squares=sum_squares,
                          bucket_limit=list(bucket_limits), bucket=list(bucket_counts))


def histogram(tag: str, values: Any, bins: Any, max_bins: int | None = None) -> Summary:
    """A histogram of ``values`` with NumPy's ``bins`` (edges or a rule), merged down to ``max_bins`` buckets,
    trimmed to the occupied range plus one empty bucket on the left (so the leftmost edge is recorded)."""
    data = to_numpy(values, "add_histogram").astype(float).reshape(-1)
    if data.size == 0:
        raise ValueError("SummaryWriter.add_histogram: the input has no element")
    counts, edges = np.histogram(data, bins=bins)
    if max_bins is not None and len(counts) > max_bins:
        group = len(counts) // max_bins
        counts = np.pad(counts, (0, -len(counts) % group)).reshape(-1, group).sum(axis=1)
        edges = np.append(edges[:-1:group], edges[-1])
    occupied = np.flatnonzero(counts)
    first, last = int(occupied[0]), int(occupied[-1])
    counts = counts[first - 1:last + 1] if first > 0 else np.concatenate([[0], counts[:last + 1]])
    proto = histogram_proto(data.min(), data.max(), data.size, data.sum(), data.dot(data),
                            edges[first:last + 2].tolist(), counts.tolist())
    return Summary(value=[Summary.Value(tag=tag, histo=proto)])


def _grid(images: np.ndarray) -> np.ndarray:
    """NCHW images (1 or 3 channels) tiled into one 3HW picture, up to 8 per row."""
    if images.shape[1] == 1:
        images = np.repeat(images, 3, axis=1)
    if images.shape[1] != 3:
        raise AssertionError(f"SummaryWriter.add_images: images need 1 or 3 channels, got {images.shape[1]}")
    count, _, height, width = images.shape
    columns = min(count, 8)
    rows = -(-count // columns)
    canvas = np.zeros((3, height * rows, width * columns), dtype=images.dtype)
    for i, picture in enumerate(images):
        row, column = divmod(i, columns)
        canvas[:, row * height:(row + 1) * height, column * width:(column + 1) * width] = picture
    return canvas


_LAYOUTS = {2: "HW", 3: "CHW", 4: "NCHW"}


def to_hwc(array: np.ndarray, dataformats: str) -> np.ndarray:
    """An image (HW, CHW, HWC, ...) or a batch of them (NCHW, NHWC, ...) as one HWC picture with 3 or 4 channels."""
    fmt = dataformats.upper()
    canonical = _LAYOUTS.get(len(fmt))
    if canonical is None or sorted(fmt) != sorted(canonical):
        raise AssertionError(f"SummaryWriter: dataformats must order the letters of HW, CHW or NCHW, got "
                             f"{dataformats!r}")
    if array.ndim != len(fmt):
        raise AssertionError(f"SummaryWriter: an image of shape {array.shape} does not match dataformats "
                             f"{dataformats!r}")
    array = array.transpose([fmt.index(c) for c in canonical])
    if len(fmt) == 4:
        array = _grid(array)
    elif len(fmt) == 2:
        array = array[None]
    hwc = array.transpose(1, 2, 0)
    return np.repeat(hwc, 3, axis=2) if hwc.shape[2] == 1 else hwc


def image(tag: str, img: Any, dataformats: str) -> Summary:
    """A PNG image: uint8 data as is, any other dtype read as [0, 1] and scaled to [0, 255] (clipped)."""
    from PIL import Image  # pillow comes with tensorboard

    array = to_hwc(to_numpy(img, "add_image"), dataformats)
    scale = 1 if array.dtype == np.uint8 else 255
    pixels = (array.astype(np.float32) * scale).clip(0, 255).astype(np.uint8)
    height, width, channels = pixels.shape
    png = io.BytesIO()
    Image.fromarray(pixels).save(png, format="PNG")
    encoded = Summary.Image(height=height, width=width, colorspace=channels, encoded_image_string=png.getvalue())
    return Summary(value=[Summary.Value(tag=tag, image=encoded)])


def text(tag: str, text_string: str) -> Summary:
    """A string for the text plugin, under ``<tag>/text_summary`` as torch writes it."""
    proto = tensor_util.make_tensor_proto(np.array([text_string], dtype=object))
    plugin = text_metadata.create_summary_metadata(display_name=None, description=None)
    return Summary(value=[Summary.Value(tag=f"{tag}/text_summary", metadata=plugin, tensor=proto)])


def _hparams_summary(tag: str, **plugin_data: Any) -> Summary:
    content = plugin_data_pb2.HParamsPluginData(**plugin_data)
    return Summary(value=[Summary.Value(tag=tag, metadata=hparams_metadata.create_summary_metadata(content))])


def _hparam_field(name: str, value: Any) -> tuple[str, int]:
    """The ``struct_pb2.Value`` field and hparams DataType a value is recorded with (bools as numbers, as torch)."""
    if isinstance(value, (int, float)):
        return "number_value", api_pb2.DATA_TYPE_FLOAT64
    if isinstance(value, str):
        return "string_value", api_pb2.DATA_TYPE_STRING
    raise ValueError(f"SummaryWriter.add_hparams: hparam {name!r} should be one of int, float, str, bool, or "
                     f"Tensor, got {type(value).__name__}")


def hparams(hparam_dict: dict, metric_dict: dict, domains: dict | None) -> tuple[Summary, Summary, Summary]:
    """The hparams plugin's experiment, session-start and session-end records for one run."""
    if not isinstance(hparam_dict, dict) or not isinstance(metric_dict, dict):
        raise TypeError("hparam_dict and metric_dict should be dictionary.")
    domains = domains or {}
    if not isinstance(domains, dict):
        raise TypeError("parameter: hparam_domain_discrete should be a dictionary, nothing logged.")
    for name, values in domains.items():
        if name not in hparam_dict or not isinstance(values, list) or \
                not all(isinstance(v, type(hparam_dict[name])) for v in values):
            raise TypeError(f"parameter: hparam_domain_discrete[{name}] should be a list of same type as "
                            f"hparam_dict[{name}].")
    start = plugin_data_pb2.SessionStartInfo()
    infos = []
    for name, value in hparam_dict.items():
        if value is None:
            continue
        if isinstance(value, Tensor):
            value = float(to_numpy(value, "add_hparams").reshape(-1)[0])
        field, data_type = _hparam_field(name, value)
        setattr(start.hparams[name], field, value)
        domain = None
        if name in domains:
            domain = struct_pb2.ListValue(values=[struct_pb2.Value(**{field: v}) for v in domains[name]])
        infos.append(api_pb2.HParamInfo(name=name, type=data_type, domain_discrete=domain))
    experiment = api_pb2.Experiment(hparam_infos=infos,
                                    metric_infos=[api_pb2.MetricInfo(name=api_pb2.MetricName(tag=k))
                                                  for k in metric_dict])
    end = plugin_data_pb2.SessionEndInfo(status=api_pb2.STATUS_SUCCESS)
    return (_hparams_summary(hparams_metadata.EXPERIMENT_TAG, experiment=experiment),
            _hparams_summary(hparams_metadata.SESSION_START_INFO_TAG, session_start_info=start),
            _hparams_summary(hparams_metadata.SESSION_END_INFO_TAG, session_end_info=end))
