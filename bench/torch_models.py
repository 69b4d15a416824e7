#!/usr/bin/env python3
"""PyTorch (CPU, eager) twins of the models bench/bench_models.py trains with
dtrain: ResNet-20 (sample_configs/resnet20_synthetic.yaml) on synthetic 32x32x3
images and the transformer classifier (bench/configs/transformer_bench.yaml)
on synthetic is_sorted token sequences. Same layers, initializers' scale,
optimizer, batch and thread count; the data are drawn like dtrain's sources
(same distributions, not the same numbers). Prints one JSON line: examples/s
over the steps after --warmup, the first step's loss, the mean loss of every
--log-every window (keyed by step count like dtrain's JSON step log) and the
trainable parameter count."""
import argparse
import json
import math
import time

import numpy as np
import torch
from torch import nn
import torch.nn.functional as F


# --- ResNet-20 -------------------------------------------------------------

def batch_norm(c):
    # Keras BatchNormalization defaults: epsilon 1e-3, momentum 0.99 (the
    # moving average keeps 0.99 of the old value; PyTorch's momentum is the
    # weight of the new one).
    return nn.BatchNorm2d(c, eps=1e-3, momentum=0.01)


class BasicBlock(nn.Module):
    """The `basic` block of resnet20_synthetic.yaml: 3x3 conv-BN-relu, 3x3
    conv-BN, added to the input or to its 1x1 conv-BN projection, relu."""

    def __init__(self, cin, cout, stride, project):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = batch_norm(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = batch_norm(cout)
        self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), batch_norm(cout)) if project \
            else nn.Identity()

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(y)) + self.shortcut(x))


class ResNet20(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 1, 1, bias=False), batch_norm(16), nn.ReLU())
        blocks, cin = [], 16
        for cout, stride in [(16, 1), (32, 2), (64, 2)]:
            for i in range(3):
                first = i == 0
                blocks.append(BasicBlock(cin, cout, stride if first else 1, first and cout != 16))
                cin = cout
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(64, classes)
        for m in self.modules():  # Keras defaults: glorot_uniform kernels, zero biases
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                nn.init.xavier_uniform_(m.weight)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)

    def forward(self, x):  # x: (B, 3, 32, 32)
        return self.fc(self.blocks(self.stem(x)).mean((2, 3)))


def synthetic_images(n, classes, seed):
    """Like dtrain's `format: synthetic`: normal features, labels the argmax of
    a fixed random linear map of them (so they can be learnt)."""
    g = np.random.default_rng(seed)
    x = g.standard_normal((n, 32, 32, 3), dtype=np.float32)
    w = g.standard_normal((32 * 32 * 3, classes), dtype=np.float32)
    y = (x.reshape(n, -1).astype(np.float64) @ w).argmax(1)
    # NHWC as dtrain reads it, handed to the model as NCHW (PyTorch's layout).
    return torch.from_numpy(x).permute(0, 3, 1, 2).contiguous(), torch.from_numpy(y.astype(np.int64))


# --- transformer classifier ------------------------------------------------

class TransformerClassifier(nn.Module):
    """token embedding + learned position embedding, post-norm encoder layers
    (self-attention, add, layer norm, relu MLP, add, layer norm), mean over
    the positions, dense to the classes: bench/configs/transformer_bench.yaml."""

    def __init__(self, vocab, seq_len, d_model, heads, ff, layers, classes=2):
        super().__init__()
        self.embedding = nn.Embedding(vocab, d_model)
        self.position = nn.Parameter(torch.empty(seq_len, d_model))
        self.encoders = nn.ModuleList(
            nn.TransformerEncoderLayer(d_model, heads, ff, dropout=0.0, activation="relu", layer_norm_eps=1e-3,
                                       batch_first=True, norm_first=False) for _ in range(layers))
        self.fc = nn.Linear(d_model, classes)
        # Keras/keras_hub initializers: Embedding uniform(-0.05, 0.05), position
        # embedding and dense kernels glorot_uniform, MultiHeadAttention's
        # query/key/value kernels glorot_uniform each (PyTorch packs them in one
        # (3d, d) matrix: initialise each third on its own), zero biases.
        nn.init.uniform_(self.embedding.weight, -0.05, 0.05)
        nn.init.xavier_uniform_(self.position)
        for enc in self.encoders:
            att = enc.self_attn
            for w in att.in_proj_weight.data.chunk(3):
                nn.init.xavier_uniform_(w)
            nn.init.zeros_(att.in_proj_bias)
            for lin in (att.out_proj, enc.linear1, enc.linear2):
                nn.init.xavier_uniform_(lin.weight)
                nn.init.zeros_(lin.bias)
        nn.init.xavier_uniform_(self.fc.weight)
        nn.init.zeros_(self.fc.bias)

    def forward(self, ids):  # ids: (B, T) int64
        x = self.embedding(ids) + self.position[:ids.shape[1]]
        for enc in self.encoders:
            x = enc(x)  # training mode: the eager path, self_attn(..., need_weights=False)
        return self.fc(x.mean(1))


