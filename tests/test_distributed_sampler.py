"""DistributedSampler against torch's: same shares without shuffling, same structure with it."""
from __future__ import annotations

import pytest

import ember
from ember.utils.data import DataLoader, TensorDataset
from ember.utils.data.distributed import DistributedSampler

torch = pytest.importorskip("torch")
from torch.utils.data.distributed import DistributedSampler as TorchSampler  # noqa: E402

CASES = [(n, r, drop) for n in (1, 5, 10, 11, 17) for r in (1, 2, 3, 4) for drop in (False, True)]


@pytest.mark.parametrize("n,replicas,drop_last", CASES)
def test_unshuffled_shares_match_torch(n, replicas, drop_last):
    data = list(range(n))
    for rank in range(replicas):
        ours = DistributedSampler(data, num_replicas=replicas, rank=rank, shuffle=False, drop_last=drop_last)
        theirs = TorchSampler(data, num_replicas=replicas, rank=rank, shuffle=False, drop_last=drop_last)
        assert list(ours) == list(theirs)
        assert len(ours) == len(theirs) == ours.num_samples
        assert ours.total_size == theirs.total_size


@pytest.mark.parametrize("n,replicas,drop_last", [(10, 3, False), (10, 3, True), (7, 2, False), (2, 5, False)])
def test_shuffled_shares_partition_one_seeded_permutation(n, replicas, drop_last):
    data = list(range(n))
    samplers = [DistributedSampler(data, num_replicas=replicas, rank=r, seed=3, drop_last=drop_last)
                for r in range(replicas)]
    shares = [list(s) for s in samplers]
    g = ember.Generator()
    g.manual_seed(3)
    order = ember.randperm(n, generator=g).tolist()
    padded = (order * (samplers[0].total_size // n + 1))[:samplers[0].total_size]
    assert shares == [padded[r::replicas] for r in range(replicas)]
    torch_shares = [list(TorchSampler(data, num_replicas=replicas, rank=r, seed=3, drop_last=drop_last))
                    for r in range(replicas)]
    assert [len(s) for s in shares] == [len(s) for s in torch_shares]
    if not drop_last:
        assert set(sum(shares, [])) == set(range(n)) == set(sum(torch_shares, []))


def test_set_epoch_changes_order_and_reseeds():
    data = list(range(20))
    s = DistributedSampler(data, num_replicas=2, rank=1, seed=7)
    first = list(s)
    assert list(s) == first  # same epoch, same order
    s.set_epoch(1)
    second = list(s)
    assert second != first
    g = ember.Generator()
    g.manual_seed(8)
    assert second == ember.randperm(20, generator=g).tolist()[1::2]


def test_invalid_rank_raises_like_torch():
    for rank in (-1, 2):
        with pytest.raises(ValueError, match=r"Invalid rank .*\[0, 1\]"):
            DistributedSampler(list(range(4)), num_replicas=2, rank=rank)
        with pytest.raises(ValueError):
            TorchSampler(list(range(4)), num_replicas=2, rank=rank)


def test_default_replicas_need_a_group():
    with pytest.raises((RuntimeError, ValueError)):
        DistributedSampler(list(range(4)))


def test_drives_a_dataloader():
    ds = TensorDataset(ember.arange(10))
    loader = DataLoader(ds, batch_size=2, sampler=DistributedSampler(ds, num_replicas=2, rank=0, shuffle=False))
    assert [b[0].tolist() for b in loader] == [[0, 2], [4, 6], [8]]
