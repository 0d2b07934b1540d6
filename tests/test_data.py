"""ember.utils.data: datasets, samplers, collation and DataLoader, against torch where the RNG doesn't matter."""
from __future__ import annotations

import collections
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember
from ember.utils.data import BatchSampler, ChainDataset, ConcatDataset, DataLoader, Dataset, IterableDataset, \
    RandomSampler, SequentialSampler, StackDataset, Subset, SubsetRandomSampler, TensorDataset, \
    WeightedRandomSampler, default_collate, default_convert, get_worker_info, random_split

Point = collections.namedtuple("Point", "x y")


def plain(obj):
    """Nested ember/torch output as comparable plain data: tensors become (dtype name, shape, values)."""
    if hasattr(obj, "numpy") and hasattr(obj, "dtype") and not isinstance(obj, np.ndarray):
        arr = obj.numpy()
        return ("tensor", arr.dtype.name, arr.shape, arr.tolist())
    if isinstance(obj, dict):
        return (type(obj).__name__, {k: plain(v) for k, v in obj.items()})
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return (type(obj).__name__, [plain(v) for v in obj])
    if isinstance(obj, (list, tuple)):
        return (type(obj).__name__, [plain(v) for v in obj])
    return obj


# ---- collation -------------------------------------------------------------------------------------------------------

def _samples(lib):
    return [
        [1, 2, 3],
        [1.5, 2.0],
        [True, False],
        [np.float32(1.5), np.float32(2.5)],
        [np.int16(3), np.int16(4)],
        [np.arange(6, dtype=np.int32).reshape(2, 3), np.ones((2, 3), dtype=np.int32)],
        [np.array(2.5), np.array(3.5)],
        ["a", "bc"],
        [b"x", b"y"],
        [lib.arange(3.0), lib.ones(3)],
        [{"img": lib.zeros(2), "label": 1, "name": "p"}, {"img": lib.ones(2), "label": 0, "name": "q"}],
        [collections.OrderedDict(a=1.0, b=(2, "s")), collections.OrderedDict(a=3.0, b=(4, "t"))],
        [(lib.zeros(1, 2), [1, 2]), (lib.ones(1, 2), [3, 4])],
        [Point(1, 2.0), Point(3, 4.0)],
        [[{"k": np.zeros(2)}], [{"k": np.ones(2)}]],
    ]


@pytest.mark.parametrize("case", range(15))
def test_default_collate_matches_torch(torch_ref, case):
    from torch.utils.data import default_collate as torch_collate

    got = plain(default_collate(_samples(ember)[case]))
    want = plain(torch_collate(_samples(torch_ref)[case]))
    assert got == want


@pytest.mark.parametrize("sample", [
    (np.array([1, 2]), 2, "s"), [np.float64(3)], np.array(["a"]), {"a": np.zeros(2), "b": [np.int64(1), 2.0]},
    Point(np.ones(1), 3), b"bytes", 4.5,
])
def test_default_convert_matches_torch(torch_ref, sample):
    from torch.utils.data import default_convert as torch_convert

    got, want = default_convert(sample), torch_convert(sample)
    if isinstance(want, np.ndarray):
        assert isinstance(got, np.ndarray) and got.tolist() == want.tolist()
    else:
        assert plain(got) == plain(want)


def test_default_convert_keeps_tensor_identity():
    t = ember.ones(2)
    assert default_convert(t) is t


def test_collate_errors():
    with pytest.raises(TypeError, match="default_collate: batch must contain tensors, numpy arrays, numbers, dicts "
                                        "or lists; found <class 'object'>"):
        default_collate([object(), object()])
    with pytest.raises(TypeError, match="found <U1"):
        default_collate([np.array(["a"]), np.array(["b"])])
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size"):
        default_collate([[1, 2], [1]])
    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size"):
        default_collate([ember.zeros(2), ember.zeros(3)])


# ---- datasets --------------------------------------------------------------------------------------------------------

