"""The snippets people paste around training code: device checks and cudnn.benchmark, legacy tensor types,
print options and ``print(model)``, parameter counts, drop_last loaders, OneCycleLR, one_hot, where,
masked_fill_, einsum, topk and ``@torch.no_grad()`` as a decorator, in one small classifier run."""
import io
from contextlib import redirect_stdout

import ember as torch
import ember.nn as nn
import ember.nn.functional as F
from ember.utils.data import DataLoader, TensorDataset

device = 'cuda' if torch.cuda.is_available() else 'cpu'
torch.backends.cudnn.benchmark = True


class Classifier(nn.Module):
    def __init__(self, n_in=6, n_hidden=16, n_out=3):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(n_in, n_hidden), nn.BatchNorm1d(n_hidden), nn.GELU(), nn.Dropout(0.1),
                                 nn.Linear(n_hidden, n_out))

    def forward(self, x):
        return self.net(x)


@torch.no_grad()
def evaluate(model, x, y):
    model.eval()
    logits = model(x)
    top2 = logits.topk(2, dim=1).indices
    in_top2 = (top2 == y.unsqueeze(1)).any(dim=1).float().mean().item()
    return (logits.argmax(1) == y).float().mean().item(), in_top2, torch.is_grad_enabled()


def legacy_types():
    x = torch.FloatTensor([[1.5, -2.5], [3.25, 0.75]])
    labels = x.type(torch.LongTensor)
    zeros = torch.FloatTensor(2, 3)
    return {"float_dtype": str(x.dtype), "long_dtype": str(labels.dtype), "long_values": labels.tolist(),
            "type_name": x.type(), "uninitialised_shape": tuple(zeros.shape),
            "is_float_tensor": isinstance(x, torch.FloatTensor)}


def tensor_tricks():
    torch.set_printoptions(precision=2)
    try:
        text = str(torch.tensor([[1.23456, 2.0], [3.14159, -4.5]]))
    finally:
        torch.set_printoptions(profile="default")
    labels = torch.tensor([0, 2, 1, 2])
    onehot = F.one_hot(labels, num_classes=3)
    scores = torch.tensor([[0.1, 0.7, 0.2], [0.5, -0.2, 0.9]])
    clipped = torch.where(scores > 0.3, scores, torch.zeros_like(scores))
    mask = torch.tensor([[True, False, False], [False, False, True]])
    filled = scores.clone()
    filled.masked_fill_(mask, float('-inf'))
    a, b = torch.arange(6.).view(2, 3), torch.arange(12.).view(3, 4)
    einsum = torch.einsum('ij,jk->ik', a, b)
    batched = torch.einsum('bi,bi->b', a, a)
    values, indices = torch.topk(torch.tensor([3., 1., 4., 1., 5., 9., 2.]), 3)
    return {"printed": text, "onehot": onehot.tolist(), "onehot_dtype": str(onehot.dtype),
            "where": clipped.tolist(), "masked": filled.tolist(), "einsum_equal": bool(torch.equal(einsum, a @ b)),
            "batched": batched.tolist(), "topk": (values.tolist(), indices.tolist())}


def main(epochs=8):
    torch.manual_seed(3)
    x = torch.randn(200, 6)
    y = (x[:, 0] > 0).long() + (x[:, 1] > 0.5).long()
    loader = DataLoader(TensorDataset(x[:150], y[:150]), batch_size=32, shuffle=True, drop_last=True)

    model = Classifier().to(device)
    buffer = io.StringIO()
    with redirect_stdout(buffer):
        print(model)
    n_params = sum(p.numel() for p in model.parameters() if p.requires_grad)

    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=1e-2)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=0.05, steps_per_epoch=len(loader),
                                                    epochs=epochs)
    lrs, batch_sizes, losses = [], set(), []
    accuracy_before = evaluate(model, x[150:], y[150:])[0]
    for epoch in range(epochs):
        model.train()
        for xb, yb in loader:
            xb, yb = xb.to(device), yb.to(device)
            loss = F.cross_entropy(model(xb), yb, label_smoothing=0.05)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            scheduler.step()
            lrs.append(scheduler.get_last_lr()[0])
            batch_sizes.add(len(xb))
            losses.append(loss.item())
    accuracy, top2, grad_inside = evaluate(model, x[150:], y[150:])
    return {"device": device, "cudnn_benchmark": torch.backends.cudnn.benchmark, "printed_model": buffer.getvalue(),
            "n_params": n_params, "batches_per_epoch": len(loader), "batch_sizes": sorted(batch_sizes),
            "lrs": lrs, "losses": losses, "accuracy_before": accuracy_before, "accuracy": accuracy, "top2": top2,
            "grad_enabled_in_decorated": grad_inside, "grad_enabled_after": torch.is_grad_enabled(),
            "legacy": legacy_types(), "tricks": tensor_tricks()}


if __name__ == "__main__":
    main()
