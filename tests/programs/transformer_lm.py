"""The nn.Transformer language-modeling tutorial's shape: PositionalEncoding with register_buffer, a
TransformerEncoder over embedded tokens, causal masks from torch.triu(...float('-inf')) and
nn.Transformer.generate_square_subsequent_mask, Adam with gradient clipping (data: a cyclic token stream)."""
import math

import ember as torch
from ember import nn, Tensor
from ember.nn import TransformerEncoder, TransformerEncoderLayer


class PositionalEncoding(nn.Module):

    def __init__(self, d_model: int, dropout: float = 0.1, max_len: int = 5000):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)

        position = torch.arange(max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, 1, d_model)
        pe[:, 0, 0::2] = torch.sin(position * div_term)
        pe[:, 0, 1::2] = torch.cos(position * div_term)
        self.register_buffer('pe', pe)

    def forward(self, x: Tensor) -> Tensor:
        """
        Arguments:
            x: Tensor, shape ``[seq_len, batch_size, embedding_dim]``
        """
        x = x + self.pe[:x.size(0)]
        return self.dropout(x)


class TransformerModel(nn.Module):

    def __init__(self, ntoken: int, d_model: int, nhead: int, d_hid: int,
                 nlayers: int, dropout: float = 0.5):
        super().__init__()
        self.model_type = 'Transformer'
        self.pos_encoder = PositionalEncoding(d_model, dropout)
        encoder_layers = TransformerEncoderLayer(d_model, nhead, d_hid, dropout)
        self.transformer_encoder = TransformerEncoder(encoder_layers, nlayers)
        self.embedding = nn.Embedding(ntoken, d_model)
        self.d_model = d_model
        self.linear = nn.Linear(d_model, ntoken)

        self.init_weights()

    def init_weights(self) -> None:
        initrange = 0.1
        self.embedding.weight.data.uniform_(-initrange, initrange)
        self.linear.bias.data.zero_()
        self.linear.weight.data.uniform_(-initrange, initrange)

    def forward(self, src: Tensor, src_mask: Tensor = None) -> Tensor:
        """
        Arguments:
            src: Tensor, shape ``[seq_len, batch_size]``
            src_mask: Tensor, shape ``[seq_len, seq_len]``

        Returns:
            output Tensor of shape ``[seq_len, batch_size, ntoken]``
        """
        src = self.embedding(src) * math.sqrt(self.d_model)
        src = self.pos_encoder(src)
        if src_mask is None:
            src_mask = nn.Transformer.generate_square_subsequent_mask(len(src)).to(src.device)
        output = self.transformer_encoder(src, src_mask)
        output = self.linear(output)
        return output


def generate_square_subsequent_mask(sz: int) -> Tensor:
    """Generates an upper-triangular matrix of ``-inf``, with zeros on ``diag``."""
    return torch.triu(torch.ones(sz, sz) * float('-inf'), diagonal=1)


def batchify(data: Tensor, bsz: int) -> Tensor:
    seq_len = data.size(0) // bsz
    data = data[:seq_len * bsz]
    data = data.view(bsz, seq_len).t().contiguous()
    return data


def get_batch(source: Tensor, i: int, bptt: int):
    seq_len = min(bptt, len(source) - 1 - i)
    data = source[i:i + seq_len]
    target = source[i + 1:i + 1 + seq_len].reshape(-1)
    return data, target


def evaluate(model: nn.Module, eval_data: Tensor, criterion, ntokens: int, bptt: int) -> float:
    model.eval()
    total_loss = 0.
    with torch.no_grad():
        for i in range(0, eval_data.size(0) - 1, bptt):
            data, targets = get_batch(eval_data, i, bptt)
            seq_len = data.size(0)
            output = model(data)
            output_flat = output.view(-1, ntokens)
            total_loss += seq_len * criterion(output_flat, targets).item()
    return total_loss / (len(eval_data) - 1)


def main(epochs=6):
    torch.manual_seed(0)
    ntokens, bptt = 8, 8
    # a stream where each token is the successor (mod ntokens) of the one before, with random restarts
    g = torch.Generator().manual_seed(1)
    starts = torch.randint(0, ntokens, (40,), generator=g)
    stream = torch.cat([(s + torch.arange(6)) % ntokens for s in starts])
    train_data = batchify(stream[:160], 8)
    val_data = batchify(stream[160:], 4)

    ours = generate_square_subsequent_mask(bptt)
    theirs = nn.Transformer.generate_square_subsequent_mask(bptt)
    masks_equal = bool(torch.equal(ours, theirs))

    model = TransformerModel(ntokens, d_model=16, nhead=2, d_hid=32, nlayers=2, dropout=0.0)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1.0, gamma=0.95)

    val_losses = [evaluate(model, val_data, criterion, ntokens, bptt)]
    for epoch in range(1, epochs + 1):
        model.train()
        for batch, i in enumerate(range(0, train_data.size(0) - 1, bptt)):
            data, targets = get_batch(train_data, i, bptt)
            src_mask = generate_square_subsequent_mask(data.size(0))
            output = model(data, src_mask)
            loss = criterion(output.view(-1, ntokens), targets)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            optimizer.step()
        val_loss = evaluate(model, val_data, criterion, ntokens, bptt)
        val_losses.append(val_loss)
        print(f'| end of epoch {epoch:3d} | valid loss {val_loss:5.2f} | valid ppl {math.exp(val_loss):8.2f}')
        scheduler.step()
    return {"val_losses": val_losses, "masks_equal": masks_equal, "mask_row": ours[1].tolist(),
            "buffers": [name for name, _ in model.named_buffers()],
            "state_keys": list(model.state_dict())[:2]}


if __name__ == "__main__":
    main()
