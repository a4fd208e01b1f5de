"""Training speed on a GPU: images/s of full training steps, eager and CUDA-graphed,
for CapsNet and MLCNs, with a profile of each model's steps.

A step is the library's own (``nasmlcn.training._step.TrainStep``: forward, margin +
reconstruction loss, backward, Adam as training builds it), on a fixed random batch,
per model and per ``--batch``. Two paths: eager, and graphed (the step replayed from
a CUDA graph, captured at its third step; ``capture_seconds``). Off a GPU the graphed
path runs eagerly and says so (``"graphed": false``): a dry run. Every path of every
model is warmed up, then timed for ``--seconds`` in each of ``--rounds`` interleaved
rounds (models and paths alternate, so drift hits all alike); the figure is the
median round, and its ratio to CapsNet's (same batch, same path, same run). On CUDA
the device is synchronised before every clock reading.

Each model's forward FLOPs per image are counted once (torch's ``FlopCounterMode``,
as the cost models' conformance tests count them: 2 per multiply-add of convolutions
and matrix products; one training-mode pass with labels at batch 100 on the meta
device, so no arithmetic is done), and its FLOP rate (images/s x forward GFLOP per
image) is set against CapsNet's beside the images/s ratio: a model that does more
work per image can train fewer images/s and still use the GPU as well.

Then a profile of each model at ``--profile-batch``, both paths, over
``--profile-steps`` steps after the warm-up (``_gpu_profile.py``): kernels and
launches per step, GPU-busy time against wall time, the optimizer's share, the top
kernels; with ``--profile-dir``, a short text file per model there. A model that
fails (out of memory...) is reported with its reason and the others go on; progress
goes to stderr, so a run cut short still leaves its figures so far. A SIGTERM (what
``timeout`` sends at a step's limit) ends the run with the rounds measured until then
(``"stopped"`` says so; exit 1), not with nothing.

``--layer-path``: how the MLCNs run their stacks' later conv layers (``MLCN.layer_path``:
``grouped`` convolutions, the default, or ``bmm``, batched matrix products); ``both``:
each MLCN under each (``<model>@grouped``, ``<model>@bmm``; the order alternating
round by round), bmm's images/s and kernels per step set against grouped's.

    python benchmarks/gpu_speed.py --device cuda:0
    python benchmarks/gpu_speed.py --device cuda:0 --rounds 3 --seconds 1 --profile-dir prof --json
    python benchmarks/gpu_speed.py --device cuda:0 --batch 100 --layer-path both
    python benchmarks/gpu_speed.py --quick --device cpu --json    # a dry run (tests)
"""

from __future__ import annotations

import argparse
import functools
import json
import re
import signal
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import torch
from _gpu_profile import describe, profile_steps
from _speed_table import PATHS, kernels_per_step, print_table
from layer_paths import LAYER_PATHS, clock, compare_layer_paths, round_order, split

from nasmlcn._allocator import keep_freed_memory
from nasmlcn.models import MLCN, build_model, count_parameters
from nasmlcn.specs import ArchSpec, CapsNetSpec, MLCNSpec
from nasmlcn.training import make_optimizer
from nasmlcn.training._step import WARMUP_STEPS, TrainStep, graphs_apply

