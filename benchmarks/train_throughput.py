"""Training throughput: CapsNet baseline vs MLCN on this machine, in one run.

Measures images/s of full training steps (forward, margin + reconstruction loss,
backward, Adam step) at batch 100 on random 28x28 images, for the CapsNet baseline
(with its decoder) and MLCNs of Table 4.1. Models are measured in interleaved
rounds and the median round is reported, so drift hits every model alike.

    python benchmarks/train_throughput.py [--json] [--rounds 3] [--seconds 4]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

from nasmlcn.models import build_model, capsule_loss, count_parameters
from nasmlcn.specs import CapsNetSpec, MLCNSpec
from nasmlcn.training import make_optimizer

MODELS = ["2*mlcn1:4x1", "2*mlcn2:4x1", "8*mlcn1:4x1", "8*mlcn2:4x1"]


class Stepper:
    """One model with its optimizer and a fixed batch."""

    def __init__(self, spec: MLCNSpec | CapsNetSpec, batch: int, device: torch.device) -> None:
        torch.manual_seed(0)
        self.spec = spec
        self.model = build_model(spec).to(device)
        self.params = count_parameters(self.model)
        self.opt = make_optimizer(self.model.parameters(), 1e-3, device.type)  # as training
        self.x = torch.rand(batch, *spec.input_shape, device=device)
        self.y = torch.randint(0, spec.num_classes, (batch,), device=device)
        self.device = device

    def step(self) -> None:
        out = self.model(self.x, self.y)
        loss = capsule_loss(out.lengths, out.reconstruction, self.x, self.y).total
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()

    def images_per_second(self, seconds: float, min_steps: int = 3) -> float:
        steps, start = 0, time.perf_counter()
        while steps < min_steps or time.perf_counter() - start < seconds:
            self.step()
            steps += 1
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        return steps * self.x.shape[0] / (time.perf_counter() - start)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-size", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3, help="interleaved measurement rounds")
    parser.add_argument(
        "--seconds", type=float, default=4.0, help="minimum seconds per measurement"
    )
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--models", default=";".join(MODELS), help="';'-separated lane strings")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    device = torch.device(args.device)
    specs: list[MLCNSpec | CapsNetSpec] = [CapsNetSpec()]
    specs += [MLCNSpec.from_lanes(lanes) for lanes in args.models.split(";")]
    steppers = [Stepper(spec, args.batch_size, device) for spec in specs]
    for s in steppers:  # warm-up: allocator, oneDNN primitive caches
        for _ in range(2):
            s.step()
    rates: list[list[float]] = [[] for _ in steppers]
    for _ in range(args.rounds):
        for i, s in enumerate(steppers):
            rates[i].append(s.images_per_second(args.seconds))
    medians = [statistics.median(r) for r in rates]
    capsnet = medians[0]
    models = [
        {
            "lanes": s.spec.describe(),
            "params": s.params,
            "images_per_second": round(m, 1),
            "ratio_to_capsnet": round(m / capsnet, 2),
        }
        for s, m in zip(steppers[1:], medians[1:], strict=True)
    ]
    result = {
        "device": str(device),
        "threads": torch.get_num_threads(),
        "batch_size": args.batch_size,
        "capsnet_params": steppers[0].params,
        "capsnet_images_per_second": round(capsnet, 1),
        "models": models,
    }
    if args.json:
        print(json.dumps(result))
        return 0
    print(
        f"device {device}, {torch.get_num_threads()} threads, batch {args.batch_size}, "
        f"median of {args.rounds} rounds"
    )
    print(f"{'model':<16} {'params':>11} {'images/s':>9} {'x CapsNet':>9}")
    print(f"{'capsnet':<16} {steppers[0].params:>11,} {capsnet:>9.1f} {1.0:>9.2f}")
    for m in models:
        print(
            f"{m['lanes']:<16} {m['params']:>11,} {m['images_per_second']:>9.1f} "
            f"{m['ratio_to_capsnet']:>9.2f}"
        )
    return 0


if __name__ == "__main__":
    from nasmlcn.reproduce.engines.common import exit_with

    exit_with(main())
