"""ember.profiler on CUDA tensors: ops bracketed by timing events fill cuda_time, only when CUDA is requested."""
from __future__ import annotations

import json

import ember
from ember.profiler import ProfilerActivity, profile

BOTH = [ProfilerActivity.CPU, ProfilerActivity.CUDA]


def _program(device: str) -> None:
    x = ember.ones(4, device=device, requires_grad=True)
    (x * x).sum().backward()


def test_cuda_ops_get_device_time_and_cpu_ops_do_not():
    with profile(activities=BOTH) as prof:
        _program("cuda")
        ember.ones(2, requires_grad=True) * 3
    device_muls = [e for e in prof.events() if e.name == "ember::mul" and e.device_index == 0]
    host_muls = [e for e in prof.events() if e.name == "ember::mul" and e.device_index == -1]
    assert len(device_muls) == 3 and len(host_muls) == 1  # x * x, then MulBackward0's two products (as torch counts)
    assert [e.cpu_parent is None for e in device_muls].count(True) == 1
    assert all(e.cuda_time_total > 0 for e in device_muls) and host_muls[0].cuda_time_total == 0
    for event in prof.events():
        assert 0 <= event.self_cuda_time_total <= event.cuda_time_total
    averages = prof.key_averages()
    assert {e.key: e.count for e in averages}["MulBackward0"] == 1
    assert all(e.cuda_time_total > 0 for e in averages if e.key in ("ember::sum", "MulBackward0", "SumBackward0"))


def test_table_shows_cuda_columns_sorted_by_cuda_time():
    with profile(activities=BOTH) as prof:
        _program("cuda")
    averages = prof.key_averages()
    text = averages.table(sort_by="cuda_time_total", row_limit=3)
    header = [h.strip() for h in text.splitlines()[1].split("  ") if h.strip()]
    assert header[6:10] == ["Self CUDA", "Self CUDA %", "CUDA total", "CUDA time avg"]
    assert "Self CUDA time total:" in text
    expected = [e.key for e in sorted(averages, key=lambda e: e.cuda_time_total, reverse=True)][:3]
    assert [line.split()[0] for line in text.splitlines()[3:6]] == expected


def test_without_the_cuda_activity_nothing_is_timed_on_the_device():
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        _program("cuda")
    assert all(e.cuda_time_total == 0 for e in prof.events())
    assert "CUDA" not in prof.key_averages().table()


def test_chrome_trace_has_a_kernel_span_per_timed_op(tmp_path):
    with profile(activities=BOTH) as prof:
        _program("cuda")
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())["traceEvents"]
    kernels = [e for e in trace if e["cat"] == "kernel"]
    assert len(kernels) == sum(e.device_index >= 0 for e in prof.events())
    assert all(e["ph"] == "X" and e["dur"] > 0 and e["ts"] >= 0 for e in kernels)


def test_legacy_use_cuda_spelling():
    with ember.autograd.profiler.profile(use_cuda=True) as prof:
        _program("cuda")
    mul = next(e for e in prof.function_events if e.name == "ember::mul")
    assert mul.cuda_time_total > 0 and prof.total_average().cuda_time_total >= mul.cuda_time_total
