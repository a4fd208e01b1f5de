"""Lane placement: random vs greedy (thesis Algorithm 3) vs optimal, on the thesis's scenarios.

Scenarios of the thesis (sec. 5.2, Fig. 5.2): 6, 9, 12 and 24 lanes, each of a random
type (mlcn1 or mlcn2) with width and depth uniform in 1..5, placed on 4 K80s and on
the mix K80 + M40 + P100 + V100; N seeded instances per scenario (the same lanes on
both pools). Lane costs come from a cost model (default ``thesis``: width^2 * depth,
as in Fig. 5.2); lane memory from a memory model (default ``analytic``, which does not
bind on these devices' catalog memory; ``--memory-model thesis`` uses eq. 6.1, which
does bind: the report counts the instances where memory could bind and those that
cannot be placed at all, or only by optimal). Per scenario it reports the mean makespan of random (mean
of 20 seeded placements per instance), greedy and optimal, greedy/optimal (mean and
max), random/greedy, optimal's proven share and mean gap, and the mean time per plan;
then the time of greedy on 1,000 lanes on 64 devices.

    python -m nasmlcn.reproduce.engines.placement [--json] [--instances 50] [--time-limit 10]
        [--cost-model thesis|analytic] [--memory-model analytic|thesis]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections.abc import Sequence
from typing import Any

from nasmlcn.costs import CostContext, get_cost_model
from nasmlcn.errors import PlacementError
from nasmlcn.hardware import DeviceSpec, parse_devices
from nasmlcn.placement import PlacementProblem, get_placer
from nasmlcn.specs import LaneSpec

LANE_COUNTS = (6, 9, 12, 24)
POOLS = ("4xK80", "1xK80,1xM40,1xP100,1xV100")
RANDOM_PLACEMENTS = 20
LARGE = (1000, "64xK80")
LARGE_REPEATS = 5


def random_lanes(count: int, seed: int) -> list[LaneSpec]:
    """``count`` lanes of random type, width and depth in 1..5 (thesis sec. 5.2)."""
    rng = random.Random(seed)
    return [
        LaneSpec(rng.choice(("mlcn1", "mlcn2")), rng.randint(1, 5), rng.randint(1, 5))
        for _ in range(count)
    ]


def make_problem(
    lanes: Sequence[LaneSpec], devices: Sequence[DeviceSpec], cost_model: str, memory_model: str
) -> PlacementProblem:
    """Lanes' time from ``cost_model`` and memory from ``memory_model``, on catalog memory."""
    ctx = CostContext()
    timing, sizing = get_cost_model(cost_model), get_cost_model(memory_model)
    return PlacementProblem(
        costs=tuple(timing.lane_cost(lane, ctx).time for lane in lanes),
        memory=tuple(sizing.lane_cost(lane, ctx).memory_bytes for lane in lanes),
        speeds=tuple(d.speed for d in devices),
        capacities=tuple(d.memory_bytes for d in devices),
        lane_names=tuple(str(lane) for lane in lanes),
        device_names=tuple(d.name for d in devices),
    )


def run_scenario(
    lanes: int, pool: str, instances: int, time_limit: float, cost_model: str, memory_model: str
) -> dict[str, Any]:
    """Places ``instances`` seeded instances with every strategy; their summary."""
    devices = parse_devices(pool)
    greedy, randomly = get_placer("greedy"), get_placer("random")
    optimal = get_placer("optimal", time_limit=time_limit)
    rows: list[dict[str, Any]] = []
    binding = infeasible = missed = 0
    for k in range(instances):
        problem = make_problem(
            random_lanes(lanes, 1000 * lanes + k), devices, cost_model, memory_model
        )
        # Memory can bind only when the lanes together exceed the smallest device.
        binding += sum(problem.memory) > min(problem.capacities)
        try:
            best = optimal.place(problem)
        except PlacementError:
            infeasible += 1
            continue
        try:
            g = greedy.place(problem)
            rs = [randomly.place(problem, seed=s) for s in range(RANDOM_PLACEMENTS)]
        except PlacementError:
            # Tight memory: optimal found a placement that greedy or random missed.
            missed += 1
            continue
        random_mean = statistics.fmean(r.makespan for r in rs)
        rows.append(
            {
                "random": random_mean,
                "greedy": g.makespan,
                "optimal": best.makespan,
                "lower_bound": best.lower_bound,
                "proven": best.optimal,
                "gap": best.gap or 0.0,
                "seconds_random": statistics.fmean(r.seconds for r in rs),
                "seconds_greedy": g.seconds,
                "seconds_optimal": best.seconds,
            }
        )
    summary: dict[str, Any] = {
        "lanes": lanes,
        "devices": pool,
        "instances": instances,
        "memory_may_bind": binding,
        "infeasible": infeasible,
        "missed_by_greedy_or_random": missed,
    }
    if not rows:
        return summary

    def mean(name: str) -> float:
        return statistics.fmean(r[name] for r in rows)

    greedy_ratio = [r["greedy"] / r["optimal"] for r in rows]
    random_ratio = [r["random"] / r["greedy"] for r in rows]
    summary.update(
        {
            "makespan_random": mean("random"),
            "makespan_greedy": mean("greedy"),
            "makespan_optimal": mean("optimal"),
            "greedy_over_optimal_mean": statistics.fmean(greedy_ratio),
            "greedy_over_optimal_max": max(greedy_ratio),
            "random_over_greedy_mean": statistics.fmean(random_ratio),
            "random_over_greedy_max": max(random_ratio),
            "optimal_proven_share": mean("proven"),
            "optimal_mean_gap": mean("gap"),
            "optimal_max_gap": max(r["gap"] for r in rows),
            "ms_random": 1e3 * mean("seconds_random"),
            "ms_greedy": 1e3 * mean("seconds_greedy"),
            "ms_optimal": 1e3 * mean("seconds_optimal"),
            "ms_optimal_max": 1e3 * max(r["seconds_optimal"] for r in rows),
        }
    )
    return summary


