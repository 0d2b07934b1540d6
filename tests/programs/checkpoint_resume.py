"""The "Saving and loading a general checkpoint" recipe: save epoch, model, optimizer and loss in one dict,
load it with weights_only=True into fresh objects, resume training, and check the resumed run continues exactly
where an uninterrupted one goes."""
import os
import tempfile

import ember as torch
import ember.nn as nn
import ember.nn.functional as F
import ember.optim as optim


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(3, 6, 3)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 8, 3)
        self.bn = nn.BatchNorm1d(8 * 1 * 1)
        self.fc1 = nn.Linear(8 * 1 * 1, 16)
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = x.view(-1, 8 * 1 * 1)
        x = F.relu(self.fc1(self.bn(x)))
        x = self.fc2(x)
        return x


def data(seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(64, 3, 10, 10, generator=g)
    y = (x[:, 0].mean((1, 2)) > 0).long() + 2 * (x[:, 1].mean((1, 2)) > 0).long()
    return x, y


def train_epochs(net, optimizer, scheduler, x, y, epochs):
    criterion = nn.CrossEntropyLoss()
    losses = []
    for _ in range(epochs):
        for i in range(0, len(x), 16):
            optimizer.zero_grad()
            loss = criterion(net(x[i:i + 16]), y[i:i + 16])
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        scheduler.step()
    return losses, loss


def make(seed=0):
    torch.manual_seed(seed)
    net = Net()
    optimizer = optim.SGD(net.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-4)
    scheduler = optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.9)
    return net, optimizer, scheduler


def main():
    x, y = data(1)
    # the uninterrupted run: 4 epochs
    net, optimizer, scheduler = make()
    straight, _ = train_epochs(net, optimizer, scheduler, x, y, 4)
    net.eval()
    with torch.no_grad():
        straight_out = net(x[:8])

    # the interrupted one: 2 epochs, checkpoint, fresh objects, resume for 2 more
    net, optimizer, scheduler = make()
    first_half, loss = train_epochs(net, optimizer, scheduler, x, y, 2)
    with tempfile.TemporaryDirectory() as tmp:
        PATH = os.path.join(tmp, "model.pt")
        EPOCH = 2
        torch.save({
            'epoch': EPOCH,
            'model_state_dict': net.state_dict(),
            'optimizer_state_dict': optimizer.state_dict(),
            'scheduler_state_dict': scheduler.state_dict(),
            'loss': loss,
        }, PATH)

        model, optimizer, scheduler = make(seed=123)  # different initial weights: the checkpoint must win
        checkpoint = torch.load(PATH, weights_only=True)
        model.load_state_dict(checkpoint['model_state_dict'])
        optimizer.load_state_dict(checkpoint['optimizer_state_dict'])
        scheduler.load_state_dict(checkpoint['scheduler_state_dict'])
        epoch = checkpoint['epoch']
        loss = checkpoint['loss']
    model.train()
    second_half, _ = train_epochs(model, optimizer, scheduler, x, y, 2)
    model.eval()
    with torch.no_grad():
        resumed_out = model(x[:8])
    return {"straight": straight, "resumed": first_half + second_half, "epoch": epoch,
            "loss_type": type(loss).__name__, "loss_requires_grad": loss.requires_grad,
            "loss": loss.item(), "outputs_equal": bool(torch.allclose(straight_out, resumed_out, atol=1e-6)),
            "lr": optimizer.param_groups[0]['lr'],
            "momentum_keys": sorted(optimizer.state_dict()['state'][0])}


if __name__ == "__main__":
    main()