CAPSNET = "capsnet"
SEEDED_MODELS = {
    # the first model of default_space_specs(1, seed, devices="8xK80", mem="12GB")
    # (benchmarks/_space_models.py: the default space, mlcn-buckets, at --flops 1x, as
    # the main job's search builds it); tests/benchmarks/test_gpu_speed.py checks it
    1: "48*mlcn2:2x4,8*mlcn2:5x5",
    3: "20*mlcn1:2x4,20*mlcn2:3x1,16*mlcn1:2x2",
}
MODELS = (
    CAPSNET,
    "8*mlcn2:4x1",  # thesis Table 4.1 (the text's lanes)
    "8*mlcn2-ref:4x1",  # Table 4.1 in the reference code's lanes: 3.4x CapsNet's FLOPs
    "32*mlcn2:2x1",
    "26*mlcn1:1x2,22*mlcn2:1x4,8*mlcn1:3x4,2*mlcn2:2x4",  # a 58-lane default-space model
    *SEEDED_MODELS.values(),  # two more default-space models (56 lanes each)
)
QUICK_MODELS = (CAPSNET, "4*mlcn2:1x1", "2*mlcn2-ref:1x1")
FLOP_BATCH = 100
"""Batch of the pass whose FLOPs are counted (per image: mlcn2's folded 1x1 kernel is
made once a pass, under 1 % of a model's FLOPs at this batch)."""
WARMUP = WARMUP_STEPS + 2
"""Steps before timing: the graph is captured at step WARMUP_STEPS + 1, replayed after."""
MAX_FILE = 19_000
"""Characters of a profile file at most."""


def spec_of(label: str) -> ArchSpec:
    name = split(label)[0]
    return CapsNetSpec() if name == CAPSNET else MLCNSpec.from_lanes(name)


def slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", name.replace("*", "x")).strip("-")


def forward_gflop(spec: ArchSpec, model: torch.nn.Module, batch: int = FLOP_BATCH) -> float:
    """Forward GFLOP per image of ``model`` (``spec``'s, moved to the meta device), as
    torch's ``FlopCounterMode`` counts them (``tests/conformance/test_cost_models.py``
    holds the analytic cost model's ``forward_flops`` to the same count; it has no
    CapsNet): one pass in training mode, labels given (the decoder reads them)."""
    from torch.utils.flop_counter import FlopCounterMode

    model = model.to("meta")
    model.train()
    x = torch.rand(batch, *spec.input_shape, device="meta")
    y = torch.randint(0, spec.num_classes, (batch,), device="meta")
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model(x, y)
    return counter.get_total_flops() / batch / 1e9


def model_facts(label: str) -> dict[str, Any]:
    """A model's parameters and forward GFLOP per image (None if it cannot be counted)."""
    name, layer_path = split(label)
    facts: dict[str, Any] = {"model": name, "params": count_parameters(build_model(spec_of(name)))}
    facts["forward_gflop_per_image"] = counted_gflop(name)  # whatever the layer path
    return {**facts, "label": label, "layer_path": layer_path, "batches": []}


@functools.cache
def counted_gflop(name: str) -> float | None:
    spec = spec_of(name)
    try:
        return forward_gflop(spec, build_model(spec))
    except Exception as err:  # a count that fails loses the FLOP rates only
        log(f"{name}: forward FLOPs not counted: {_error(err)}")
        return None


def add_flop_rates(models: dict[str, dict[str, Any]]) -> None:
    """Per timed row and path: the FLOP rate (images/s x forward GFLOP per image) and
    its ratio to CapsNet's at the same batch and path (None where either is unknown)."""
    for model in models.values():
        gflop = model["forward_gflop_per_image"]
        for row in model["batches"]:
            for path in (p for p in PATHS if p in row):
                figures = row[path]
                rate = None if gflop is None else figures["images_per_second"] * gflop
                figures["forward_gflop_per_second"] = rate
    capsnet = {row["batch"]: row for row in models[CAPSNET]["batches"]}
    for model in models.values():
        for row in model["batches"]:
            for path in (p for p in PATHS if p in row):
                rate = row[path]["forward_gflop_per_second"]
                base = capsnet[row["batch"]].get(path, {}).get("forward_gflop_per_second")
                ratio = rate / base if rate is not None and base else None
                row[path]["flop_rate_ratio_to_capsnet"] = ratio