def time_large_greedy(cost_model: str) -> dict[str, Any]:
    """Greedy on 1,000 lanes and 64 devices: the best of a few runs.

    Memory from the analytic model, which lets those lanes fit (eq. 6.1 does not).
    """
    lanes, pool = LARGE
    problem = make_problem(random_lanes(lanes, 7), parse_devices(pool), cost_model, "analytic")
    greedy = get_placer("greedy")
    seconds = []
    for _ in range(LARGE_REPEATS):
        start = time.perf_counter()
        greedy.place(problem)
        seconds.append(time.perf_counter() - start)
    return {
        "lanes": lanes,
        "devices": pool,
        "ms_best": 1e3 * min(seconds),
        "ms_median": 1e3 * statistics.median(seconds),
    }


QUALITY_HEADERS = (
    "lanes",
    "devices",
    "random",
    "greedy",
    "optimal",
    "greedy/opt",
    "max",
    "random/greedy",
    "max",
)
TIMING_HEADERS = (
    "lanes",
    "devices",
    "proven",
    "mean gap",
    "ms random",
    "ms greedy",
    "ms optimal",
    "max",
    "mem binds",
    "no fit / opt only",
)


def _scenario_rows(s: dict[str, Any]) -> tuple[list[str], list[str]]:
    """One scenario's row of the makespan table and of the proofs-and-times table."""
    pool = s["devices"].replace("1x", "").replace(",", "+")
    head = [str(s["lanes"]), pool]
    memory = [str(s["memory_may_bind"]), f"{s['infeasible']} / {s['missed_by_greedy_or_random']}"]
    if "makespan_greedy" not in s:
        return [*head, *["-"] * 7], [*head, *["-"] * 6, *memory]
    quality = [
        *head,
        f"{s['makespan_random']:.4g}",
        f"{s['makespan_greedy']:.4g}",
        f"{s['makespan_optimal']:.4g}",
        f"{s['greedy_over_optimal_mean']:.4f}",
        f"{s['greedy_over_optimal_max']:.4f}",
        f"{s['random_over_greedy_mean']:.2f}x",
        f"{s['random_over_greedy_max']:.2f}x",
    ]
    timing = [
        *head,
        f"{100 * s['optimal_proven_share']:.0f} %",
        f"{s['optimal_mean_gap']:.1e}",
        f"{s['ms_random']:.3f}",
        f"{s['ms_greedy']:.3f}",
        f"{s['ms_optimal']:.1f}",
        f"{s['ms_optimal_max']:.1f}",
        *memory,
    ]
    return quality, timing


def render(report: dict[str, Any]) -> None:
    """The report as two rich tables on stdout: makespans, then proofs and times."""
    from rich.console import Console
    from rich.table import Table

    console = Console()
    if not console.is_terminal:
        console.width = max(console.width, 130)  # a pipe or a file: room for the columns
    console.print(
        f"Lane placement: {report['instances']} instances per scenario, cost model "
        f"{report['cost_model']} (makespans in {report['time_unit']}), memory model "
        f"{report['memory_model']}, optimal's time limit {report['time_limit']:g} s, "
        f"random = mean of {report['random_placements_per_instance']} placements",
        markup=False,
    )
    quality = Table(title="Makespan (mean over instances)")
    timing = Table(title="Optimal's proofs and time per plan")
    for table, headers in ((quality, QUALITY_HEADERS), (timing, TIMING_HEADERS)):
        for h in headers:
            table.add_column(h, justify="right")
    for s in report["scenarios"]:
        quality_row, timing_row = _scenario_rows(s)
        quality.add_row(*quality_row)
        timing.add_row(*timing_row)
    console.print(quality)
    console.print(timing)
    large = report["large_greedy"]
    console.print(
        f"greedy on {large['lanes']} lanes x {large['devices']}: "
        f"{large['ms_best']:.1f} ms (best of {LARGE_REPEATS}), {large['ms_median']:.1f} ms median",
        markup=False,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=50, help="seeded instances per scenario")
    parser.add_argument("--time-limit", type=float, default=10.0, help="optimal's seconds")
    parser.add_argument("--cost-model", choices=("thesis", "analytic"), default="thesis")
    parser.add_argument("--memory-model", choices=("analytic", "thesis"), default="analytic")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    args = parser.parse_args(argv)

    scenarios = []
    for lanes in LANE_COUNTS:
        for pool in POOLS:
            start = time.perf_counter()
            scenarios.append(
                run_scenario(
                    lanes, pool, args.instances, args.time_limit, args.cost_model, args.memory_model
                )
            )
            print(f"{lanes} lanes on {pool}: {time.perf_counter() - start:.1f} s", file=sys.stderr)
    report = {
        "instances": args.instances,
        "time_limit": args.time_limit,
        "cost_model": args.cost_model,
        "time_unit": get_cost_model(args.cost_model).time_unit,
        "memory_model": args.memory_model,
        "random_placements_per_instance": RANDOM_PLACEMENTS,
        "scenarios": scenarios,
        "large_greedy": time_large_greedy(args.cost_model),
    }
    if args.json:
        print(json.dumps(report))
    else:
        render(report)
    return 0


if __name__ == "__main__":
    from nasmlcn.reproduce.engines.common import exit_with

    exit_with(main())
