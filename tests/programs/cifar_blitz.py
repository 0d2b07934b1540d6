"""The 60-minute blitz's "Training a classifier": a LeNet-style net on CIFAR-10-shaped data (synthetic), SGD with
momentum, a running loss printed every few mini-batches, ``torch.max(outputs.data, 1)`` accuracy and per-class
accuracy counted with ``zip(labels, predictions)``."""
import ember as torch
import ember.nn as nn
import ember.nn.functional as F
import ember.optim as optim
from ember.utils.data import DataLoader, TensorDataset

classes = ('plane', 'car', 'bird', 'cat', 'deer', 'dog', 'frog', 'horse', 'ship', 'truck')


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 60)
        self.fc2 = nn.Linear(60, 40)
        self.fc3 = nn.Linear(40, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = torch.flatten(x, 1)  # flatten all dimensions except batch
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        x = self.fc3(x)
        return x


def synthetic_cifar(n, seed):
    """32x32 colour images: class k tints the image with a fixed random colour and a class-specific stripe."""
    g = torch.Generator().manual_seed(seed)
    palette = torch.rand(10, 3, 1, 1, generator=torch.Generator().manual_seed(0))
    labels = torch.randint(0, 10, (n,), generator=g)
    images = torch.rand(n, 3, 32, 32, generator=g) * 0.5 + palette[labels]
    for i in range(n):
        k = int(labels[i])
        images[i, :, 3 * k:3 * k + 3, :] += 1.0
    return (images - 0.5) / 0.5, labels


def main(epochs=2):
    torch.manual_seed(0)
    batch_size = 8
    trainloader = DataLoader(TensorDataset(*synthetic_cifar(400, 1)), batch_size=batch_size, shuffle=True,
                             num_workers=0)
    testloader = DataLoader(TensorDataset(*synthetic_cifar(200, 2)), batch_size=batch_size, shuffle=False,
                            num_workers=0)
    dataiter = iter(trainloader)
    images, labels = next(dataiter)
    first_labels = ' '.join(f'{classes[labels[j]]:5s}' for j in range(batch_size))

    net = Net()
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.SGD(net.parameters(), lr=0.01, momentum=0.9)

    running_losses = []
    for epoch in range(epochs):  # loop over the dataset multiple times
        running_loss = 0.0
        for i, data in enumerate(trainloader, 0):
            # get the inputs; data is a list of [inputs, labels]
            inputs, labels = data

            # zero the parameter gradients
            optimizer.zero_grad()

            # forward + backward + optimize
            outputs = net(inputs)
            loss = criterion(outputs, labels)
            loss.backward()
            optimizer.step()

            # print statistics
            running_loss += loss.item()
            if i % 10 == 9:
                print(f'[{epoch + 1}, {i + 1:5d}] loss: {running_loss / 10:.3f}')
                running_losses.append(running_loss / 10)
                running_loss = 0.0
    print('Finished Training')

    correct = 0
    total = 0
    # since we're not training, we don't need to calculate the gradients for our outputs
    with torch.no_grad():
        for data in testloader:
            images, labels = data
            # calculate outputs by running images through the network
            outputs = net(images)
            # the class with the highest energy is what we choose as prediction
            _, predicted = torch.max(outputs.data, 1)
            total += labels.size(0)
            correct += (predicted == labels).sum().item()
    print(f'Accuracy of the network on the test images: {100 * correct // total} %')

    # prepare to count predictions for each class
    correct_pred = {classname: 0 for classname in classes}
    total_pred = {classname: 0 for classname in classes}

    # again no gradients needed
    with torch.no_grad():
        for data in testloader:
            images, labels = data
            outputs = net(images)
            _, predictions = torch.max(outputs, 1)
            # collect the correct predictions for each class
            for label, prediction in zip(labels, predictions):
                if label == prediction:
                    correct_pred[classes[label]] += 1
                total_pred[classes[label]] += 1

    per_class = {}
    for classname, correct_count in correct_pred.items():
        accuracy = 100 * float(correct_count) / max(total_pred[classname], 1)
        per_class[classname] = accuracy
        print(f'Accuracy for class: {classname:5s} is {accuracy:.1f} %')
    return {"running_losses": running_losses, "accuracy": correct / total, "per_class": per_class,
            "total_pred": sum(total_pred.values()), "first_labels": first_labels}


if __name__ == "__main__":
    main()