class Stepper:
    """One model (by label: with its layer path) on one path: its optimizer, step and
    fixed batch."""

    def __init__(self, label: str, batch: int, device: torch.device, graphs: bool) -> None:
        torch.manual_seed(0)
        spec, layer_path = spec_of(label), split(label)[1]
        model = build_model(spec).to(device)
        if isinstance(model, MLCN) and layer_path is not None:
            model.layer_path = layer_path  # a plain attribute: the same parameters
        model.train()
        self.params = count_parameters(model)
        optimizer = make_optimizer(model.parameters(), 1e-3, device.type)
        self.graphed = graphs_apply(model, device, graphs)
        self.step = TrainStep(
            model, optimizer, inputs=lambda x: x, reconstruction_weight=0.0005, graphs=self.graphed
        )
        self.x = torch.rand(batch, *spec.input_shape, device=device)
        self.y = torch.randint(0, spec.num_classes, (batch,), device=device)
        self.device = device

    def __call__(self) -> None:
        self.step(self.x, self.y)

    def warm_up(self) -> None:
        for _ in range(WARMUP):
            self()
        clock(self.device)
        # a capture that failed (logged by the step) leaves the step eager: say so
        self.graphed = self.graphed and self.step.capture_seconds > 0

    def images_per_second(self, seconds: float, min_steps: int = 3) -> float:
        steps, start = 0, clock(self.device)
        while steps < min_steps or time.perf_counter() - start < seconds:
            self()
            steps += 1
        return steps * self.x.shape[0] / (clock(self.device) - start)


def log(text: str) -> None:
    """A progress line on stderr (what a run cut short by a timeout still leaves)."""
    print(f"[gpu_speed] {text}", file=sys.stderr, flush=True)


def _error(err: BaseException) -> str:
    return f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"[:300]


def build(
    names: list[str], batch: int, device: torch.device
) -> tuple[dict[tuple[str, str], Stepper], dict[str, str]]:
    """Warmed-up steppers per (model, path) at ``batch``; the models that failed
    (out of memory, a failed capture...) with the reason."""
    steppers: dict[tuple[str, str], Stepper] = {}
    failed: dict[str, str] = {}
    for name in names:
        try:
            for path in PATHS:
                start = time.perf_counter()
                stepper = Stepper(name, batch, device, graphs=path == "graphed")
                stepper.warm_up()
                steppers[name, path] = stepper
                log(
                    f"batch {batch}: {name} {path} built and warmed up in "
                    f"{time.perf_counter() - start:.1f} s (graphed: {stepper.graphed})"
                )
        except Exception as err:  # one model's failure loses that model only
            failed[name] = _error(err)
            log(f"batch {batch}: {name} failed: {failed[name]}")
            for path in PATHS:
                steppers.pop((name, path), None)
            if device.type == "cuda":
                torch.cuda.empty_cache()
    return steppers, failed


def measure_batch(
    names: list[str], batch: int, args: argparse.Namespace, device: torch.device
) -> tuple[dict[str, dict[str, Any]], dict[tuple[str, str], Stepper]]:
    """Per model, the figures of both paths at ``batch`` (interleaved rounds); and the
    steppers, for a profile."""
    steppers, failed = build(names, batch, device)
    rates: dict[tuple[str, str], list[float]] = {key: [] for key in steppers}
    try:
        for r in range(args.rounds):
            for name in round_order(names, r):
                for path in PATHS if r % 2 == 0 else PATHS[::-1]:
                    if (name, path) in steppers:
                        stepper = steppers[name, path]
                        rate = stepper.images_per_second(args.seconds, args.min_steps)
                        rates[name, path].append(rate)
                        log(
                            f"batch {batch} round {r + 1}/{args.rounds}: {name} {path} {rate:.0f} img/s"
                        )
    except TimeUp as up:  # the rounds so far are the figures
        args.stopped = str(up)
    rows: dict[str, dict[str, Any]] = {}
    for name in names:
        untimed = [p for p in PATHS if (name, p) in rates and not rates[name, p]]
        if name in failed or untimed:
            rows[name] = {"batch": batch, "error": failed.get(name, f"not timed: {args.stopped}")}
            continue
        row: dict[str, Any] = {"batch": batch}
        for path in PATHS:
            stepper = steppers[name, path]
            per_round = rates[name, path]
            row[path] = {
                "images_per_second": statistics.median(per_round),
                "rounds": len(per_round),
                "per_round": per_round,
                "graphed": stepper.graphed,
                "capture_seconds": stepper.step.capture_seconds,
            }
        row["graphed_speedup"] = (
            row["graphed"]["images_per_second"] / row["eager"]["images_per_second"]
        )
        rows[name] = row
    for path in PATHS:
        base = rows[CAPSNET].get(path, {}).get("images_per_second")
        for row in rows.values():
            if path in row:
                row[path]["ratio_to_capsnet"] = (
                    row[path]["images_per_second"] / base if base else None
                )
    return rows, steppers


