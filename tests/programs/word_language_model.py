"""The word_language_model example's shape: a corpus batchified into columns, an Embedding + LSTM + Linear model,
truncated BPTT with ``repackage_hidden``, clip_grad_norm_, perplexity via math.exp and manual SGD on ``p.data``."""
import math

import ember as torch
import ember.nn as nn


class RNNModel(nn.Module):
    """Container module with an encoder, a recurrent module, and a decoder."""

    def __init__(self, ntoken, ninp, nhid, nlayers, dropout=0.2, tie_weights=False):
        super(RNNModel, self).__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        if tie_weights:
            if nhid != ninp:
                raise ValueError('When using the tied flag, nhid must be equal to emsize')
            self.decoder.weight = self.encoder.weight
        self.init_weights()
        self.nhid = nhid
        self.nlayers = nlayers

    def init_weights(self):
        initrange = 0.1
        nn.init.uniform_(self.encoder.weight, -initrange, initrange)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -initrange, initrange)

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = self.decoder(output)
        decoded = decoded.view(-1, self.ntoken)
        return nn.functional.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        return (weight.new_zeros(self.nlayers, bsz, self.nhid),
                weight.new_zeros(self.nlayers, bsz, self.nhid))


class Dictionary(object):
    def __init__(self):
        self.word2idx = {}
        self.idx2word = []

    def add_word(self, word):
        if word not in self.word2idx:
            self.idx2word.append(word)
            self.word2idx[word] = len(self.idx2word) - 1
        return self.word2idx[word]

    def __len__(self):
        return len(self.idx2word)


def tokenize(text, dictionary):
    idss = []
    for line in text.split("\n"):
        words = line.split() + ['<eos>']
        for word in words:
            dictionary.add_word(word)
        idss.append(torch.tensor([dictionary.word2idx[w] for w in words]).type(torch.int64))
    return torch.cat(idss)


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    data = data.view(bsz, -1).t().contiguous()
    return data


def repackage_hidden(h):
    """Wraps hidden states in new Tensors, to detach them from their history."""
    if isinstance(h, torch.Tensor):
        return h.detach()
    else:
        return tuple(repackage_hidden(v) for v in h)


def get_batch(source, i, bptt):
    seq_len = min(bptt, len(source) - 1 - i)
    data = source[i:i + seq_len]
    target = source[i + 1:i + 1 + seq_len].view(-1)
    return data, target


TEXT = "\n".join(["the cat sat on the mat", "the dog sat on the log", "a cat and a dog met on the mat",
                  "the cat saw the dog", "the dog saw the cat on the log"] * 6)


def evaluate(model, data_source, criterion, eval_batch_size, bptt, ntokens):
    model.eval()
    total_loss = 0.
    hidden = model.init_hidden(eval_batch_size)
    with torch.no_grad():
        for i in range(0, data_source.size(0) - 1, bptt):
            data, targets = get_batch(data_source, i, bptt)
            output, hidden = model(data, hidden)
            hidden = tuple(h.detach() for h in hidden)
            total_loss += len(data) * criterion(output, targets).item()
    return total_loss / (len(data_source) - 1)


def main(epochs=8):
    torch.manual_seed(1111)
    corpus = Dictionary()
    ids = tokenize(TEXT, corpus)
    train_data = batchify(ids, 4)
    val_data = batchify(ids[: len(ids) // 2], 2)
    ntokens = len(corpus)
    bptt, lr, clip = 8, 20.0, 0.25
    model = RNNModel(ntokens, 32, 32, 1, dropout=0.0, tie_weights=True)
    criterion = nn.NLLLoss()

    val_ppls, train_losses = [], []
    start = evaluate(model, val_data, criterion, 2, bptt, ntokens)
    for epoch in range(1, epochs + 1):
        model.train()
        total_loss = 0.
        hidden = model.init_hidden(4)
        for batch, i in enumerate(range(0, train_data.size(0) - 1, bptt)):
            data, targets = get_batch(train_data, i, bptt)
            model.zero_grad()
            hidden = repackage_hidden(hidden)
            output, hidden = model(data, hidden)
            loss = criterion(output, targets)
            loss.backward()

            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
            for p in model.parameters():
                p.data.add_(p.grad, alpha=-lr)

            total_loss += loss.item()
        train_losses.append(total_loss / (batch + 1))
        val_loss = evaluate(model, val_data, criterion, 2, bptt, ntokens)
        print('| end of epoch {:3d} | valid loss {:5.2f} | valid ppl {:8.2f}'.format(
            epoch, val_loss, math.exp(val_loss)))
        val_ppls.append(math.exp(val_loss))

    # generate a few words, as generate.py does
    model.eval()
    hidden = model.init_hidden(1)
    input = torch.randint(ntokens, (1, 1), dtype=torch.long)
    words = []
    with torch.no_grad():
        for i in range(10):
            output, hidden = model(input, hidden)
            word_weights = output.squeeze().div(1.0).exp().cpu()
            word_idx = torch.multinomial(word_weights, 1)[0]
            input.fill_(word_idx)
            words.append(corpus.idx2word[word_idx])
    return {"start_ppl": math.exp(start), "val_ppls": val_ppls, "train_losses": train_losses,
            "ntokens": ntokens, "words": words,
            "tied": model.decoder.weight is model.encoder.weight}


if __name__ == "__main__":
    main()
