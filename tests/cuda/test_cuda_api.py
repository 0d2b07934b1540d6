"""ember.cuda's device, stream, event and seeding API under the simulator (one simulated device)."""
from __future__ import annotations

import pytest

cuda = pytest.importorskip("numba.cuda")
if not cuda.is_available():
    pytest.skip("CUDA (or the simulator) is not available", allow_module_level=True)

import ember  # noqa: E402
import ember.cuda  # noqa: E402


def test_availability_and_devices():
    assert ember.cuda.is_available() is True
    ember.cuda.init()
    assert ember.cuda.is_initialized()
    assert ember.cuda.device_count() >= 1
    assert ember.cuda.current_device() == 0
    ember.cuda.set_device(0)
    ember.cuda.set_device("cuda:0")
    ember.cuda.set_device(ember.device("cuda", 0))
    assert ember.cuda.current_device() == 0
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        ember.cuda.set_device(ember.cuda.device_count())
    with pytest.raises(ValueError, match="Expected a cuda device"):
        ember.cuda.set_device("cpu")


def test_device_context_and_device_of():
    with ember.cuda.device(0) as ctx:
        assert ember.cuda.current_device() == 0 and ctx.idx == 0
    with ember.cuda.device(None):
        assert ember.cuda.current_device() == 0
    cpu_tensor = ember.zeros(2)
    assert ember.cuda.device_of(cpu_tensor).idx == -1


def test_device_description():
    name = ember.cuda.get_device_name()
    assert isinstance(name, str) and name
    major, minor = ember.cuda.get_device_capability(0)
    assert major >= 1 and minor >= 0
    props = ember.cuda.get_device_properties("cuda:0")
    assert (props.major, props.minor) == (major, minor) and props.name == name
    assert props.multi_processor_count >= 1
    ember.cuda.synchronize()


def test_streams_and_the_stream_context():
    default = ember.cuda.default_stream()
    assert ember.cuda.current_stream() == default and ember.cuda.default_stream() is default
    s = ember.cuda.Stream()
    assert s != default and s.device == ember.device("cuda", 0)
    with ember.cuda.stream(s) as entered:
        assert entered is s and ember.cuda.current_stream() == s
        inner = ember.cuda.Stream()
        with ember.cuda.stream(inner):
            assert ember.cuda.current_stream() == inner
        assert ember.cuda.current_stream() == s
    assert ember.cuda.current_stream() == default
    with ember.cuda.stream(None):
        assert ember.cuda.current_stream() == default
    s.wait_stream(default)
    s.synchronize()
    assert s.query() is True
    assert "ember.cuda.Stream" in repr(s)


def test_events_time_and_query():
    start, end = ember.cuda.Event(enable_timing=True), ember.cuda.Event(enable_timing=True)
    assert start.query() is True  # never recorded
    start.record()
    sum(range(20000))
    end.record(ember.cuda.current_stream())
    end.synchronize()
    assert end.query() is True
    elapsed = start.elapsed_time(end)
    assert isinstance(elapsed, float) and elapsed >= 0.0
    untimed = ember.cuda.Event()
    untimed.record()
    with pytest.raises(RuntimeError, match="enable_timing=True"):
        untimed.elapsed_time(end)
    with pytest.raises(RuntimeError, match="recorded"):
        ember.cuda.Event(enable_timing=True).elapsed_time(end)
    other = ember.cuda.Stream()
    event = other.record_event()
    ember.cuda.current_stream().wait_event(event)
    event.wait()


def test_seeding_functions():
    ember.cuda.manual_seed(123)
    assert ember.cuda.initial_seed() == 123
    ember.cuda.manual_seed_all(-1)
    assert ember.cuda.initial_seed() == 2 ** 64 - 1  # wrapped as torch does
    ember.cuda.seed()
    first = ember.cuda.initial_seed()
    ember.cuda.seed_all()
    assert 0 <= first < 2 ** 64 and ember.cuda.initial_seed() != first
    states = ember.cuda.get_rng_state_all()
    assert len(states) == ember.cuda.device_count()
    ember.cuda.manual_seed(5)
    ember.cuda.set_rng_state_all(states)
    assert ember.cuda.initial_seed() != 5
    with pytest.raises(RuntimeError):
        ember.cuda.manual_seed(1.5)


def test_memory_api_types():
    stats = ember.cuda.memory_stats()
    assert isinstance(stats, dict)
    for fn in (ember.cuda.memory_allocated, ember.cuda.max_memory_allocated, ember.cuda.memory_reserved,
               ember.cuda.max_memory_reserved):
        assert isinstance(fn(), int) and fn() >= 0 and fn(0) == fn()
    assert ember.cuda.memory_reserved() >= ember.cuda.memory_allocated()
    assert isinstance(ember.cuda.memory_summary(), str)
