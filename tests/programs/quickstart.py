"""The "Quickstart" tutorial's shape: a FashionMNIST-like dataset (synthetic), a Flatten + Sequential network,
train/test loops, and a state_dict round trip through torch.save / torch.load(weights_only=True)."""
import os
import tempfile

import ember as torch
from ember import nn
from ember.utils.data import DataLoader, Dataset


class FakeFashionMNIST(Dataset):
    """28x28 "images" whose class is encoded by which horizontal band is bright (learnable, like the real thing)."""

    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        self.labels = torch.randint(0, 10, (n,), generator=g)
        self.images = torch.rand(n, 1, 28, 28, generator=g) * 0.3
        for i in range(n):
            band = int(self.labels[i]) * 2 + 4
            self.images[i, 0, band:band + 2, :] += 0.7

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, idx):
        return self.images[idx], self.labels[idx]


class NeuralNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.linear_relu_stack = nn.Sequential(
            nn.Linear(28 * 28, 64),
            nn.ReLU(),
            nn.Linear(64, 64),
            nn.ReLU(),
            nn.Linear(64, 10),
        )

    def forward(self, x):
        x = self.flatten(x)
        logits = self.linear_relu_stack(x)
        return logits


def train(dataloader, model, loss_fn, optimizer, device):
    size = len(dataloader.dataset)
    model.train()
    losses = []
    for batch, (X, y) in enumerate(dataloader):
        X, y = X.to(device), y.to(device)

        pred = model(X)
        loss = loss_fn(pred, y)

        loss.backward()
        optimizer.step()
        optimizer.zero_grad()

        losses.append(loss.item())
        if batch % 4 == 0:
            loss, current = loss.item(), (batch + 1) * len(X)
            print(f"loss: {loss:>7f}  [{current:>5d}/{size:>5d}]")
    return sum(losses) / len(losses)


def test(dataloader, model, loss_fn, device):
    size = len(dataloader.dataset)
    num_batches = len(dataloader)
    model.eval()
    test_loss, correct = 0, 0
    with torch.no_grad():
        for X, y in dataloader:
            X, y = X.to(device), y.to(device)
            pred = model(X)
            test_loss += loss_fn(pred, y).item()
            correct += (pred.argmax(1) == y).type(torch.float).sum().item()
    test_loss /= num_batches
    correct /= size
    print(f"Test Error: \n Accuracy: {(100 * correct):>0.1f}%, Avg loss: {test_loss:>8f} \n")
    return test_loss, correct


def main(epochs=3):
    torch.manual_seed(0)
    training_data = FakeFashionMNIST(256, seed=1)
    test_data = FakeFashionMNIST(128, seed=2)
    batch_size = 32
    train_dataloader = DataLoader(training_data, batch_size=batch_size, shuffle=True)
    test_dataloader = DataLoader(test_data, batch_size=batch_size)
    for X, y in test_dataloader:
        print(f"Shape of X [N, C, H, W]: {X.shape}")
        print(f"Shape of y: {y.shape} {y.dtype}")
        break

    device = "cpu"
    print(f"Using {device} device")
    model = NeuralNetwork().to(device)
    print(model)

    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    train_losses, accuracies = [], []
    first_loss, _ = test(test_dataloader, model, loss_fn, device)
    for t in range(epochs):
        print(f"Epoch {t + 1}\n-------------------------------")
        train_losses.append(train(train_dataloader, model, loss_fn, optimizer, device))
        test_loss, accuracy = test(test_dataloader, model, loss_fn, device)
        accuracies.append(accuracy)
    print("Done!")

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.pth")
        torch.save(model.state_dict(), path)
        print("Saved PyTorch Model State to model.pth")
        reloaded = NeuralNetwork().to(device)
        reloaded.load_state_dict(torch.load(path, weights_only=True))

    classes = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
               "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]
    model.eval()
    reloaded.eval()
    x, y = test_data[0][0], test_data[0][1]
    with torch.no_grad():
        x = x.to(device)
        pred = model(x)
        again = reloaded(x)
        predicted, actual = classes[pred[0].argmax(0)], classes[y]
        print(f'Predicted: "{predicted}", Actual: "{actual}"')
    return {"first_test_loss": first_loss, "test_loss": test_loss, "train_losses": train_losses,
            "accuracy": accuracies[-1], "reload_equal": bool(torch.equal(pred, again)),
            "predicted": predicted, "model_repr": repr(model)}


if __name__ == "__main__":
    main()
