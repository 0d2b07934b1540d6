"""ember.profiler: exact call counts, self/total times and nesting, record_function rows, the table, Chrome traces,
schedules, Numba compile rows, the legacy ``ember.autograd.profiler`` spelling, and no hooks when not profiling."""
from __future__ import annotations

import json

import numba
import pytest

import ember
from ember.autograd import Function, engine, function
from ember.profiler import ProfilerAction, ProfilerActivity, profile, record_function, schedule
from ember.profiler.events import COMPILE_PREFIX
from ember.profiler.recording import op_name
from ember.profiler.table import format_time

CPU = [ProfilerActivity.CPU]


def _counts(prof) -> dict[str, int]:
    """Calls per op name; kernel compile rows left out (whether a kernel compiles or loads from the cache during
    the block depends on what ran before, so counting them made these tests order-dependent)."""
    return {e.key: e.count for e in prof.key_averages() if not e.key.startswith(COMPILE_PREFIX)}


def _run_known_program() -> None:
    """3 muls and 1 sum forward; 3 MulBackward0 and 1 SumBackward0 nodes backward, which run 4 more muls (torch's
    profiler counts 7 aten::mul for this program too)."""
    x = ember.ones(3, requires_grad=True)
    y = (x * 2) * 3
    (y * y).sum().backward()


class Inner(Function):
    @staticmethod
    def forward(ctx, x):
        return x.detach() + 1

    @staticmethod
    def backward(ctx, g):
        return g


class Outer(Function):
    """Calls Inner twice inside its forward: Inner counts toward Outer's total, not its self time."""

    @staticmethod
    def forward(ctx, x):
        return Inner.apply(Inner.apply(x))

    @staticmethod
    def backward(ctx, g):
        return g


def test_counts_exactly_right_for_a_known_program():
    with profile(activities=CPU) as prof:
        _run_known_program()
    counts = _counts(prof)
    assert counts["ember::mul"] == 7
    assert counts["ember::sum"] == 1
    assert counts["MulBackward0"] == 3
    assert counts["SumBackward0"] == 1


def test_self_time_never_exceeds_total_and_totals_add_up():
    with profile(activities=CPU) as prof:
        _run_known_program()
    for event in prof.events():
        assert 0 <= event.self_cpu_time_total <= event.cpu_time_total
        children = sum(c.cpu_time_total for c in event.cpu_children)
        assert event.self_cpu_time_total == pytest.approx(event.cpu_time_total - children, abs=1e-6)
    for avg in prof.key_averages():
        assert 0 <= avg.self_cpu_time_total <= avg.cpu_time_total
        assert avg.cpu_time == pytest.approx(avg.cpu_time_total / avg.count)


def test_nested_ops_count_toward_the_outer_total_not_its_self_time():
    x = ember.ones(2, requires_grad=True)
    with profile(activities=CPU) as prof:
        Outer.apply(x)
    outer = next(e for e in prof.events() if e.name == "Outer")
    inners = [e for e in prof.events() if e.name == "Inner"]
    assert len(inners) == 2 and outer.cpu_children == inners
    assert all(e.cpu_parent is outer for e in inners)
    inner_total = sum(e.cpu_time_total for e in inners)
    assert outer.cpu_time_total >= inner_total
    assert outer.self_cpu_time_total == pytest.approx(outer.cpu_time_total - inner_total, abs=1e-6)
    assert all(e.start_us >= outer.start_us and e.end_us <= outer.end_us for e in inners)


def test_op_names_follow_torch_style_for_ember_ops_and_class_names_for_custom_ones():
    from ember.tensor.elementwise import _BINARY_CLASSES
    from ember.tensor.indexing import ScatterReduce
    from ember.tensor.matmul import MatMul

    assert op_name(_BINARY_CLASSES["mul"]) == "ember::mul"
    assert op_name(ScatterReduce) == "ember::scatter_reduce"
    assert op_name(MatMul) == "ember::matmul"
    assert op_name(Outer) == "Outer"


