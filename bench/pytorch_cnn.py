#!/usr/bin/python3
"""The `cnn` of the model zoo trained with PyTorch's Python API, for engine_bench's comparison.

Same layers and parameter count as core/models (conv(1->32)-BN-ReLU, conv(32->32)-BN-ReLU,
maxpool 2, conv(32->64)-BN-ReLU, conv(64->64)-BN-ReLU, maxpool 2, flatten, linear(3136->256)-ReLU,
linear(256->10): 871,018 parameters), batch 128 split into N microbatches with gradient
accumulation, SGD with momentum 0.9, one intra-op thread. Input is random 1x28x28 data with
random labels: the work per step is the same as on Fashion-MNIST.

Prints one JSON line: {"samples_per_s": ..., "parameters": ..., "torch": "..."}.
Used only by the benchmark (Debian package python3-torch); nothing else runs Python.
"""
import json
import sys
import time


def main():
    args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
    steps = int(args.get("--steps", "30"))
    microbatches = int(args.get("--microbatches", "1"))
    batch = int(args.get("--batch", "128"))
    import torch
    from torch import nn

    torch.set_num_threads(1)
    torch.manual_seed(1)

    def block(cin, cout):
        return [nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU()]

    model = nn.Sequential(*block(1, 32), *block(32, 32), nn.MaxPool2d(2), *block(32, 64), *block(64, 64),
                          nn.MaxPool2d(2), nn.Flatten(), nn.Linear(3136, 256), nn.ReLU(), nn.Linear(256, 10))
    params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    x = torch.randn(batch, 1, 28, 28)
    y = torch.randint(0, 10, (batch,))
    loss_fn = nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        for xs, ys in zip(x.chunk(microbatches), y.chunk(microbatches)):
            loss = loss_fn(model(xs), ys) * (xs.shape[0] / batch)
            loss.backward()
        opt.step()

    for _ in range(2):  # warm-up, as the engine's measurement skips its first steps
        step()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    elapsed = time.perf_counter() - start
    print(json.dumps({"samples_per_s": steps * batch / elapsed, "parameters": params, "torch": torch.__version__}))


if __name__ == "__main__":
    main()
