"""Fused lane groups against the per-lane loop: training-step time, in one process.

For each model, one training step (forward, margin + reconstruction loss, backward,
Adam) at batch ``--batch`` on random images, on ``--device``, timed with the lanes
run one after another and with lanes of one kind fused (``MLCN.fuse_lanes``),
alternating the paths ``--repeats`` times after a warm-up; the figure is the median
step time of each. With ``--compile``, a third path: a copy of the fused model
(same seed, same weights) under ``torch.compile`` (``--compile-mode``,
``--compile-backend``), timed in the same alternation; its compilation happens in
its warm-up steps, is excluded from the step time and reported on its own
(``compile_seconds``). A compilation that fails (no C++ compiler, an unknown
backend...) skips that path with the reason (``compile_skipped``) and the other
two are still reported.

Printed per model: its training FLOPs per step (torch's FLOP counter), the rate of
each path in GFLOP/s and as a share of this device's single-matrix-product rate
(``sgemm``, float32, measured in the same run), and the speedup of fused over
per-lane. Beside it, the batch-1 inference latency of the eager paths (eval mode,
no autograd). Then the time per FLOP of the many-narrow-lane models over that of
the same kinds as a few wide lanes, per path (the issue's target: within 1.3x when
fused). On CUDA the device is synchronised before every clock reading, so a step's
time is its kernels' time, not their launch.

    python benchmarks/fused_lanes.py                 # 1 thread, batch 100, CPU
    python benchmarks/fused_lanes.py --quick --json
    python benchmarks/fused_lanes.py --device cuda --compile --model '32*mlcn2:2x1'
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch
from _space_models import default_space_specs
from torch import nn

from nasmlcn._allocator import keep_freed_memory
from nasmlcn.models import build_model, capsule_loss
from nasmlcn.specs import MLCNSpec
from nasmlcn.training import make_optimizer

MODELS = (
    "48*mlcn2:2x1",
    "3*mlcn2:8x1",
    "64*mlcn2:1x1",
    "4*mlcn2:4x1",
    "36*mlcn2:2x2",
    "4*mlcn2:6x2",
    "20*mlcn1:2x1,20*mlcn2:2x4,8*mlcn1:2x2",
)
PAIRS = (("64*mlcn2:1x1", "4*mlcn2:4x1"), ("36*mlcn2:2x2", "4*mlcn2:6x2"))
"""Many narrow lanes and the same kind as a few wide lanes (the issue's examples)."""

COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
"""``torch.compile``'s modes; ``reduce-overhead`` records CUDA graphs."""


def sync(device: torch.device) -> None:
    """Waits for the device's queued work (CUDA kernels return at launch)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def clock(device: torch.device) -> float:
    """``time.perf_counter()`` once everything queued on ``device`` has run."""
    sync(device)
    return time.perf_counter()


def sgemm_rate(device: torch.device, size: int = 1024, repeats: int = 5) -> float:
    """FLOP/s of one ``size`` x ``size`` float32 matrix product on ``device`` (at
    torch's current TF32 setting: off by default, so FP32)."""
    a = torch.randn(size, size, device=device)
    b = torch.randn(size, size, device=device)
    a @ b
    times = []
    for _ in range(repeats):
        start = clock(device)
        a @ b
        times.append(clock(device) - start)
    return 2 * size**3 / min(times)


def step_flops(lanes: str, batch: int, device: torch.device) -> int:
    from torch.utils.flop_counter import FlopCounterMode

    # Counted on the per-lane path: the same arithmetic, but torch's counter takes a
    # grouped convolution's backward for a dense one (369 GFLOP for 48*mlcn2:2x1's
    # fused step against 32.6 counted per lane)
    model = build_model(MLCNSpec.from_lanes(lanes)).to(device)
    model.fuse_lanes = False
    x = torch.rand(batch, 1, 28, 28, device=device)
    y = torch.randint(0, 10, (batch,), device=device)
    with FlopCounterMode(display=False) as counter:
        out = model(x, y)
        capsule_loss(out.lengths, out.reconstruction, x, y).total.backward()
    return int(counter.get_total_flops())


def _trainer(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    device: torch.device,
    forward: Callable[..., Any] | None = None,
) -> Callable[[], float]:
    """One timed training step of ``model`` (its own Adam, as training builds it for
    ``device``) on the batch ``x, y``, through ``forward`` (default: the model itself;
    e.g. its compiled form)."""
    optimizer = make_optimizer(model.parameters(), 1e-3, device.type)
    run = model if forward is None else forward

    def step() -> float:
        start = clock(device)
        optimizer.zero_grad(set_to_none=True)
        out = run(x, y)
        capsule_loss(out.lengths, out.reconstruction, x, y).total.backward()
        optimizer.step()
        return clock(device) - start

    return step


def _reason(err: BaseException) -> str:
    """The first line of an error, with its type."""
    lines = str(err).strip().splitlines()
    return f"{type(err).__name__}: {lines[0]}" if lines else type(err).__name__


def time_steps(
    lanes: str,
    batch: int,
    repeats: int,
    warmup: int,
    device: torch.device,
    compile_options: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Median step seconds per path (``per_lane``, ``fused``, and ``compiled`` with
    ``compile_options``, the keyword arguments of ``torch.compile``), alternating;
    with ``compile_options``, also ``compile_seconds`` (the compiled path's warm-up,
    compilation included) or ``compile_skipped`` (why it could not run)."""
    torch.manual_seed(0)
    model = build_model(MLCNSpec.from_lanes(lanes)).to(device)
    x = torch.rand(batch, 1, 28, 28, device=device)
    y = torch.randint(0, 10, (batch,), device=device)
    eager = _trainer(model, x, y, device)

    def path(fused: bool) -> Callable[[], float]:
        def run() -> float:
            model.fuse_lanes = fused
            return eager()

        return run

    paths: dict[str, Callable[[], float]] = {"per_lane": path(False), "fused": path(True)}
    for run in paths.values():
        for _ in range(warmup):
            run()
    extra: dict[str, Any] = {}
    if compile_options is not None:
        # A copy (same seed, same weights) so that toggling the eager model's
        # fuse_lanes never invalidates the compiled graph's guards
        torch.manual_seed(0)
        twin = build_model(MLCNSpec.from_lanes(lanes)).to(device)
        twin.fuse_lanes = True
        try:
            forward = torch.compile(
                twin, mode=compile_options["mode"], backend=compile_options["backend"]
            )
            compiled = _trainer(twin, x, y, device, forward)
            started = clock(device)
            for _ in range(max(warmup, 2)):  # the first compiles, the next settle (graphs)
                compiled()
            extra["compile_seconds"] = clock(device) - started
            paths["compiled"] = compiled
        except Exception as err:  # any failure of the compiler stack skips the path
            extra["compile_skipped"] = _reason(err)
    order = list(paths)
    seconds: dict[str, list[float]] = {name: [] for name in order}
    for r in range(repeats):
        for name in order if r % 2 == 0 else order[::-1]:  # ABBA order
            seconds[name].append(paths[name]())
    return {"seconds": {name: statistics.median(v) for name, v in seconds.items()}, **extra}


def time_inference(lanes: str, repeats: int, device: torch.device) -> dict[str, float]:
    """Median seconds of one batch-1 forward pass (eval mode, no autograd), per-lane
    and fused, alternating."""
    torch.manual_seed(0)
    model = build_model(MLCNSpec.from_lanes(lanes)).to(device).eval()
    x = torch.rand(1, 1, 28, 28, device=device)
    seconds: dict[str, list[float]] = {"per_lane": [], "fused": []}
    with torch.inference_mode():
        for fused in (False, True):
            model.fuse_lanes = fused
            model(x)
        for i in range(2 * repeats):
            fused = (i % 2 == 1) if (i // 2) % 2 == 0 else (i % 2 == 0)  # ABBA order
            model.fuse_lanes = fused
            start = clock(device)
            model(x)
            seconds["fused" if fused else "per_lane"].append(clock(device) - start)
    return {name: statistics.median(values) for name, values in seconds.items()}


def quickstart_models(count: int, seed: int = 0) -> list[str]:
    """``count`` models of the default search space as ``scripts/quickstart.sh`` sets
    it up (random parameters, seeded)."""
    from nasmlcn.specs import format_lanes

    specs = default_space_specs(
        count, seed, devices="8xK80", mem="12GB", flops="0.5x", dataset="synthetic"
    )
    return [format_lanes(spec.lanes) for spec in specs]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5, help="steps per path")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N [default: cpu]")
    parser.add_argument("--model", action="append", help="lanes (repeatable)")
    parser.add_argument(
        "--compile",
        action="store_true",
        help="also time the fused model under torch.compile (compile time excluded)",
    )
    parser.add_argument("--compile-mode", choices=COMPILE_MODES, default="default")
    parser.add_argument(
        "--compile-backend", default="inductor", help="torch.compile backend [default: inductor]"
    )
    parser.add_argument(
        "--quickstart",
        type=int,
        default=0,
        metavar="N",
        help="also N models drawn at random (seeded) from the default space as the "
        "quickstart sets it up (8xK80, 12GB, --flops 0.5x)",
    )
    parser.add_argument("--quick", action="store_true", help="batch 10, 2 steps, 2 models")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        parser.error(f"--device {args.device}: torch sees no CUDA device here")
    keep_freed_memory()  # as training does (nasmlcn/_allocator.py); both paths alike
    models = args.model or list(MODELS)
    if args.quick:
        args.batch, args.repeats, args.warmup = 10, 2, 1
        models = args.model or ["8*mlcn2:1x1", "2*mlcn2:2x1"]
    if args.quickstart:
        models += quickstart_models(args.quickstart)
    compile_options = None
    if args.compile:
        compile_options = {"mode": args.compile_mode, "backend": args.compile_backend}
    # a GPU needs a larger product than a CPU to reach its rate
    sgemm = sgemm_rate(device, 4096 if device.type == "cuda" else 1024)
    rows = []
    for lanes in models:
        flops = step_flops(lanes, args.batch, device)
        timed = time_steps(lanes, args.batch, args.repeats, args.warmup, device, compile_options)
        times = timed.pop("seconds")
        latency = time_inference(lanes, 5 * args.repeats, device)
        row = {
            "lanes": lanes,
            "flops": flops,
            "seconds": times,
            "gflops": {k: flops / v / 1e9 for k, v in times.items()},
            "share_of_sgemm": {k: flops / v / sgemm for k, v in times.items()},
            "speedup": times["per_lane"] / times["fused"],
            "batch1_seconds": latency,
            **timed,
        }
        if "compiled" in times:
            row["compiled_speedup"] = times["per_lane"] / times["compiled"]
        rows.append(row)
    by_lanes = {r["lanes"]: r for r in rows}
    pairs = [
        {
            "narrow": narrow,
            "wide": wide,
            **{
                f"per_flop_ratio_{path}": (
                    by_lanes[narrow]["seconds"][path] / by_lanes[narrow]["flops"]
                )
                / (by_lanes[wide]["seconds"][path] / by_lanes[wide]["flops"])
                for path in by_lanes[narrow]["seconds"]
                if path in by_lanes[wide]["seconds"]
            },
        }
        for narrow, wide in PAIRS
        if narrow in by_lanes and wide in by_lanes
    ]
    result = {
        "device": str(device),
        "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "tf32_matmul": torch.backends.cuda.matmul.allow_tf32,
        "threads": args.threads,
        "batch": args.batch,
        "steps_per_path": args.repeats,
        "sgemm_gflops": sgemm / 1e9,
        "compile": compile_options,
        "models": rows,
        "pairs": pairs,
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(
        f"{result['device_name']} ({device}), {args.threads} thread(s), batch {args.batch}, "
        f"median of {args.repeats} training steps per path (alternating; % = share of "
        f"sgemm's rate, {sgemm / 1e9:.0f} GFLOP/s); batch-1 inference: median of "
        f"{5 * args.repeats} forward passes per path"
    )
    if compile_options is not None:
        print(
            f"compiled: torch.compile(mode={args.compile_mode!r}, backend="
            f"{args.compile_backend!r}) of the fused model; compile time excluded (warm-up)"
        )
    show = ["per_lane", "fused"] + (["compiled"] if compile_options is not None else [])
    header = "".join(f"{p.replace('_', '-'):>18}" for p in show)
    print(f"{'model':42} {'GFLOP':>7}{header} {'speedup':>8} {'batch-1 per-lane':>17} {'fused':>8}")
    for r in rows:
        cells = [
            f"{r['seconds'][p] * 1e3:7.1f} ms {r['share_of_sgemm'][p]:5.0%}"
            if p in r["seconds"]
            else "skipped"
            for p in show
        ]
        print(
            f"{r['lanes']:42} {r['flops'] / 1e9:7.2f}{''.join(f'{c:>18}' for c in cells)} "
            f"{r['speedup']:7.2f}x {r['batch1_seconds']['per_lane'] * 1e3:14.1f} ms "
            f"{r['batch1_seconds']['fused'] * 1e3:5.1f} ms"
        )
        if "compile_seconds" in r:
            print(f"  compiled: {r['compile_seconds']:.1f} s of compilation and warm-up")
        if "compile_skipped" in r:
            print(f"  compiled: skipped ({r['compile_skipped']})")
    for p in pairs:
        ratios = ", ".join(
            f"{k.removeprefix('per_flop_ratio_').replace('_', '-')} {v:.2f}x"
            for k, v in p.items()
            if k.startswith("per_flop_ratio_")
        )
        print(f"time per FLOP, {p['narrow']} / {p['wide']}: {ratios}")
    return 0


if __name__ == "__main__":
    from nasmlcn.reproduce.engines.common import exit_with

    exit_with(main())
