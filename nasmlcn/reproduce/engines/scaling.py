"""Lane-parallel vs data-parallel scaling on this machine (thesis sec. 4.3.5).

Trains an MLCN (default: 8 lanes mlcn2 of width 4, batch 100, random 28x28
images) and reports images/s of full training steps (forward, margin and
reconstruction loss, backward, Adam) for:

- ``single``: one process, one thread, the plain model;
- ``lane_parallel``: P processes of one thread (gloo), each owning the lanes the
  greedy placement gives it, one all-gather of lane outputs per step, head
  replicated (``nasmlcn.parallel.DistributedMLCN``);
- ``ddp``: P processes of one thread (gloo), DDP of the whole model, each on
  batch/P images, gradients all-reduced (``nasmlcn.parallel.data_parallel``);
- ``single_2threads`` (context only): one process with P threads;
- with ``--capsnet``, the thesis's baseline (Fig. 4.7 ``base``): CapsNet in one
  process (``capsnet_single``) and under DDP on the P processes (``capsnet_ddp``),
  and every mode's speed-up over ``capsnet_single``.

Per rank it splits the step time into compute and exposed communication: for
lane-parallel, the blocking all-gather (including waiting for the slower rank);
for DDP, the all-reduce time left after the last gradient bucket was launched
(bucket all-reduces overlap backward; their total busy time is reported too).

All modes run inside one group of P processes, in interleaved rounds (the idle
ranks wait in a barrier while rank 0 measures ``single``), and the median round
is reported, so drift hits every mode alike. Run it on an otherwise idle machine:
the load average before and after is printed, with a warning when it was high.

With ``--cuda`` (needs a GPU) it also measures, in this process, on cuda:0: the
plain MLCN, its lanes one after another vs concurrently on per-lane streams
(``nasmlcn.parallel.PlacedMLCN``), the lanes spread over every GPU when there are
several, and the CapsNet baseline.

    python -m nasmlcn.reproduce.engines.scaling [--json] [--rounds 3] [--seconds 5] [--cuda]
    python -m nasmlcn.reproduce.engines.scaling --rounds 1 --seconds 2      # a quick look
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

import torch

from nasmlcn.hardware import busy_cores, usable_cores
from nasmlcn.models import MLCN, build_model
from nasmlcn.parallel import launch, plan_assignment, rank_assignment
from nasmlcn.reproduce.engines._scaling_ranks import bench_rank, random_batch, stepper
from nasmlcn.reproduce.engines.common import median
from nasmlcn.specs import CapsNetSpec, MLCNSpec

DEFAULT_LANES = "8*mlcn2:4x1"


def _per_step_ms(rank: dict[str, Any], key: str, steps: int) -> float:
    """The median over rounds of ``rank``'s ``key`` seconds, per step, in ms."""
    return round(1000 * median([row[key] for row in rank["rounds"]]) / steps, 2)


def _per_rank(ranks: list[dict[str, Any]], np_: int) -> list[dict[str, Any]]:
    """Each rank's lanes and per-step split (compute, communication, CPU) of both modes."""
    per_rank = []
    for r in ranks:
        lane_step = _per_step_ms(r, "lane_seconds", np_)
        lane_comm = _per_step_ms(r, "lane_comm_seconds", np_)
        ddp_step = _per_step_ms(r, "ddp_seconds", np_)
        ddp_exposed = _per_step_ms(r, "ddp_exposed_seconds", np_)
        per_rank.append(
            {
                "rank": r["rank"],
                "lanes": r["owned_lanes"],
                "lane_parallel": {
                    "step_ms": lane_step,
                    "compute_ms": round(lane_step - lane_comm, 2),
                    "communication_ms": lane_comm,
                    "cpu_ms": _per_step_ms(r, "lane_cpu_seconds", np_),
                    "bytes_per_step": int(r["gather_bytes_per_step"]),
                },
                "ddp": {
                    "step_ms": ddp_step,
                    "compute_ms": round(ddp_step - ddp_exposed, 2),
                    "communication_ms": ddp_exposed,
                    "allreduce_busy_ms": _per_step_ms(r, "ddp_busy_seconds", np_),
                    "cpu_ms": _per_step_ms(r, "ddp_cpu_seconds", np_),
                    "bytes_per_step": int(median([x["ddp_bytes_per_step"] for x in r["rounds"]])),
                },
            }
        )
    return per_rank