class Squares(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        return i * i


class Stream(IterableDataset):
    def __init__(self, start, stop):
        self.start, self.stop = start, stop

    def __iter__(self):
        return iter(range(self.start, self.stop))

    def __len__(self):
        return self.stop - self.start


def test_tensor_dataset():
    x, y = ember.arange(12.0).reshape(4, 3), ember.tensor([0, 1, 0, 1])
    ds = TensorDataset(x, y)
    assert len(ds) == 4
    xi, yi = ds[2]
    assert xi.tolist() == [6.0, 7.0, 8.0] and yi.item() == 0
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        TensorDataset(x, ember.zeros(5))


def test_concat_and_add():
    ds = Squares(3) + Squares(2)
    assert isinstance(ds, ConcatDataset)
    assert [ds[i] for i in range(len(ds))] == [0, 1, 4, 0, 1]
    assert ds[-1] == 1 and ds[-5] == 0 and ds.cumulative_sizes == [3, 5]
    with pytest.raises(ValueError, match="absolute value of index should not exceed dataset length"):
        ds[-6]
    with pytest.raises(AssertionError, match="datasets should not be an empty iterable"):
        ConcatDataset([])
    with pytest.raises(AssertionError, match="ConcatDataset does not support IterableDataset"):
        ConcatDataset([Squares(1), Stream(0, 2)])


def test_chain_and_stream_add():
    chained = Stream(0, 2) + Stream(5, 7)
    assert isinstance(chained, ChainDataset)
    assert list(chained) == [0, 1, 5, 6] and len(chained) == 4
    with pytest.raises(AssertionError, match="ChainDataset only supports IterableDataset"):
        list(ChainDataset([Squares(2)]))


def test_stack_dataset():
    tup = StackDataset(Squares(3), Squares(3))
    assert tup[2] == (4, 4) and len(tup) == 3
    assert StackDataset(a=Squares(2), b=Squares(2))[1] == {"a": 1, "b": 1}
    with pytest.raises(ValueError, match="Size mismatch between datasets"):
        StackDataset(Squares(2), Squares(3))
    with pytest.raises(ValueError, match="At least one dataset should be passed"):
        StackDataset()


def test_base_dataset_is_abstract():
    with pytest.raises(NotImplementedError, match="Subclasses of Dataset should implement __getitem__"):
        Dataset()[0]


def test_subset():
    sub = Subset(Squares(10), [9, 2, 5])
    assert len(sub) == 3 and [sub[i] for i in range(3)] == [81, 4, 25]
    assert sub.__getitems__([2, 0]) == [25, 81]


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 40), st.lists(st.integers(1, 10), min_size=1, max_size=4))
def test_random_split_fractions_match_torch_lengths(n, weights):
    torch = pytest.importorskip("torch")
    fractions = [w / sum(weights) for w in weights]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zero-length splits warn in both
        ours = [len(s) for s in random_split(Squares(n), fractions)]
        theirs = [len(s) for s in torch.utils.data.random_split(list(range(n)), fractions)]
    assert ours == theirs


def test_random_split_partitions_and_reproduces():
    parts = random_split(Squares(10), [3, 7], generator=ember.Generator().manual_seed(42))
    again = random_split(Squares(10), [3, 7], generator=ember.Generator().manual_seed(42))
    assert [p.indices for p in parts] == [p.indices for p in again]
    assert sorted(parts[0].indices + parts[1].indices) == list(range(10))
    ember.manual_seed(1)
    a = random_split(Squares(10), [0.5, 0.5])[0].indices
    ember.manual_seed(1)
    assert random_split(Squares(10), [0.5, 0.5])[0].indices == a


def test_random_split_errors_and_warning():
    with pytest.raises(ValueError, match="Sum of input lengths does not equal the length of the input dataset!"):
        random_split(Squares(5), [2, 2])
    with pytest.raises(ValueError, match="Fraction at index 1 is not between 0 and 1"):
        random_split(Squares(5), [0.5, 1.5, -1.0])
    with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
        random_split(Squares(1), [0.5, 0.5])


# ---- samplers --------------------------------------------------------------------------------------------------------

def test_sequential_and_batch_sampler_match_torch(torch_ref):
    from torch.utils.data import BatchSampler as TBatch, SequentialSampler as TSeq

    for n, bs, drop in [(10, 3, False), (10, 3, True), (9, 3, True), (2, 5, False), (0, 2, False)]:
        ours = BatchSampler(SequentialSampler(range(n)), bs, drop)
        theirs = TBatch(TSeq(range(n)), bs, drop)
        assert list(ours) == list(theirs) and len(ours) == len(theirs)