def test_record_function_rows_as_context_manager_and_decorator():
    @record_function("decorated")
    def double(t):
        return t * 2

    x = ember.ones(2, requires_grad=True)
    with profile(activities=CPU) as prof:
        with record_function("region"):
            x * 5
        double(x)
        double(x)
    counts = _counts(prof)
    assert counts["region"] == 1 and counts["decorated"] == 2
    region = next(e for e in prof.events() if e.name == "region")
    assert region.is_user_annotation
    assert [c.name for c in region.cpu_children] == ["ember::mul"]
    assert all(len(e.cpu_children) == 1 for e in prof.events() if e.name == "decorated")
    assert double(ember.ones(1)).tolist() == [2.0]  # outside a profile it only runs the function


def _table_rows(text: str) -> list[list[str]]:
    lines = text.splitlines()
    separators = [i for i, line in enumerate(lines) if line.startswith("---")]
    return [line.split() for line in lines[separators[1] + 1:separators[2]]]


def test_table_is_sorted_limited_and_laid_out_like_torch():
    with profile(activities=CPU) as prof:
        _run_known_program()
    averages = prof.key_averages()
    text = averages.table(sort_by="count", row_limit=2)
    rows = _table_rows(text)
    assert len(rows) == 2
    assert [int(r[-1]) for r in rows] == sorted((e.count for e in averages), reverse=True)[:2]
    header = text.splitlines()[1].split("  ")
    assert [h.strip() for h in header if h.strip()] == ["Name", "Self CPU %", "Self CPU", "CPU total %",
                                                        "CPU total", "CPU time avg", "# of Calls"]
    assert f"Self CPU time total: {format_time(averages.self_cpu_time_total)}" in text
    by_self = _table_rows(averages.table(sort_by="self_cpu_time_total", row_limit=0))
    expected = sorted(averages, key=lambda e: e.self_cpu_time_total, reverse=True)
    assert [r[0] for r in by_self] == [e.key for e in expected]
    with pytest.raises(AttributeError, match="sort_by"):
        averages.table(sort_by="no_such_column")


def test_table_header_matches_torch(torch_ref):
    with torch_ref.profiler.profile(activities=[torch_ref.profiler.ProfilerActivity.CPU]) as tprof:
        torch_ref.ones(2) * 2
    with profile(activities=CPU) as prof:
        ember.ones(2, requires_grad=True) * 2
    torch_header = tprof.key_averages().table(row_limit=1).splitlines()[1]
    ours = prof.key_averages().table(row_limit=1).splitlines()[1]
    assert ours.split("  ")[-12:] == torch_header.split("  ")[-12:]


def test_format_time_units():
    assert format_time(1.5) == "1.500us"
    assert format_time(1500.0) == "1.500ms"
    assert format_time(2.5e6) == "2.500s"


def test_record_shapes_and_grouping_by_input_shape():
    a = ember.ones(2, 3, requires_grad=True)
    with profile(activities=CPU, record_shapes=True) as prof:
        a * 2
        a * a
    muls = [e for e in prof.events() if e.name == "ember::mul"]
    assert [e.input_shapes for e in muls] == [[[2, 3], []], [[2, 3], [2, 3]]]
    grouped = prof.key_averages(group_by_input_shape=True)
    assert sorted(e.input_shapes for e in grouped if e.key == "ember::mul") == [[[2, 3], []], [[2, 3], [2, 3]]]
    assert "Input Shapes" in grouped.table()


def test_with_stack_points_at_the_calling_test():
    with profile(activities=CPU, with_stack=True) as prof:
        ember.ones(2, requires_grad=True) * 2
    mul = next(e for e in prof.events() if e.name == "ember::mul")
    assert "test_profiler.py" in mul.stack[0] and "test_with_stack_points_at_the_calling_test" in mul.stack[0]


def test_chrome_trace_is_valid_json_with_complete_events(tmp_path):
    with profile(activities=CPU) as prof:
        with record_function("region"):
            _run_known_program()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())["traceEvents"]
    assert len(trace) == len(prof.events())
    assert all(e["ph"] == "X" and e["ts"] >= 0 and e["dur"] >= 0 for e in trace)
    assert sorted(e["name"] for e in trace) == sorted(e.name for e in prof.events())
    region = next(e for e in trace if e["name"] == "region")
    assert region["cat"] == "user_annotation"
    assert all(region["ts"] <= e["ts"] and e["ts"] + e["dur"] <= region["ts"] + region["dur"] + 1e-3
               for e in trace if e["name"] == "ember::mul")


