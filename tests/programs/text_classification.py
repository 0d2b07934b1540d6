"""The torchtext text-classification tutorial's shape: a vocabulary built from tokenized lines, a collate_batch
that concatenates token ids and builds offsets with cumsum, nn.EmbeddingBag + Linear, SGD with StepLR(1.0,
gamma=0.1) stepped when validation accuracy stalls, clip_grad_norm_ and ``utils.data.dataset.random_split``."""
import time

import ember as torch
from ember import nn
from ember.utils.data import DataLoader
from ember.utils.data.dataset import random_split

TOPICS = {
    0: "match team goal season coach player win league score cup",
    1: "market stock price bank share profit trade invest rate growth",
    2: "chip software computer phone data network code cloud robot device",
}
FILLER = "the a of and to in on for with at".split()


def synthetic_news(n, seed):
    """(label, text) pairs: a few topic words among filler words, as AG_NEWS's iterator yields them."""
    g = torch.Generator().manual_seed(seed)
    rows = []
    for _ in range(n):
        label = int(torch.randint(0, 3, (1,), generator=g))
        words = TOPICS[label].split()
        picks = torch.randint(0, len(words), (3,), generator=g).tolist()
        fill = torch.randint(0, len(FILLER), (4,), generator=g).tolist()
        rows.append((label + 1, " ".join([words[i] for i in picks] + [FILLER[i] for i in fill])))
    return rows


def tokenizer(text):
    return text.lower().split()


def build_vocab(lines):
    vocab = {"<unk>": 0}
    for line in lines:
        for token in tokenizer(line):
            vocab.setdefault(token, len(vocab))
    return vocab


class TextClassificationModel(nn.Module):
    def __init__(self, vocab_size, embed_dim, num_class):
        super(TextClassificationModel, self).__init__()
        self.embedding = nn.EmbeddingBag(vocab_size, embed_dim, sparse=False)
        self.fc = nn.Linear(embed_dim, num_class)
        self.init_weights()

    def init_weights(self):
        initrange = 0.5
        self.embedding.weight.data.uniform_(-initrange, initrange)
        self.fc.weight.data.uniform_(-initrange, initrange)
        self.fc.bias.data.zero_()

    def forward(self, text, offsets):
        embedded = self.embedding(text, offsets)
        return self.fc(embedded)


def main(epochs=4):
    torch.manual_seed(0)
    train_iter, test_iter = synthetic_news(240, 1), synthetic_news(60, 2)
    vocab = build_vocab(text for _, text in train_iter)

    def text_pipeline(x):
        return [vocab.get(token, 0) for token in tokenizer(x)]

    def label_pipeline(x):
        return int(x) - 1

    def collate_batch(batch):
        label_list, text_list, offsets = [], [], [0]
        for _label, _text in batch:
            label_list.append(label_pipeline(_label))
            processed_text = torch.tensor(text_pipeline(_text), dtype=torch.int64)
            text_list.append(processed_text)
            offsets.append(processed_text.size(0))
        label_list = torch.tensor(label_list, dtype=torch.int64)
        offsets = torch.tensor(offsets[:-1]).cumsum(dim=0)
        text_list = torch.cat(text_list)
        return label_list, text_list, offsets

    num_class = len(set([label for (label, text) in train_iter]))
    model = TextClassificationModel(len(vocab), 16, num_class)

    def train(dataloader):
        model.train()
        total_acc, total_count = 0, 0
        for idx, (label, text, offsets) in enumerate(dataloader):
            optimizer.zero_grad()
            predicted_label = model(text, offsets)
            loss = criterion(predicted_label, label)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.1)
            optimizer.step()
            total_acc += (predicted_label.argmax(1) == label).sum().item()
            total_count += label.size(0)
        return total_acc / total_count

    def evaluate(dataloader):
        model.eval()
        total_acc, total_count = 0, 0
        with torch.no_grad():
            for idx, (label, text, offsets) in enumerate(dataloader):
                predicted_label = model(text, offsets)
                total_acc += (predicted_label.argmax(1) == label).sum().item()
                total_count += label.size(0)
        return total_acc / total_count

    LR, BATCH_SIZE = 5, 16
    criterion = torch.nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1.0, gamma=0.1)
    total_accu = None
    num_train = int(len(train_iter) * 0.95)
    split_train_, split_valid_ = random_split(train_iter, [num_train, len(train_iter) - num_train])

    train_dataloader = DataLoader(split_train_, batch_size=BATCH_SIZE, shuffle=True, collate_fn=collate_batch)
    valid_dataloader = DataLoader(split_valid_, batch_size=BATCH_SIZE, shuffle=True, collate_fn=collate_batch)
    test_dataloader = DataLoader(test_iter, batch_size=BATCH_SIZE, shuffle=True, collate_fn=collate_batch)

    first_label, first_text, first_offsets = next(iter(train_dataloader))
    train_accs, lrs = [], []
    for epoch in range(1, epochs + 1):
        epoch_start_time = time.time()
        train_accs.append(train(train_dataloader))
        accu_val = evaluate(valid_dataloader)
        if total_accu is not None and total_accu > accu_val:
            scheduler.step()
        else:
            total_accu = accu_val
        lrs.append(scheduler.get_last_lr()[0])
        print("| end of epoch {:3d} | time: {:5.2f}s | valid accuracy {:8.3f} ".format(
            epoch, time.time() - epoch_start_time, accu_val))
    accu_test = evaluate(test_dataloader)
    print("test accuracy {:8.3f}".format(accu_test))

    ag_news_label = {1: "Sports", 2: "Business", 3: "Sci/Tec"}

    def predict(text, text_pipeline):
        with torch.no_grad():
            text = torch.tensor(text_pipeline(text))
            output = model(text, torch.tensor([0]))
            return output.argmax(1).item() + 1

    guess = ag_news_label[predict("the coach saw the team win the cup", text_pipeline)]
    return {"train_accs": train_accs, "test_accuracy": accu_test, "lrs": lrs, "guess": guess,
            "split": (len(split_train_), len(split_valid_)), "num_class": num_class,
            "offsets_ok": first_offsets.tolist()[0] == 0 and len(first_offsets) == len(first_label),
            "text_len": len(first_text)}


if __name__ == "__main__":
    main()