def test_sampler_argument_errors():
    with pytest.raises(ValueError, match="batch_size should be a positive integer value, but got batch_size=0"):
        BatchSampler(range(3), 0, False)
    with pytest.raises(ValueError, match="batch_size should be a positive integer value, but got batch_size=True"):
        BatchSampler(range(3), True, False)
    with pytest.raises(ValueError, match="drop_last should be a boolean value, but got drop_last=1"):
        BatchSampler(range(3), 2, 1)
    with pytest.raises(TypeError, match="replacement should be a boolean value, but got replacement=0"):
        RandomSampler(range(3), replacement=0)
    with pytest.raises(ValueError, match="num_samples should be a positive integer value, but got num_samples=0"):
        RandomSampler(range(0))
    with pytest.raises(ValueError, match="num_samples should be a positive integer value, but got num_samples=-1"):
        WeightedRandomSampler([1.0], -1)
    with pytest.raises(ValueError, match="replacement should be a boolean value"):
        WeightedRandomSampler([1.0], 1, replacement=None)
    with pytest.raises(ValueError, match=r"weights should be a 1d sequence but given weights have shape \(1, 2\)"):
        WeightedRandomSampler([[1.0, 2.0]], 1)


def test_random_sampler_permutation_and_replacement():
    ember.manual_seed(3)
    perm = list(RandomSampler(range(20)))
    assert sorted(perm) == list(range(20)) and perm != list(range(20))
    more = list(RandomSampler(range(5), num_samples=12))
    assert len(more) == 12 and sorted(more[:5]) == list(range(5)) and sorted(more[5:10]) == list(range(5))
    draws = list(RandomSampler(range(4), replacement=True, num_samples=200))
    assert len(draws) == 200 and set(draws) == {0, 1, 2, 3}
    assert len(RandomSampler(range(4), num_samples=7)) == 7


def test_random_sampler_reproducible_and_new_order_each_pass():
    ember.manual_seed(0)
    s = RandomSampler(range(30))
    first, second = list(s), list(s)
    assert first != second
    ember.manual_seed(0)
    assert [list(s), list(s)] == [first, second]
    g = RandomSampler(range(30), generator=ember.Generator().manual_seed(5))
    h = RandomSampler(range(30), generator=ember.Generator().manual_seed(5))
    assert list(g) == list(h)


def test_subset_random_sampler():
    ember.manual_seed(2)
    s = SubsetRandomSampler([10, 20, 30, 40])
    out = list(s)
    assert sorted(out) == [10, 20, 30, 40] and len(s) == 4
    ember.manual_seed(2)
    assert list(s) == out


def test_weighted_random_sampler():
    ember.manual_seed(4)
    draws = np.array(list(WeightedRandomSampler([0.1, 0.0, 0.9], 2000)))
    assert not (draws == 1).any()
    assert (draws == 2).mean() == pytest.approx(0.9, abs=0.03)
    unique = list(WeightedRandomSampler(ember.tensor([1.0, 1.0, 1.0]), 3, replacement=False))
    assert sorted(unique) == [0, 1, 2]


# ---- DataLoader ------------------------------------------------------------------------------------------------------

def _dataset(lib):
    return lib.utils.data.TensorDataset(lib.arange(10.0).reshape(5, 2), lib.arange(5))


@pytest.mark.parametrize("kwargs", [dict(), dict(batch_size=2), dict(batch_size=2, drop_last=True),
                                    dict(batch_size=None), dict(batch_size=7)])
def test_sequential_loader_matches_torch(torch_ref, kwargs):
    ours = DataLoader(_dataset(ember), **kwargs)
    theirs = torch_ref.utils.data.DataLoader(_dataset(torch_ref), **kwargs)
    assert [plain(b) for b in ours] == [plain(b) for b in theirs]
    assert len(ours) == len(theirs)


def test_loader_batch_sampler_and_collate_fn(torch_ref):
    kwargs = dict(batch_sampler=[[4, 0], [2], [1, 3]], collate_fn=lambda b: [len(b), b[0][1]])
    ours = [[n, plain(t)] for n, t in DataLoader(_dataset(ember), **kwargs)]
    theirs = [[n, plain(t)] for n, t in torch_ref.utils.data.DataLoader(_dataset(torch_ref), **kwargs)]
    assert ours == theirs


def test_loader_custom_sampler_and_len():
    loader = DataLoader(Squares(6), batch_size=4, sampler=[5, 4, 3, 2, 1, 0])
    assert [b.tolist() for b in loader] == [[25, 16, 9, 4], [1, 0]]
    assert len(loader) == 2 and len(iter(loader)) == 2


def test_loader_uses_getitems_when_defined():
    class Batched(Squares):
        calls = []

        def __getitems__(self, idx):
            self.calls.append(list(idx))
            return [self[i] for i in idx]

    ds = Batched(5)
    assert [b.tolist() for b in DataLoader(ds, batch_size=3)] == [[0, 1, 4], [9, 16]]
    assert ds.calls == [[0, 1, 2], [3, 4]]