def test_schedule_matches_torch(torch_ref):
    ours = schedule(wait=1, warmup=1, active=2, repeat=2, skip_first=1)
    theirs = torch_ref.profiler.schedule(wait=1, warmup=1, active=2, repeat=2, skip_first=1)
    assert [ours(s).name for s in range(14)] == [theirs(s).name for s in range(14)]


def test_schedule_records_only_active_steps_and_hands_each_trace_over():
    traces = []
    x = ember.ones(2, requires_grad=True)
    with profile(activities=CPU, schedule=schedule(wait=1, warmup=1, active=2, repeat=2),
                 on_trace_ready=lambda p: traces.append(p.events())) as prof:
        for _ in range(10):
            x * 2
            prof.step()
    assert len(traces) == 2
    assert [sorted(e.name for e in t if e.name.startswith("ProfilerStep")) for t in traces] == \
        [["ProfilerStep#2", "ProfilerStep#3"], ["ProfilerStep#6", "ProfilerStep#7"]]
    assert [sum(e.name == "ember::mul" for e in t) for t in traces] == [2, 2]
    assert prof.events() is traces[-1]
    assert prof.current_action is ProfilerAction.NONE


def test_schedule_rejects_a_cycle_without_active_steps():
    with pytest.raises(ValueError, match="active"):
        schedule(wait=1, warmup=0, active=0)


def test_compile_rows_on_the_first_call_of_a_fresh_njit_function():
    @numba.njit
    def triple(a):
        return a * 3

    class Triple(Function):
        @staticmethod
        def forward(ctx, x):
            return triple(x.detach().numpy())

    x = ember.ones(3)
    with profile(activities=CPU) as prof:
        first = Triple.apply(x)
        Triple.apply(x)
    assert first.tolist() == [3.0, 3.0, 3.0]
    name = "numba::compile " + triple.py_func.__qualname__
    compiles = [e for e in prof.events() if e.name == name]
    assert len(compiles) == 1 and compiles[0].cpu_time_total > 0
    op = compiles[0].cpu_parent
    assert op.name == "Triple" and op.self_cpu_time_total < op.cpu_time_total
    assert prof.events().compile_time_total >= compiles[0].self_cpu_time_total
    assert "Kernel compile time total:" in prof.key_averages().table()


def test_no_hooks_when_not_profiling_even_after_an_error():
    assert Function.__dict__["apply"] is function._PLAIN_APPLY and engine._NODE_WRAPPER is None
    with pytest.raises(ValueError):
        with profile(activities=CPU):
            assert Function.__dict__["apply"] is not function._PLAIN_APPLY and engine._NODE_WRAPPER is not None
            raise ValueError("boom")
    assert Function.__dict__["apply"] is function._PLAIN_APPLY and engine._NODE_WRAPPER is None


def test_profiles_do_not_nest():
    with profile(activities=CPU):
        with pytest.raises(RuntimeError, match="already enabled"):
            with profile(activities=CPU):
                pass


def test_legacy_autograd_profiler_spelling():
    legacy = ember.autograd.profiler
    with legacy.profile(use_cuda=False, record_shapes=True) as prof:
        with legacy.record_function("legacy_region"):
            _run_known_program()
    assert _counts(prof)["ember::mul"] == 7 and _counts(prof)["legacy_region"] == 1
    assert len(prof.function_events) == len(prof.events())
    assert prof.self_cpu_time_total == pytest.approx(sum(e.self_cpu_time_total for e in prof.events()))
    assert prof.total_average().count == len(prof.events())
    assert len(_table_rows(prof.table(row_limit=0))) == len(prof.events())
    with legacy.profile(enabled=False) as off:
        _run_known_program()
    assert len(off.function_events) == 0


def test_grad_free_elementwise_ops_are_recorded():
    x = ember.ones(3)
    with profile(activities=CPU) as prof:
        with ember.no_grad():
            (x * 2).exp()
    assert _counts(prof) == {"ember::mul": 1, "ember::exp": 1}
