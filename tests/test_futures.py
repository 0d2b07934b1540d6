"""ember.futures against torch.futures: values, errors, chaining, collect_all/wait_all across threads."""
import threading

import pytest

from ember import futures as efut

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("mod", [efut, torch.futures], ids=["ember", "torch"])
def test_then_chain_and_callbacks_match_torch(mod):
    fut = mod.Future()
    seen = []
    fut.add_done_callback(lambda f: seen.append(f.value()))
    chained = fut.then(lambda f: f.wait() * 2).then(lambda f: f.wait() + 1)
    assert not fut.done() and not chained.done()
    threading.Timer(0.01, fut.set_result, args=(20,)).start()
    assert chained.wait() == 41
    assert fut.done() and seen == [20]


@pytest.mark.parametrize("mod", [efut, torch.futures], ids=["ember", "torch"])
def test_exception_propagates_through_then(mod):
    fut = mod.Future()
    chained = fut.then(lambda f: f.wait() + 1)
    fut.set_exception(ValueError("boom"))
    with pytest.raises(ValueError, match="boom"):
        fut.wait()
    with pytest.raises(RuntimeError, match="running the callback: ValueError: boom"):
        chained.wait()


@pytest.mark.parametrize("mod", [efut, torch.futures], ids=["ember", "torch"])
def test_completes_only_once(mod):
    fut = mod.Future()
    fut.set_result(1)
    with pytest.raises(RuntimeError):
        fut.set_result(2)
    assert fut.value() == 1


@pytest.mark.parametrize("mod", [efut, torch.futures], ids=["ember", "torch"])
def test_collect_all_and_wait_all(mod):
    futs = [mod.Future() for _ in range(4)]
    all_done = mod.collect_all(futs)
    for i, f in enumerate(reversed(futs)):
        threading.Timer(0.005 * i, f.set_result, args=(i,)).start()
    assert [f.value() for f in all_done.wait()] == [3, 2, 1, 0]
    assert mod.wait_all(futs) == [3, 2, 1, 0]
    bad = [mod.Future(), mod.Future()]
    bad[0].set_result(1)
    bad[1].set_exception(KeyError("k"))
    with pytest.raises(KeyError):
        mod.wait_all(bad)


def test_value_before_completion_raises():
    with pytest.raises(RuntimeError, match="not completed"):
        efut.Future().value()
    with pytest.raises(RuntimeError, match="within"):
        efut.Future().wait(timeout=0.01)
