#!/usr/bin/python3
"""Export a PyTorch model for PipeMare Workbench as TorchScript, and write tensor datasets.

PipeMare pipelines an nn.Sequential: each top-level child is one partitionable unit, and each
unit's forward takes one tensor and returns one tensor. Your own model, in one line:

    torch.jit.script(nn.Sequential(block1, block2, ..., head)).save("model.pt")

(torch.jit.trace(model, example_input).save("model.pt") works too.) Your data, one file per split:

    torch.save({"x": x, "y": y}, "train.pt")   # x: [N, ...] float (or int64 tokens); y: [N] int64
                                                # class labels, [N, T] int64 next tokens, or float targets

This script exports three examples and writes small learnable datasets for them:

    scripts/export-model.py --model cnn --out cnn.pt --data-dir data/
    scripts/export-model.py --model resnet --out resnet.pt
    scripts/export-model.py --model transformer --out transformer.pt --data-dir data/

  cnn          the zoo's `cnn` (4 conv-BN-ReLU units, 2 linear units) on 1x28x28 images, 10 classes
  resnet       a residual network as a Sequential of blocks (stem, 4 residual blocks, head)
  transformer  a small causal Transformer: an embedding unit, 2 pre-LN blocks and a head, on byte
               tokens (vocabulary 256), context 32

--data-dir writes train.pt and eval.pt for the model's input (images for cnn and resnet: class
prototypes plus noise; byte sequences of a repeating text for transformer). Needs Debian's
python3-torch.
"""
import argparse
import collections
import json
import math
import os
import sys

import torch
from torch import nn


def conv_bn_relu(cin, cout, pool):
    layers = [nn.Conv2d(cin, cout, 3, padding=1, bias=True), nn.BatchNorm2d(cout), nn.ReLU()]
    if pool:
        layers.append(nn.MaxPool2d(2))
    return nn.Sequential(*layers)


def flatten_linear(cin, cout, relu):
    layers = [nn.Flatten(), nn.Linear(cin, cout)]
    if relu:
        layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def cnn():
    """The zoo's cnn, unit for unit and parameter for parameter (core/models/model_zoo.cpp)."""
    return nn.Sequential(collections.OrderedDict([
        ("conv1", conv_bn_relu(1, 32, False)),
        ("conv2", conv_bn_relu(32, 32, True)),
        ("conv3", conv_bn_relu(32, 64, False)),
        ("conv4", conv_bn_relu(64, 64, True)),
        ("fc1", flatten_linear(3136, 256, True)),
        ("fc2", flatten_linear(256, 10, False)),
    ]))


class ResidualBlock(nn.Module):
    """conv-BN-ReLU-conv-BN plus the input (a 1x1 projection when the shape changes), then ReLU."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(),
            nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout))
        self.shortcut = nn.Identity()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.body(x) + self.shortcut(x))


def resnet():
    return nn.Sequential(collections.OrderedDict([
        ("stem", nn.Sequential(nn.Conv2d(1, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU())),
        ("block1", ResidualBlock(16, 16, 1)),
        ("block2", ResidualBlock(16, 32, 2)),
        ("block3", ResidualBlock(32, 32, 1)),
        ("block4", ResidualBlock(32, 64, 2)),
        ("head", nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10))),
    ]))


class Embedding(nn.Module):
    """Token plus learned position embeddings: [B, T] int64 -> [B, T, d]."""

    def __init__(self, vocab, d, context):
        super().__init__()
        self.tokens = nn.Embedding(vocab, d)
        self.positions = nn.Parameter(torch.randn(context, d) * 0.02)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.tokens(x) + self.positions[: x.size(1)]


class Block(nn.Module):
    """A pre-LN causal Transformer block: x + attention(LN(x)), then x + MLP(LN(x))."""

    def __init__(self, d, heads, ff):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.attention = nn.MultiheadAttention(d, heads, batch_first=True)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, ff), nn.GELU(), nn.Linear(ff, d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = x.size(1)
        causal = torch.triu(torch.ones(t, t, dtype=torch.bool, device=x.device), diagonal=1)
        h = self.ln1(x)
        a, _ = self.attention(h, h, h, attn_mask=causal, need_weights=False)
        x = x + a
        return x + self.mlp(self.ln2(x))


def transformer(context=32, d=64, heads=4, ff=128, layers=2, vocab=256):
    units = [("embed", Embedding(vocab, d, context))]
    units += [("block%d" % (i + 1), Block(d, heads, ff)) for i in range(layers)]
    units.append(("head", nn.Sequential(nn.LayerNorm(d), nn.Linear(d, vocab))))
    return nn.Sequential(collections.OrderedDict(units))


MODELS = {"cnn": cnn, "resnet": resnet, "transformer": transformer}
TRANSFORMER_CONTEXT = 32


def example_input(name):
    if name == "transformer":
        return torch.randint(0, 256, (2, TRANSFORMER_CONTEXT))
    return torch.randn(2, 1, 28, 28)


def image_data(samples, seed):
    """Ten class prototypes (fixed) plus Gaussian noise (from `seed`): a learnable image problem."""
    prototypes = torch.randn(10, 1, 28, 28, generator=torch.Generator().manual_seed(1234))
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, 10, (samples,), generator=g)
    x = prototypes[y] + 0.8 * torch.randn(samples, 1, 28, 28, generator=g)
    return {"x": x, "y": y}


def token_data(samples, seed, context=TRANSFORMER_CONTEXT):
    """Windows of a repeating text, targets shifted by one byte (next-token prediction)."""
    text = b"the quick brown fox jumps over the lazy dog; pack my box with five dozen liquor jugs. " * 64
    data = torch.tensor(list(text), dtype=torch.int64)
    g = torch.Generator().manual_seed(seed)
    starts = torch.randint(0, data.numel() - context - 1, (samples,), generator=g)
    x = torch.stack([data[s : s + context] for s in starts.tolist()])
    y = torch.stack([data[s + 1 : s + context + 1] for s in starts.tolist()])
    return {"x": x, "y": y}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", choices=sorted(MODELS), required=True)
    parser.add_argument("--out", required=True, help="the TorchScript file to write")
    parser.add_argument("--trace", action="store_true", help="torch.jit.trace instead of torch.jit.script")
    parser.add_argument("--seed", type=int, default=1, help="the initial weights' seed")
    parser.add_argument("--data-dir", help="also write train.pt and eval.pt for this model's input here")
    parser.add_argument("--samples", type=int, default=512, help="training samples of --data-dir (eval: a quarter)")
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    model = MODELS[args.model]()
    scripted = torch.jit.trace(model, example_input(args.model)) if args.trace else torch.jit.script(model)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    # The PyTorch that wrote the file, as data (extra/producer.json): an engine built on an older
    # LibTorch refuses it by name rather than failing inside the interpreter.
    scripted.save(args.out, _extra_files={"producer.json": json.dumps({"torch": torch.__version__})})
    params = sum(p.numel() for p in model.parameters())
    print("%s: %s, %d units, %d parameters" % (args.out, args.model, len(model), params))

    if args.data_dir:
        os.makedirs(args.data_dir, exist_ok=True)
        make = token_data if args.model == "transformer" else image_data
        for split, count, seed in (("train", args.samples, 11), ("eval", max(1, args.samples // 4), 12)):
            path = os.path.join(args.data_dir, split + ".pt")
            data = make(count, seed)
            torch.save(data, path)
            print("%s: x %s, y %s" % (path, list(data["x"].shape), list(data["y"].shape)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
