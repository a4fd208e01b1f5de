"""``nasmlcn calibrate``: measure this machine's devices and fit the calibrated cost model."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import typer

from nasmlcn.cli._console import err, out

if TYPE_CHECKING:
    from nasmlcn.costs._calibration_file import Calibration
    from nasmlcn.costs._scoring import Score
    from nasmlcn.hardware import LocalDevice
    from nasmlcn.measure import DeviceSpeeds

QUICK_LANES = 3
QUICK_BATCH = 8


def calibrate(
    lanes: int = typer.Option(
        24, "--lanes", help="Random lanes to measure (at least 20; the thesis fitted ~25)."
    ),
    seed: int = typer.Option(0, "--seed", min=0, help="Seed of the random lanes."),
    batch_size: int | None = typer.Option(
        None, "--batch-size", min=1, help="Training batch size [default: 100; 8 with --quick]."
    ),
    device: str = typer.Option(
        "auto",
        "--device",
        help="Where to time the lanes: auto (first GPU, else cpu), cpu, cuda:N, or all "
        "(FC speed of every local device; lanes on the auto device).",
    ),
    routing: str | None = typer.Option(
        None, "--routing", help="Lane routing to calibrate for: vector or classwise."
    ),
    out_file: Path | None = typer.Option(
        None,
        "--out",
        help="Calibration file to write [default: $NASMLCN_CALIBRATION or "
        "~/.cache/nasmlcn/calibration.json].",
    ),
    threads: int | None = typer.Option(
        None, "--threads", min=1, help="Torch CPU threads [default: the usable cores]."
    ),
    clock: str = typer.Option(
        "wall",
        "--clock",
        help="wall (elapsed time) or cpu (process CPU time: needs --threads 1 and the cpu "
        "device; immune to other processes on a shared machine).",
    ),
    rounds: int = typer.Option(
        2, "--rounds", min=1, help="Interleaved timing rounds (the fastest step counts)."
    ),
    quick: bool = typer.Option(
        False,
        "--quick",
        help="Smoke test only: small lanes, batch 8, one short round, allows 3+ lanes.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object on stdout."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress display."),
) -> None:
    """Measure local device speed and lane step times/memory; fit the calibrated cost model.

    Runs the thesis's tiny 512x512 fully connected network on each device (its
    speed), times training steps of random lanes (type mlcn1/mlcn2, width and
    depth 1..5) and their peak memory (a fresh process per lane on a CPU), fits
    the calibrated model, saves it, and compares every cost model with the
    measurements.
    """
    from nasmlcn.costs import CostContext, get_cost_model
    from nasmlcn.costs._calibrated import CalibratedCostModel
    from nasmlcn.costs._calibration_file import default_calibration_path
    from nasmlcn.costs._fit import cross_validated, fit_calibration
    from nasmlcn.costs._host import MEMORY_METHODS
    from nasmlcn.costs._samples import MIN_LANES, calibration_lanes
    from nasmlcn.costs._scoring import score_cost_model, score_predictions
    from nasmlcn.errors import CalibrationError
    from nasmlcn.hardware import detect_devices, load_catalog, usable_cores
    from nasmlcn.specs import DEFAULT_ROUTING

    least = QUICK_LANES if quick else MIN_LANES
    if lanes < least:
        raise CalibrationError(
            f"--lanes must be at least {least} to fit and judge the models, got {lanes}"
        )
    if clock not in ("wall", "cpu"):
        raise CalibrationError(f"--clock must be wall or cpu, got {clock!r}")
    catalog = load_catalog()
    local = detect_devices(catalog)
    lane_device, measured = _resolve_devices(device, local)
    threads = threads or usable_cores()
    if clock == "cpu" and (threads != 1 or lane_device.name != "cpu"):
        raise CalibrationError(
            "--clock cpu times the cpu device with one thread: add --threads 1 --device cpu"
        )
    batch = batch_size or (QUICK_BATCH if quick else 100)
    ctx = CostContext(batch_size=batch, routing=routing or DEFAULT_ROUTING)
    specs = calibration_lanes(lanes, seed, **({"max_width": 2, "max_depth": 2} if quick else {}))
    path = out_file or default_calibration_path()

    import torch

    from nasmlcn.measure import measure_lanes, measure_speeds

    torch.set_num_threads(threads)
    load = _load_average()
    speeds = measure_speeds(measured, catalog, threads=threads, clock=clock, quick=quick)
    timing: dict[str, Any] = (
        {"warmup": 1, "repeats": 2, "min_seconds": 0.0, "rounds": 1, "memory_steps": 2}
        if quick
        else {"rounds": rounds}
    )
    with _Progress(quiet) as progress:
        samples = measure_lanes(
            specs,
            ctx,
            lane_device.name,
            threads=threads,
            memory_jobs=2,
            clock=clock,
            seed=seed,
            progress=progress.update,
            **timing,
        )
    load = max(load, _load_average())
    cores = usable_cores()
    # This process accounts for at most `cores` of the load; CPU time is immune.
    if clock == "wall" and load > cores + 0.5:
        err.print(
            f"[yellow]warning:[/] the machine was busy (1-minute load {load:.1f} on {cores} "
            "cores): other processes inflate step times; calibrate on an idle machine, "
            "or time one thread's CPU time with --threads 1 --clock cpu",
            markup=True,
            highlight=False,
        )
    kind = "cuda" if lane_device.name.startswith("cuda") else "cpu"
    calibration = fit_calibration(
        samples,
        ctx,
        device=lane_device.name,
        speed=speeds.speeds[lane_device.name],
        threads=threads,
        clock=clock,
        device_description=lane_device.description,
        fc_flops_per_second=speeds.fc_flops_per_second,
        device_speeds=speeds.speeds,
        speed_anchor=speeds.anchor,
        memory_method=MEMORY_METHODS[kind],
        torch_version=str(torch.__version__),
        load_average=load,
    )
    calibration.save(path)

    local_speed = calibration.speed
    scores = [
        score_cost_model(get_cost_model(name), samples, ctx, local_speed)
        for name in ("analytic", "thesis")
    ]
    scores.append(score_cost_model(CalibratedCostModel(calibration), samples, ctx, local_speed))
    cv_seconds, cv_peaks = cross_validated(calibration, folds=5, seed=seed)
    scores.append(
        score_predictions(
            "calibrated-cv",
            cv_seconds,
            cv_peaks,
            samples,
            note="5-fold cross-validation: each lane predicted by a fit without it",
        )
    )
    report = _report(calibration, speeds, scores, path, seed, quick)
    if as_json:
        print(json.dumps(report))
        return
    _print_report(report)


def _load_average() -> float:
    try:
        return os.getloadavg()[0]
    except OSError:  # not available on this system
        return 0.0


def _resolve_devices(
    device: str, local: list[LocalDevice]
) -> tuple[LocalDevice, list[LocalDevice]]:
    """The device the lanes run on and the devices whose FC speed is measured.

    The lane device comes first (it anchors the speed scale when it is in the
    catalog); when none measured is in the catalog, the cpu is added as anchor.
    """
    from nasmlcn.errors import CalibrationError

    by_name = {d.name: d for d in local}
    gpus = [d for d in local if d.name.startswith("cuda")]
    name = device.strip().lower()
    if name in ("auto", "all"):
        lane_device = gpus[0] if gpus else by_name["cpu"]
    else:
        if name == "cuda":
            name = "cuda:0"
        if name not in by_name:
            raise CalibrationError(
                f"no device {device!r} here; local devices: {', '.join(by_name)} (or auto, all)"
            )
        lane_device = by_name[name]
    measured = [lane_device]
    if name == "all":
        measured += [d for d in local if d is not lane_device]
    if all(d.catalog_kind is None for d in measured):
        measured.append(by_name["cpu"])
    return lane_device, measured


class _Progress:
    """A rich progress bar per measuring phase, on stderr."""

    LABELS: ClassVar[dict[str, str]] = {"time": "timing lanes", "memory": "peak memory"}

    def __init__(self, quiet: bool) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TaskID,
            TextColumn,
            TimeElapsedColumn,
        )

        self.quiet = quiet
        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(bar_width=28),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=err,
            transient=True,
            disable=quiet,
        )
        self.tasks: dict[str, TaskID] = {}

    def __enter__(self) -> _Progress:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def update(self, phase: str, done: int, total: int) -> None:
        if phase not in self.tasks:
            self.tasks[phase] = self.progress.add_task(self.LABELS.get(phase, phase), total=total)
        self.progress.update(self.tasks[phase], completed=done)


def _report(
    calibration: Calibration,
    speeds: DeviceSpeeds,
    scores: list[Score],
    path: Path,
    seed: int,
    quick: bool,
) -> dict[str, Any]:
    return {
        "calibration_file": str(path),
        "device": calibration.device,
        "device_description": calibration.device_description,
        "threads": calibration.threads,
        "clock": calibration.clock,
        "batch_size": calibration.context.batch_size,
        "routing": calibration.context.routing,
        "lanes": len(calibration.samples),
        "seed": seed,
        "quick": quick,
        "speeds": {
            r.device: {
                "fc_flops_per_second": r.flops_per_second,
                "speed": speeds.speeds[r.device],
            }
            for r in speeds.results
        },
        "speed_anchor": speeds.anchor,
        "memory_method": calibration.memory_method,
        "load_average": calibration.load_average,
        "time_coefficients": dict(
            zip(calibration.time_features, calibration.time_coefficients, strict=True)
        ),
        "memory_coefficients": dict(
            zip(calibration.memory_features, calibration.memory_coefficients, strict=True)
        ),
        "memory_envelope": calibration.memory_envelope,
        "models": [s.to_dict() for s in scores],
        "samples": [s.to_dict() for s in calibration.samples],
    }


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}%"


def _print_report(report: dict[str, Any]) -> None:
    from rich.table import Table

    from nasmlcn.hardware import format_flops

    mib = 2**20
    for name, s in report["speeds"].items():
        out.print(
            f"{name}: FC 512x512 training {format_flops(s['fc_flops_per_second'])}/s, "
            f"speed {s['speed']:.3g} (K80 = 1)"
        )
    out.print(f"speed anchor: {report['speed_anchor']}")
    where = (
        f"{report['lanes']} lanes on {report['device']} ({_threads(report['threads'])}, "
        f"{report['clock']} clock, "
        f"batch {report['batch_size']}, {report['routing']} routing)"
    )
    times = Table(title=f"step time vs {where}")
    memory = Table(title=f"peak memory vs {where}")
    for table in (times, memory):
        table.add_column("model")
        for column in ("r", "rho", "MAPE"):
            table.add_column(column, justify="right")
    memory.add_column(">5% under", justify="right")
    memory.add_column("mean over", justify="right")
    memory.add_column("MiB", justify="right")
    notes: list[str] = []
    for m in report["models"]:
        t, mem = m["time"], m["memory"]
        scaled = t["mape"] is None
        if m["note"]:
            notes.append(f"{m['model']}: {m['note']}")
        times.add_row(
            m["model"],
            _num(t["pearson"]),
            _num(t["spearman"]),
            _pct(t["mape_scaled"] if scaled else t["mape"]) + ("*" if scaled else ""),
        )
        over = mem["mean_over"]
        memory.add_row(
            m["model"],
            _num(mem["pearson"]),
            _num(mem["spearman"]),
            _pct(mem["mape"]),
            f"{100 * mem['under_share']:.0f}%",
            f"{mem['mean_over_pct']:+.1f}%",
            f"{over / mib:+.1f}",
        )
    out.print(times)
    out.print(memory)
    notes.append("r: Pearson, rho: Spearman, MAPE: mean absolute % error")
    notes.append(
        "calibrated: fitted on these lanes (in-sample); calibrated-cv is the held-out figure"
    )
    notes.append(f"memory measured as {report['memory_method']}")
    for note in notes:
        out.print(f"  {note}")
    if report["quick"]:
        out.print("  --quick: a smoke test, not a calibration to plan with")
    out.print(f"saved {report['calibration_file']}")


def _threads(n: int) -> str:
    return f"{n} thread" + ("" if n == 1 else "s")


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"