def _capsnet_figures(
    args: argparse.Namespace,
    ranks: list[dict[str, Any]],
    n1: int,
    np_: int,
    single: float,
    ddp: float,
    lanes: float,
) -> dict[str, Any]:
    """CapsNet's rates alone and under DDP, and every mode over CapsNet alone."""
    b, r0, rounds = args.batch_size, ranks[0], range(args.rounds)
    n_caps1, n_capsp = max(3, n1 // 3), max(3, np_ // 3)
    caps1 = median([n_caps1 * b / r0["rounds"][i]["capsnet_single_seconds"] for i in rounds])
    capsp = median(
        [n_capsp * b / max(r["rounds"][i]["capsnet_ddp_seconds"] for r in ranks) for i in rounds]
    )
    return {
        "capsnet_single_images_per_second": round(caps1, 1),
        "capsnet_ddp_images_per_second": round(capsp, 1),
        # thesis Fig. 4.7: every mode over CapsNet in one process (its "1 K80")
        "over_capsnet": {
            "base": round(capsp / caps1, 3),
            "mlcn": round(single / caps1, 3),
            "mlcn_data": round(ddp / caps1, 3),
            "mlcn_model": round(lanes / caps1, 3),
        },
    }


def cpu_figures(args: argparse.Namespace) -> dict[str, Any]:
    """The multi-process figures: every mode's images/s, speed-ups and per-rank split."""
    spec = MLCNSpec.from_lanes(args.lanes)
    targets, _ = plan_assignment(spec, None, processes=args.processes, batch_size=args.batch_size)
    assignment = rank_assignment(targets, args.processes)
    cfg = {
        "lanes": args.lanes,
        "batch_size": args.batch_size,
        "rounds": args.rounds,
        "seconds": args.seconds,
        "assignment": assignment,
        "capsnet": args.capsnet,
    }
    ranks = launch(bench_rank, args.processes, cfg, device="cpu", threads=1, timeout_s=args.timeout)
    b = args.batch_size
    r0 = ranks[0]
    n1, np_ = r0["steps_single"], r0["steps_parallel"]
    rounds = range(args.rounds)
    single_rates = [n1 * b / r0["rounds"][i]["single_seconds"] for i in rounds]
    lane_rates = [np_ * b / max(r["rounds"][i]["lane_seconds"] for r in ranks) for i in rounds]
    single = median(single_rates)
    single2 = median([n1 * b / r0["rounds"][i]["single_2threads_seconds"] for i in rounds])
    lanes = median(lane_rates)
    ddp = median([np_ * b / max(r["rounds"][i]["ddp_seconds"] for r in ranks) for i in rounds])
    capsnet = _capsnet_figures(args, ranks, n1, np_, single, ddp, lanes) if args.capsnet else {}
    return {
        "lanes": spec.describe(),
        "batch_size": b,
        "processes": args.processes,
        "threads_per_process": 1,
        "assignment": list(assignment),
        "rounds": args.rounds,
        "steps_single": n1,
        "steps_parallel": np_,
        "single_step_ms": round(1000 * b / single, 2),
        "single_cpu_ms": round(
            1000 * median([row["single_cpu_seconds"] for row in r0["rounds"]]) / n1, 2
        ),
        "single_images_per_second": round(single, 1),
        "single_2threads_images_per_second": round(single2, 1),
        "lane_parallel_images_per_second": round(lanes, 1),
        "ddp_images_per_second": round(ddp, 1),
        "lane_parallel_speedup": round(lanes / single, 3),
        # each round's own (lanes and one process measured in the same round): the
        # spread a comparison of two lane mixes needs for its interval
        "lane_parallel_speedup_rounds": [
            round(lane / one, 3) for lane, one in zip(lane_rates, single_rates, strict=True)
        ],
        "ddp_speedup": round(ddp / single, 3),
        "lane_parallel_vs_ddp": round(lanes / ddp, 3),
        "lane_parallel_efficiency": round(lanes / single / args.processes, 3),
        "per_rank": _per_rank(ranks, np_),
        **capsnet,
    }


def _rate(step: Any, batch: int, seconds: float, device: torch.device) -> float:
    steps, start = 0, time.perf_counter()
    while steps < 3 or time.perf_counter() - start < seconds:
        step()
        steps += 1
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return steps * batch / (time.perf_counter() - start)


def cuda_figures(args: argparse.Namespace, device: torch.device) -> dict[str, Any]:
    """GPU figures on ``device`` (any device runs the code; only CUDA has streams)."""
    from nasmlcn.parallel import PlacedMLCN

    spec = MLCNSpec.from_lanes(args.lanes)
    x, y = (t.to(device) for t in random_batch(spec, args.batch_size))
    capsnet = CapsNetSpec()
    cx, cy = (t.to(device) for t in random_batch(capsnet, args.batch_size))

    def mlcn() -> MLCN:
        torch.manual_seed(0)
        model = build_model(spec)
        assert isinstance(model, MLCN)
        return model

    torch.manual_seed(0)
    steppers: dict[str, Any] = {
        "mlcn": stepper(mlcn().to(device), x, y),
        "lanes_sequential": stepper(
            PlacedMLCN(mlcn(), [device] * spec.num_lanes, streams=False), x, y
        ),
        "lanes_concurrent": stepper(
            PlacedMLCN(mlcn(), [device] * spec.num_lanes, streams=True), x, y
        ),
        "capsnet": stepper(build_model(capsnet).to(device), cx, cy),
    }
    gpus = torch.cuda.device_count() if device.type == "cuda" else 1
    if gpus > 1:
        targets, _ = plan_assignment(spec, None, processes=gpus, batch_size=args.batch_size)
        lane_devices = [f"cuda:{j}" for j in targets]
        steppers[f"lanes_on_{gpus}_gpus"] = stepper(
            PlacedMLCN(mlcn(), lane_devices, head_device="cuda:0"), x, y
        )
    for step in steppers.values():
        for _ in range(3):
            step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    rates: dict[str, list[float]] = {name: [] for name in steppers}
    for _ in range(args.rounds):
        for name, step in steppers.items():
            rates[name].append(_rate(step, args.batch_size, args.seconds, device))
    med = {name: median(r) for name, r in rates.items()}
    result: dict[str, Any] = {
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else str(device),
        "gpus": gpus,
        **{f"{name}_images_per_second": round(v, 1) for name, v in med.items()},
        "concurrent_vs_sequential": round(med["lanes_concurrent"] / med["lanes_sequential"], 3),
        "mlcn_vs_capsnet": round(med["mlcn"] / med["capsnet"], 3),
    }
    if gpus > 1:
        result["multi_gpu_vs_one"] = round(med[f"lanes_on_{gpus}_gpus"] / med["mlcn"], 3)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lanes", default=DEFAULT_LANES, help="lanes in the compact syntax")
    parser.add_argument("--batch-size", type=int, default=100)
    parser.add_argument("--processes", type=int, default=2, help="ranks (one thread each)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved measurement rounds")
    parser.add_argument("--seconds", type=float, default=5.0, help="seconds per measurement")
    parser.add_argument("--timeout", type=float, default=600.0, help="collective timeout (s)")
    parser.add_argument("--cuda", action="store_true", help="also measure on the GPU(s)")
    parser.add_argument("--no-cpu", action="store_true", help="skip the multi-process part")
    parser.add_argument(
        "--capsnet", action="store_true", help="also CapsNet, alone and under DDP (Fig. 4.7)"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    if args.cuda and not torch.cuda.is_available():
        print("--cuda: no CUDA device here", file=sys.stderr)
        return 2

    cores = usable_cores()
    load_before = os.getloadavg()[0]
    # what runs now (the load average still counts a job that ended a minute ago)
    busy_before = busy_cores()
    result: dict[str, Any] = {"cores": cores, "load_average_before": round(load_before, 2)}
    if busy_before is not None:
        result["busy_cores_before"] = round(busy_before, 2)
    if not args.no_cpu:
        result.update(cpu_figures(args))
    if args.cuda:
        result["cuda"] = cuda_figures(args, torch.device("cuda:0"))
    result["load_average_after"] = round(os.getloadavg()[0], 2)
    # Idle enough when the processes' cores were free before the run.
    others = load_before if busy_before is None else busy_before
    busy = others > cores - args.processes + 0.5 or cores < args.processes
    result["machine_was_busy"] = busy
    result["versions"] = {"torch": torch.__version__, "python": sys.version.split()[0]}
    if args.json:
        print(json.dumps(result))
        return 0
    _print(result, args)
    return 0


def _print(result: dict[str, Any], args: argparse.Namespace) -> None:
    print(
        f"{result['cores']} cores, load average {result['load_average_before']} before, "
        f"{result['load_average_after']} after; torch {result['versions']['torch']}"
    )
    if result["machine_was_busy"]:
        print(
            "warning: the machine was not idle (or has fewer cores than processes); "
            "speedups are only meaningful on an idle machine"
        )
    if "single_images_per_second" in result:
        r = result
        print(
            f"{r['lanes']}, batch {r['batch_size']}, {r['processes']} processes x 1 thread, "
            f"median of {r['rounds']} rounds ({r['steps_single']} / {r['steps_parallel']} steps)"
        )
        print(f"{'mode':<28} {'images/s':>9} {'speedup':>8}")
        single = r["single_images_per_second"]
        for label, key in (
            ("1 process, 1 thread", "single_images_per_second"),
            (f"1 process, {r['processes']} threads", "single_2threads_images_per_second"),
            (f"{r['processes']} processes lane-parallel", "lane_parallel_images_per_second"),
            (f"{r['processes']} processes DDP", "ddp_images_per_second"),
        ):
            print(f"{label:<28} {r[key]:>9.1f} {r[key] / single:>7.2f}x")
        print(
            f"lane-parallel / DDP: {r['lane_parallel_vs_ddp']:.2f}x; "
            f"lane-parallel efficiency {r['lane_parallel_efficiency']:.2f}"
        )
        print(
            f"per step, ms: wall = compute + exposed communication; cpu = CPU time "
            f"(1 process, 1 thread: wall {r['single_step_ms']:.1f}, cpu {r['single_cpu_ms']:.1f})"
        )
        print(
            f"{'rank':<5} {'mode':<14} {'wall':>8} {'compute':>8} {'comm':>7} {'cpu':>8} "
            f"{'bytes/step':>11}"
        )
        for pr in r["per_rank"]:
            for mode in ("lane_parallel", "ddp"):
                m = pr[mode]
                print(
                    f"{pr['rank']:<5} {mode:<14} {m['step_ms']:>8.1f} {m['compute_ms']:>8.1f} "
                    f"{m['communication_ms']:>7.1f} {m['cpu_ms']:>8.1f} {m['bytes_per_step']:>11,}"
                )
        print(f"lanes per rank: {[pr['lanes'] for pr in r['per_rank']]}")
    if "cuda" in result:
        c = result["cuda"]
        print(f"GPU: {c['device']} x{c['gpus']}, batch {args.batch_size}")
        for key, value in c.items():
            if key.endswith("_images_per_second"):
                print(f"  {key.removesuffix('_images_per_second'):<22} {value:>9.1f} images/s")
        print(
            f"  concurrent / sequential lanes {c['concurrent_vs_sequential']:.2f}x; "
            f"MLCN / CapsNet {c['mlcn_vs_capsnet']:.2f}x"
        )


if __name__ == "__main__":
    from nasmlcn.reproduce.engines.common import exit_with

    exit_with(main())
