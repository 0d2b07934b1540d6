"""pytorch/examples' vae/main.py shape: fc encoder to (mu, logvar), the reparameterization trick with
torch.randn_like, a sigmoid decoder and BCE(reduction='sum') + KLD loss (synthetic 28x28 "strokes" in [0, 1])."""
import ember as torch
import ember.utils.data
from ember import nn, optim
from ember.nn import functional as F


class VAE(nn.Module):
    def __init__(self):
        super(VAE, self).__init__()

        self.fc1 = nn.Linear(784, 64)
        self.fc21 = nn.Linear(64, 4)
        self.fc22 = nn.Linear(64, 4)
        self.fc3 = nn.Linear(4, 64)
        self.fc4 = nn.Linear(64, 784)

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar):
        std = torch.exp(0.5 * logvar)
        eps = torch.randn_like(std)
        return mu + eps * std

    def decode(self, z):
        h3 = F.relu(self.fc3(z))
        return torch.sigmoid(self.fc4(h3))

    def forward(self, x):
        mu, logvar = self.encode(x.view(-1, 784))
        z = self.reparameterize(mu, logvar)
        return self.decode(z), mu, logvar


# Reconstruction + KL divergence losses summed over all elements and batch
def loss_function(recon_x, x, mu, logvar):
    BCE = F.binary_cross_entropy(recon_x, x.view(-1, 784), reduction='sum')

    # see Appendix B from VAE paper:
    # Kingma and Welling. Auto-Encoding Variational Bayes. ICLR, 2014
    # 0.5 * sum(1 + log(sigma^2) - mu^2 - sigma^2)
    KLD = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())

    return BCE + KLD


def strokes(n, seed):
    """Images of one horizontal or vertical bar at a random place."""
    g = torch.Generator().manual_seed(seed)
    pos = torch.randint(4, 24, (n,), generator=g)
    vertical = torch.rand(n, generator=g) < 0.5
    x = torch.zeros(n, 1, 28, 28)
    for i in range(n):
        p = int(pos[i])
        if vertical[i]:
            x[i, 0, :, p - 2:p + 2] = 1.0
        else:
            x[i, 0, p - 2:p + 2, :] = 1.0
    return x, vertical.long()


def train(model, optimizer, train_loader, epoch, device):
    model.train()
    train_loss = 0
    for batch_idx, (data, _) in enumerate(train_loader):
        data = data.to(device)
        optimizer.zero_grad()
        recon_batch, mu, logvar = model(data)
        loss = loss_function(recon_batch, data, mu, logvar)
        loss.backward()
        train_loss += loss.item()
        optimizer.step()
    average = train_loss / len(train_loader.dataset)
    print('====> Epoch: {} Average loss: {:.4f}'.format(epoch, average))
    return average


def test(model, test_loader, device):
    model.eval()
    test_loss = 0
    with torch.no_grad():
        for i, (data, _) in enumerate(test_loader):
            data = data.to(device)
            recon_batch, mu, logvar = model(data)
            test_loss += loss_function(recon_batch, data, mu, logvar).item()
            if i == 0:
                n = min(data.size(0), 8)
                comparison = torch.cat([data[:n], recon_batch.view(data.size(0), 1, 28, 28)[:n]])
    test_loss /= len(test_loader.dataset)
    print('====> Test set loss: {:.4f}'.format(test_loss))
    return test_loss, comparison


def main(epochs=4):
    torch.manual_seed(1)
    device = torch.device("cpu")
    kwargs = {'num_workers': 1, 'pin_memory': True} if torch.cuda.is_available() else {}
    train_loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(*strokes(256, 2)),
                                               batch_size=32, shuffle=True, **kwargs)
    test_loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(*strokes(64, 3)),
                                              batch_size=32, shuffle=False, **kwargs)
    model = VAE().to(device)
    optimizer = optim.Adam(model.parameters(), lr=1e-2)
    first_test, _ = test(model, test_loader, device)
    train_losses, test_losses = [], []
    for epoch in range(1, epochs + 1):
        train_losses.append(train(model, optimizer, train_loader, epoch, device))
        test_loss, comparison = test(model, test_loader, device)
        test_losses.append(test_loss)
    with torch.no_grad():
        sample = torch.randn(16, 4).to(device)
        sample = model.decode(sample).cpu()
    return {"first_test": first_test, "train_losses": train_losses, "test_losses": test_losses,
            "comparison_shape": tuple(comparison.shape), "sample_shape": tuple(sample.view(16, 1, 28, 28).shape),
            "sample_range": (sample.min().item(), sample.max().item())}


if __name__ == "__main__":
    main()
