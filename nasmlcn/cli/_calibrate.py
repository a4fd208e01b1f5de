"""``nasmlcn calibrate``: measure this machine's devices and fit the calibrated cost model."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from nasmlcn._setting import MAX_SEED
from nasmlcn.cli._command_options import option, takes
from nasmlcn.cli._console import err, out
from nasmlcn.cli._options import IMAGE_SIZE, JSON, QUIET, local_file, replace_option

if TYPE_CHECKING:
    from nasmlcn.measure import CalibrationRequest

RENAMED = {"--device": "--run-on"}
"""Old spellings still read (:mod:`nasmlcn.cli._renamed`)."""


@dataclass(frozen=True, kw_only=True)
class CalibrateOptions:
    """What ``nasmlcn calibrate`` was given: one field per option, in ``--help``'s order."""

    lanes: int = option(
        typer.Option(
            24, "--lanes", help="Random lanes to measure (at least 20; the thesis fitted ~25)."
        )
    )
    seed: int = option(
        typer.Option(0, "--seed", min=0, max=MAX_SEED, help="Seed of the random lanes.")
    )
    batch_size: int | None = option(
        typer.Option(
            None, "--batch-size", min=1, help="Training batch size [default: 100; 8 with --quick]."
        )
    )
    run_on: str = option(
        typer.Option(
            "auto",
            "--run-on",
            help="Where to time the lanes: auto (first GPU, else cpu), cpu, cuda:N, or all "
            "(FC speed of every local device; lanes on the auto device).",
        )
    )
    routing: str | None = option(
        typer.Option(None, "--routing", help="Lane routing to calibrate for: vector or classwise.")
    )
    out_file: Path | None = option(  # noqa: RUF009
        typer.Option(
            None,
            "--out",
            parser=local_file,
            help="Calibration file to write [default: $NASMLCN_CALIBRATION or "
            "~/.cache/nasmlcn/calibration.json].",
        )
    )
    replace: bool = option(replace_option("the calibration file"))
    threads: int | None = option(
        typer.Option(
            None, "--threads", min=1, help="Torch CPU threads [default: the usable cores]."
        )
    )
    clock: str = option(
        typer.Option(
            "wall",
            "--clock",
            help="wall (elapsed time) or cpu (process CPU time: needs --threads 1 and the cpu "
            "device; immune to other processes on a shared machine).",
        )
    )
    rounds: int = option(
        typer.Option(
            2, "--rounds", min=1, help="Interleaved timing rounds (the fastest step counts)."
        )
    )
    quick: bool = option(
        typer.Option(
            False,
            "--quick",
            help="Smoke test only, written to --out (never the default file): small lanes, "
            "batch 8, one short round, allows 3+ lanes.",
        )
    )
    models: int = option(
        typer.Option(
            24,
            "--models",
            min=0,
            help="Random whole models (1-64 lanes, mixed kinds) to time for the whole-model "
            "step time; 0: none (lane sums are used).",
        )
    )
    dataset: str = option(
        typer.Option(
            "fashion-mnist",
            "--dataset",
            help="The images to calibrate for (their shape and classes): a built-in name or "
            "the path of your own images.",
        )
    )
    image_size: str | None = option(IMAGE_SIZE)
    as_json: bool = option(JSON)
    quiet: bool = option(QUIET)

    def request(self) -> CalibrationRequest:
        """The measurement these options ask for."""
        from nasmlcn.data import open_dataset
        from nasmlcn.measure import CalibrationRequest

        data = open_dataset(self.dataset, image_size=self.image_size)
        return CalibrationRequest(
            input_shape=data.input_shape,
            num_classes=data.num_classes,
            lanes=self.lanes,
            seed=self.seed,
            batch_size=self.batch_size,
            device=self.run_on,
            routing=self.routing,
            out=self.out_file,
            threads=self.threads,
            clock=self.clock,
            rounds=self.rounds,
            quick=self.quick,
            models=self.models,
            replace=self.replace,
        )


@takes(CalibrateOptions)
def calibrate(options: CalibrateOptions) -> None:
    """Measure local device speed and lane step times/memory; fit the calibrated cost model.

    Runs the thesis's tiny 512x512 fully connected network on each device (its
    speed), times training steps of random lanes (type mlcn1/mlcn2, width and
    depth 1..5) and their peak memory (a fresh process per lane on a CPU) and
    training steps of random whole models (--models), fits the calibrated model,
    saves it, and compares every cost model with the measurements.
    """
    from rich.markup import escape

    from nasmlcn.cli._progress import MeasureProgress
    from nasmlcn.measure import calibrate as run_calibration

    request = options.request()
    with MeasureProgress(err, quiet=options.quiet) as progress:
        result = run_calibration(request, progress)
    for warning in result.warnings:
        err.print(f"[yellow]warning:[/] {escape(warning)}", markup=True, highlight=False)
    report = result.to_dict()
    if options.as_json:
        print(json.dumps(report))
        return
    _print_report(report)


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
    whole = report["whole_models"]
    if whole:
        for name, label in (("calibrated_cv", "whole-model (held out)"), ("analytic", "analytic")):
            w = whole[name]
            out.print(
                f"{label} step time of {whole['models']} whole models: r {w['pearson']:.3f}, "
                f"rho {w['spearman']:.3f}, worst {w['worst_factor']:.2f}x after one scale"
            )
    if report["quick"]:
        out.print("  --quick: a smoke test, not a calibration to plan with")
    out.print(f"saved {report['calibration_file']}")


def _threads(n: int) -> str:
    return f"{n} thread" + ("" if n == 1 else "s")


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"
