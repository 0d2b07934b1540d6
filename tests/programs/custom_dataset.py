"""The "Datasets & DataLoaders" / data-loading tutorial's shape: a Dataset whose ``__getitem__`` returns a dict
with a transform, a padding ``collate_fn`` for variable-length sequences, ``random_split`` with a seeded
generator, and a ``WeightedRandomSampler`` that rebalances an imbalanced training set."""
import ember as torch
from ember import nn
from ember.nn.utils.rnn import pad_sequence
from ember.utils.data import DataLoader, Dataset, WeightedRandomSampler, random_split


class ToTensor(object):
    """Convert the lists in a sample to Tensors."""

    def __call__(self, sample):
        tokens, label = sample['tokens'], sample['label']
        return {'tokens': torch.tensor(tokens, dtype=torch.long), 'label': torch.tensor(label)}


class SequenceDataset(Dataset):
    """Variable-length token sequences over 1..8 (0 is padding); label 1 (rare) when token 8 occurs, else 0."""

    RARE = 8

    def __init__(self, n, seed, transform=None):
        g = torch.Generator().manual_seed(seed)
        self.samples = []
        for _ in range(n):
            length = int(torch.randint(3, 9, (1,), generator=g))
            tokens = torch.randint(1, self.RARE, (length,), generator=g).tolist()
            if torch.rand(1, generator=g).item() < 0.15:
                tokens[int(torch.randint(0, length, (1,), generator=g))] = self.RARE
            self.samples.append(tokens)
        self.transform = transform

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, idx):
        if torch.is_tensor(idx):
            idx = idx.tolist()
        tokens = self.samples[idx]
        sample = {'tokens': tokens, 'label': int(self.RARE in tokens)}
        if self.transform:
            sample = self.transform(sample)
        return sample


def collate_fn(batch):
    """Pad the sequences of a batch of dicts to the longest and keep their lengths."""
    lengths = torch.tensor([len(item['tokens']) for item in batch])
    tokens = pad_sequence([item['tokens'] for item in batch], batch_first=True, padding_value=0)
    labels = torch.stack([item['label'] for item in batch])
    return {'tokens': tokens, 'lengths': lengths, 'label': labels}


class BagOfTokens(nn.Module):
    def __init__(self, vocab, dim):
        super().__init__()
        self.embedding = nn.Embedding(vocab, dim, padding_idx=0)
        self.fc = nn.Linear(dim, 2)

    def forward(self, tokens, lengths):
        summed = self.embedding(tokens).sum(dim=1)
        return self.fc(summed / lengths.unsqueeze(1).float())


def main(epochs=6):
    torch.manual_seed(0)
    dataset = SequenceDataset(300, seed=3, transform=ToTensor())
    train_set, val_set = random_split(dataset, [0.8, 0.2], generator=torch.Generator().manual_seed(42))
    again, _ = random_split(dataset, [0.8, 0.2], generator=torch.Generator().manual_seed(42))
    split_reproducible = list(train_set.indices) == list(again.indices)

    labels = torch.tensor([dataset[i]['label'] for i in train_set.indices])
    class_counts = torch.bincount(labels, minlength=2)
    class_weights = 1.0 / class_counts.float()
    sample_weights = class_weights[labels]
    sampler = WeightedRandomSampler(sample_weights, num_samples=len(sample_weights), replacement=True,
                                    generator=torch.Generator().manual_seed(7))

    train_loader = DataLoader(train_set, batch_size=16, sampler=sampler, collate_fn=collate_fn)
    val_loader = DataLoader(val_set, batch_size=16, shuffle=False, collate_fn=collate_fn)

    model = BagOfTokens(SequenceDataset.RARE + 1, 8)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
    loss_fn = nn.CrossEntropyLoss()

    seen_positive, seen_total, first = 0, 0, None
    val_accuracies = []
    for epoch in range(epochs):
        model.train()
        for batch in train_loader:
            y = batch['label']
            out = model(batch['tokens'], batch['lengths'])
            loss = loss_fn(out, y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            seen_positive += int(y.sum())
            seen_total += len(y)
            if first is None:
                first = batch
        model.eval()
        correct = 0
        with torch.no_grad():
            for batch in val_loader:
                y = batch['label']
                correct += (model(batch['tokens'], batch['lengths']).argmax(1) == y).sum().item()
        val_accuracies.append(correct / len(val_set))
        print(f"epoch {epoch}: val accuracy {val_accuracies[-1]:.3f}")
    return {"split_sizes": (len(train_set), len(val_set)), "split_reproducible": split_reproducible,
            "positive_fraction_in_data": labels.float().mean().item(),
            "positive_fraction_sampled": seen_positive / seen_total,
            "batch_keys": sorted(first), "batch_tokens_shape": tuple(first['tokens'].shape),
            "max_length_in_batch": int(first['lengths'].max()), "val_accuracies": val_accuracies,
            "sample": dataset[0]}


if __name__ == "__main__":
    main()