def is_sorted_sequences(n, vocab, seq_len, seed):
    """Like dtrain's synthetic_sequence is_sorted: tokens drawn uniformly (at
    least two distinct values), then label 1 with probability 1/2: the tokens
    ascending; label 0: a random order that is not ascending."""
    g = np.random.default_rng(seed)
    x = g.integers(0, vocab, (n, seq_len))
    for i in np.flatnonzero((x == x[:, :1]).all(1)):
        while (x[i] == x[i, 0]).all():
            x[i] = g.integers(0, vocab, seq_len)
    y = g.integers(0, 2, n)
    x[y == 1] = np.sort(x[y == 1], axis=1)
    for i in np.flatnonzero(y == 0):
        while (np.diff(x[i]) >= 0).all():
            x[i] = g.permutation(x[i])
    return torch.from_numpy(x.astype(np.int64)), torch.from_numpy(y.astype(np.int64))


# --- training loop ---------------------------------------------------------

def build(a):
    if a.model == "resnet20":
        model = ResNet20()
        x, y = synthetic_images(a.examples, 10, a.data_seed)
        opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=0.9)
        return model, x, y, opt, 10
    model = TransformerClassifier(a.vocab, a.seq_len, a.d_model, a.heads, a.ff, a.layers)
    x, y = is_sorted_sequences(a.examples, a.vocab, a.seq_len, a.data_seed)
    opt = torch.optim.Adam(model.parameters(), lr=a.lr, eps=1e-7)  # Keras' epsilon
    return model, x, y, opt, 2


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", required=True, choices=["resnet20", "transformer"])
    p.add_argument("--steps", type=int, required=True, help="timed steps")
    p.add_argument("--warmup", type=int, required=True, help="untimed steps before them")
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--lr", type=float, required=True)
    p.add_argument("--examples", type=int, required=True, help="size of the training set")
    p.add_argument("--log-every", type=int, default=10, help="steps per window_losses entry")
    p.add_argument("--data-seed", type=int, default=1)
    p.add_argument("--vocab", type=int, default=16)
    p.add_argument("--seq-len", type=int, default=64)
    p.add_argument("--d-model", type=int, default=64)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--ff", type=int, default=128)
    p.add_argument("--layers", type=int, default=2)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(42)
    model, x, y, opt, classes = build(a)
    model.train()
    params = sum(t.numel() for t in model.parameters() if t.requires_grad)
    loss_fn = nn.CrossEntropyLoss()
    g = torch.Generator().manual_seed(42)
    perm, pos = torch.randperm(len(x), generator=g), 0
    losses, t0 = [], None
    for step in range(a.warmup + a.steps):
        if step == a.warmup:
            t0 = time.perf_counter()
        if pos + a.batch > len(x):  # a new epoch, reshuffled (a partial last batch is dropped)
            perm, pos = torch.randperm(len(x), generator=g), 0
        idx = perm[pos:pos + a.batch]
        pos += a.batch
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x[idx]), y[idx])
        loss.backward()
        opt.step()
        losses.append(loss.item())  # also waits for the step, as dtrain's step does
    secs = time.perf_counter() - t0
    n = a.log_every
    windows = [[s + n, float(np.mean(losses[s:s + n]))] for s in range(0, len(losses) - n + 1, n)]
    print(json.dumps({"examples_per_sec": a.steps * a.batch / secs, "timed_seconds": secs,
                      "first_step_loss": losses[0], "chance_loss": math.log(classes), "window_losses": windows,
                      "trainable_params": params, "torch_version": torch.__version__,
                      "cpu_capability": torch.backends.cpu.get_cpu_capability(),
                      "num_threads": torch.get_num_threads()}))


if __name__ == "__main__":
    main()
