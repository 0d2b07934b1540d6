"""The transfer-learning tutorial's shape: a "pretrained" backbone (trained here on a first task), frozen with
requires_grad_(False), a new ``model.fc``, an optimizer over the trainable parameters only, a StepLR, train/val
phases under ``torch.set_grad_enabled(phase == 'train')`` and the best weights kept with copy.deepcopy."""
import copy
import time

import ember as torch
import ember.nn as nn
import ember.optim as optim
from ember.optim import lr_scheduler
from ember.utils.data import DataLoader, TensorDataset


class TinyResNet(nn.Module):
    """A ResNet-shaped network: conv stem, one residual block, global pooling and an ``fc`` head."""

    def __init__(self, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, kernel_size=3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.relu = nn.ReLU(inplace=True)
        self.block = nn.Sequential(nn.Conv2d(8, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU(),
                                   nn.Conv2d(8, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8))
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(8, num_classes)

    def forward(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        x = self.relu(x + self.block(x))
        x = torch.flatten(self.avgpool(x), 1)
        return self.fc(x)


def make_images(n, num_classes, seed):
    """Colour images whose class is the dominant channel pattern: learnable from pooled features."""
    g = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, num_classes, (n,), generator=g)
    images = torch.randn(n, 3, 8, 8, generator=g) * 0.5
    codes = torch.tensor([[1., 0., 0.], [0., 1., 0.], [0., 0., 1.], [1., 1., 0.], [0., 1., 1.], [1., 0., 1.]])
    images += codes[labels % len(codes)].view(n, 3, 1, 1) * 1.5
    return images, labels


def train_model(model, criterion, optimizer, scheduler, dataloaders, dataset_sizes, num_epochs=3):
    since = time.time()
    best_model_wts = copy.deepcopy(model.state_dict())
    best_acc = 0.0
    history = []

    for epoch in range(num_epochs):
        print(f'Epoch {epoch}/{num_epochs - 1}')
        print('-' * 10)
        for phase in ['train', 'val']:
            if phase == 'train':
                model.train()
            else:
                model.eval()

            running_loss = 0.0
            running_corrects = 0
            for inputs, labels in dataloaders[phase]:
                optimizer.zero_grad()
                with torch.set_grad_enabled(phase == 'train'):
                    outputs = model(inputs)
                    _, preds = torch.max(outputs, 1)
                    loss = criterion(outputs, labels)
                    if phase == 'train':
                        loss.backward()
                        optimizer.step()
                running_loss += loss.item() * inputs.size(0)
                running_corrects += torch.sum(preds == labels.data)
            if phase == 'train':
                scheduler.step()

            epoch_loss = running_loss / dataset_sizes[phase]
            epoch_acc = running_corrects.double() / dataset_sizes[phase]
            print(f'{phase} Loss: {epoch_loss:.4f} Acc: {epoch_acc:.4f}')
            history.append((phase, epoch_loss, float(epoch_acc)))

            if phase == 'val' and epoch_acc > best_acc:
                best_acc = epoch_acc
                best_model_wts = copy.deepcopy(model.state_dict())

    time_elapsed = time.time() - since
    print(f'Training complete in {time_elapsed // 60:.0f}m {time_elapsed % 60:.0f}s')
    print(f'Best val Acc: {best_acc:4f}')
    model.load_state_dict(best_model_wts)
    return model, history, float(best_acc)


def main():
    torch.manual_seed(0)
    # "pretraining" on a 6-class task
    backbone = TinyResNet(num_classes=6)
    x, y = make_images(192, 6, seed=3)
    opt = optim.SGD(backbone.parameters(), lr=0.05, momentum=0.9)
    for _ in range(2):
        for inputs, labels in DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True):
            opt.zero_grad()
            nn.functional.cross_entropy(backbone(inputs), labels).backward()
            opt.step()

    # fine-tune a new 2-class head (is the colour code's first channel on?) on the frozen features
    model_conv = backbone
    for param in model_conv.parameters():
        param.requires_grad_(False)
    num_ftrs = model_conv.fc.in_features
    model_conv.fc = nn.Linear(num_ftrs, 2)
    frozen_before = copy.deepcopy(model_conv.conv1.weight.data)

    images = {}
    for phase, seed in (('train', 4), ('val', 5)):
        xs, ys = make_images(96, 6, seed=seed)
        images[phase] = TensorDataset(xs, (ys == 0) | (ys == 3) | (ys == 5))
    images = {k: TensorDataset(v.tensors[0], v.tensors[1].long()) for k, v in images.items()}
    dataloaders = {x: DataLoader(images[x], batch_size=16, shuffle=(x == 'train')) for x in ['train', 'val']}
    dataset_sizes = {x: len(images[x]) for x in ['train', 'val']}

    criterion = nn.CrossEntropyLoss()
    optimizer_conv = optim.SGD(filter(lambda p: p.requires_grad, model_conv.parameters()), lr=0.05, momentum=0.9)
    exp_lr_scheduler = lr_scheduler.StepLR(optimizer_conv, step_size=2, gamma=0.1)
    trainable = sum(p.numel() for p in model_conv.parameters() if p.requires_grad)

    model_conv, history, best_acc = train_model(model_conv, criterion, optimizer_conv, exp_lr_scheduler,
                                                dataloaders, dataset_sizes, num_epochs=4)
    return {"history": history, "best_acc": best_acc, "trainable": trainable,
            "frozen_unchanged": bool(torch.equal(frozen_before, model_conv.conv1.weight)),
            "lr": optimizer_conv.param_groups[0]['lr']}


if __name__ == "__main__":
    main()