def profile_model(
    name: str,
    steppers: dict[tuple[str, str], Stepper],
    steps: int,
    device: torch.device,
    timed: dict[str, Any] | None,
) -> tuple[dict[str, Any], str]:
    """Both paths of a model profiled: their figures and the text for its file;
    ``timed``: the model's timed row at this batch, if any (the GPU-busy share of an
    unprofiled step, which the profiler does not slow down)."""
    figures: dict[str, Any] = {}
    text: list[str] = []
    for path in PATHS:
        stepper = steppers[name, path]
        try:
            figures[path], table = profile_steps(stepper, steps, device)
        except Exception as err:  # a profiler failure loses that profile only
            figures[path] = {"error": _error(err)}
            text += [f"{path}: profile failed ({figures[path]['error']})", ""]
            continue
        figures[path]["graphed"] = stepper.graphed
        if timed is not None and path in timed:
            ms = 1e3 * stepper.x.shape[0] / timed[path]["images_per_second"]
            busy = figures[path]["gpu_busy_ms_per_step"]
            figures[path]["unprofiled_ms_per_step"] = ms
            figures[path]["gpu_busy_share_unprofiled"] = None if busy is None else busy / ms
        text += [*describe(path, figures[path]), "", table, ""]
    return figures, "\n".join(text)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--batch", type=int, action="append", help="batch size (repeatable) [default: 100, 500]"
    )
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds [default: 3]")
    parser.add_argument(
        "--seconds", type=float, default=2.0, help="seconds per measurement [default: 2]"
    )
    parser.add_argument("--device", default="cuda:0", help="cuda:N, or cpu for a dry run")
    parser.add_argument("--model", action="append", help="capsnet or lanes (repeatable)")
    parser.add_argument("--profile-batch", type=int, default=100, help="[default: 100]")
    parser.add_argument(
        "--profile-steps", type=int, default=5, help="steps profiled (0: none) [default: 5]"
    )
    parser.add_argument("--profile-dir", type=Path, help="write profile-<model>.txt files here")
    parser.add_argument(
        "--quick", action="store_true", help="batch 2, 1 round of 0.2 s, 2 profile steps, 3 models"
    )
    parser.add_argument(
        "--layer-path",
        choices=[*LAYER_PATHS, "both"],
        default="grouped",
        help="how the MLCNs' later conv layers run; both: each model under each [grouped]",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    args.device = torch.device(args.device)
    if args.device.type == "cuda" and not torch.cuda.is_available():
        parser.error(f"--device {args.device}: torch sees no CUDA device here")
    args.batches = args.batch or [100, 500]
    args.min_steps = 3  # timed steps per measurement at least
    names = list(args.model or MODELS)
    if args.quick:
        args.batches, args.rounds, args.seconds, args.profile_steps = [2], 1, 0.2, 2
        args.min_steps = 1
        args.profile_batch = 2
        names = list(args.model or QUICK_MODELS)
    paths = LAYER_PATHS if args.layer_path == "both" else [args.layer_path]
    args.names = [CAPSNET] + [  # the reference, always first (it has no lane stacks)
        n if paths == ["grouped"] else f"{n}@{p}" for n in names if n != CAPSNET for p in paths
    ]
    return args


def profile_batch(
    models: dict[str, dict[str, Any]],
    steppers: dict[tuple[str, str], Stepper],
    batch: int,
    args: argparse.Namespace,
) -> None:
    """Every model built at ``batch`` profiled, its figures (and file) recorded."""
    for name in args.names:
        if (name, "eager") not in steppers:
            continue
        timed = [r for r in models[name]["batches"] if r["batch"] == batch]
        figures, text = profile_model(
            name, steppers, args.profile_steps, args.device, timed[0] if timed else None
        )
        log(f"profiled {name} at batch {batch}")
        models[name]["profile"] = {"batch": batch, **figures}
        if args.profile_dir is not None:
            args.profile_dir.mkdir(parents=True, exist_ok=True)
            file = args.profile_dir / f"profile-{slug(name)}.txt"
            head = f"{name}: training step at batch {batch} on {args.device}\n\n"
            file.write_text((head + text)[:MAX_FILE] + "\n")
            models[name]["profile"]["file"] = file.name


class TimeUp(BaseException):
    """SIGTERM, as ``timeout`` sends at a step's limit: the run stops measuring and
    reports what it measured (``"stopped"``), instead of dying with nothing. Not an
    ``Exception``: a model's own failure handling must not take it for one."""


def _raise_time_up(signum: int, frame: Any) -> None:
    raise TimeUp("stopped by SIGTERM (a time limit): the figures measured until then")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    args.stopped = None
    before = signal.signal(signal.SIGTERM, _raise_time_up)
    try:
        models = measure(args)
    finally:
        signal.signal(signal.SIGTERM, before)
    report(args, models)
    return 0 if args.stopped is None else 1


def measure(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """Every model's facts, figures per batch and profile; a SIGTERM ends it early
    (``args.stopped`` says so) with what was measured."""
    device, batches = args.device, args.batches
    keep_freed_memory()  # as training does (nasmlcn/_allocator.py)
    models = {n: model_facts(n) for n in args.names}
    profile_at = [args.profile_batch] if args.profile_steps > 0 else []
    try:
        for batch in [*batches, *(b for b in profile_at if b not in batches)]:
            if batch in batches:
                rows, steppers = measure_batch(args.names, batch, args, device)
                for name, row in rows.items():
                    models[name]["batches"].append(row)
                if args.stopped:
                    break
            else:
                steppers, failed = build(args.names, batch, device)
                for name, reason in failed.items():
                    models[name]["profile"] = {"batch": batch, "error": reason}
            if batch in profile_at:
                profile_batch(models, steppers, batch, args)
            del steppers
            if device.type == "cuda":
                torch.cuda.empty_cache()
    except TimeUp as up:  # building or profiling: what is recorded stays
        args.stopped = str(up)
    return models


def report(args: argparse.Namespace, models: dict[str, dict[str, Any]]) -> None:
    """Prints the result: JSON with ``--json``, else the table."""
    device, batches, cuda = args.device, args.batches, torch.backends.cuda
    add_flop_rates(models)
    result = {
        "device": str(device),
        "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "tf32": {"matmul": cuda.matmul.allow_tf32, "cudnn": torch.backends.cudnn.allow_tf32},
        "batches": batches,
        "rounds": args.rounds,
        "seconds": args.seconds,
        "figures": f"images/s: the median of {args.rounds} interleaved round(s) of at least "
        f"{args.seconds:g} s per model and path; ratios to CapsNet at the same batch and path "
        f"(xCaps: images/s; xFLOP: FLOP rate, images/s x forward GFLOP per image counted at "
        f"batch {FLOP_BATCH}); kernels: per step at the profile's batch",
        "layer_path": args.layer_path,
        "models": list(models.values()),
        "layer_paths": compare_layer_paths(models, kernels_per_step),
        "stopped": args.stopped,
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_table(result)


if __name__ == "__main__":
    from nasmlcn.reproduce.engines.common import exit_with

    exit_with(main())