def test_loader_shuffle_reproducible_with_seed_and_generator():
    ds = Squares(12)
    ember.manual_seed(9)
    a = [b.tolist() for b in DataLoader(ds, batch_size=5, shuffle=True)]
    ember.manual_seed(9)
    b = [b.tolist() for b in DataLoader(ds, batch_size=5, shuffle=True)]
    assert a == b and sorted(sum(a, [])) == sorted(i * i for i in range(12))
    assert [len(x) for x in a] == [5, 5, 2]
    loader = DataLoader(ds, batch_size=5, shuffle=True, generator=ember.Generator().manual_seed(1))
    epoch1, epoch2 = [x.tolist() for x in loader], [x.tolist() for x in loader]
    assert epoch1 != epoch2
    loader2 = DataLoader(ds, batch_size=5, shuffle=True, generator=ember.Generator().manual_seed(1))
    assert [x.tolist() for x in loader2] == epoch1


@pytest.mark.parametrize("kwargs", [dict(), dict(batch_size=3), dict(batch_size=3, drop_last=True),
                                    dict(batch_size=None), dict(batch_size=4)])
def test_iterable_loader_matches_torch(torch_ref, kwargs):
    class TStream(torch_ref.utils.data.IterableDataset):
        def __iter__(self):
            return iter(range(2, 9))

        def __len__(self):
            return 7

    ours = DataLoader(Stream(2, 9), **kwargs)
    theirs = torch_ref.utils.data.DataLoader(TStream(), **kwargs)
    assert [plain(b) for b in ours] == [plain(b) for b in theirs]
    assert len(ours) == len(theirs)


def test_loader_argument_errors():
    ds = Squares(4)
    cases = [
        (dict(num_workers=-1), "num_workers option should be non-negative"),
        (dict(timeout=-1), "timeout option should be non-negative"),
        (dict(prefetch_factor=2), "prefetch_factor option could only be specified in multiprocessing"),
        (dict(persistent_workers=True), "persistent_workers option needs num_workers > 0"),
        (dict(sampler=[0, 1], shuffle=True), "sampler option is mutually exclusive with shuffle"),
        (dict(batch_sampler=[[0]], batch_size=2), "batch_sampler option is mutually exclusive with batch_size"),
        (dict(batch_sampler=[[0]], drop_last=True), "batch_sampler option is mutually exclusive"),
        (dict(batch_size=None, drop_last=True), "batch_size=None option disables auto-batching and is mutually "
                                                "exclusive with drop_last"),
    ]
    for kwargs, message in cases:
        with pytest.raises(ValueError, match=message):
            DataLoader(ds, **kwargs)
    for kwargs, name in [(dict(shuffle=True), "shuffle"), (dict(sampler=[0]), "sampler"),
                         (dict(batch_sampler=[[0]]), "batch_sampler")]:
        with pytest.raises(ValueError, match=f"DataLoader with IterableDataset: expected unspecified {name} option"):
            DataLoader(Stream(0, 3), **kwargs)
    loader = DataLoader(ds)
    with pytest.raises(ValueError, match="batch_size attribute should not be set after DataLoader is initialized"):
        loader.batch_size = 3
    loader.num_workers = 0  # not frozen


def test_loader_with_workers_gives_the_in_process_batches():
    loader = DataLoader(Squares(5), batch_size=2, num_workers=2)
    assert [b.tolist() for b in loader] == [[0, 1], [4, 9], [16]]
    assert get_worker_info() is None  # in the main process


def test_loader_nested_samples_and_len_of_iterable_without_len():
    class Pairs(Dataset):
        def __len__(self):
            return 3

        def __getitem__(self, i):
            return {"x": np.full(2, i, dtype=np.float32), "y": (i, float(i))}

    (batch,) = list(DataLoader(Pairs(), batch_size=3))
    assert batch["x"].dtype == ember.float32 and batch["x"].shape == (3, 2)
    assert batch["y"][0].dtype == ember.int64 and batch["y"][1].dtype == ember.float64

    class Endless(IterableDataset):
        def __iter__(self):
            return iter(range(100))

    with pytest.raises(TypeError):
        len(DataLoader(Endless()))
    assert math.isclose(next(iter(DataLoader(Endless(), batch_size=4))).sum().item(), 6)
