"""How well the search's forecast (printed before its first trial) holds: the time it
predicts for its trials against the time they took.

Runs ``scripts/quickstart.sh``'s search (8xK80 of 12 GB, flops 0.5x, 4 trials of 1
epoch on 5,000 Fashion-MNIST images, validated on 1,000), ``--runs`` times with
seeds 0, 1, ... into a fresh study each, on this machine's CPU. For each run: the
forecast's total, the trials' time from the first trial's start to the last one's
end (what the forecast predicts: the search's set-up before the first trial is not
in it), and their ratio. The issue's bar: within 25 %. With ``--calibration FILE``
the searches forecast from that calibration (where it fits: see
:func:`nasmlcn.search._prepare.forecast.calibration_for`); without, from none (a
calibration of the user's own is not read), so they time the space's models.

    python benchmarks/forecast.py [--runs 2] [--quick] [--calibration FILE] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
QUICKSTART = [
    *("--devices", "8xK80", "--mem", "12GB", "--flops", "0.5x", "--trials", "4"),
    *("--epochs", "1", "--train-limit", "5000", "--val-limit", "1000"),
]
QUICK = [
    *("--devices", "2xK80", "--mem", "12GB", "--flops", "0.1x", "--trials", "2"),
    *("--epochs", "1", "--train-limit", "300", "--val-limit", "100"),
]


def run(args: list[str], seed: int, calibration: Path | None = None) -> dict[str, Any]:
    """One search of ``args`` with ``seed`` in a fresh folder: its forecast and the
    time its trials took (``calibration``: the calibration file it may forecast from;
    None: none, so it times the space's models)."""
    import optuna

    with tempfile.TemporaryDirectory() as tmp:
        storage = f"sqlite:///{tmp}/f.db"
        command = [sys.executable, "-m", "nasmlcn", "search", *args, "--seed", str(seed)]
        done = subprocess.run(
            [*command, "--storage", storage, "--study", "f", "--json", "-q"],
            capture_output=True,
            text=True,
            check=True,
            cwd=tmp,
            env={
                **os.environ,
                "PYTHONPATH": str(ROOT),
                "NASMLCN_CALIBRATION": str(calibration or Path(tmp, "none.json")),
            },
        )
        result = json.loads(done.stdout)
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        trials = optuna.load_study(study_name="f", storage=storage).get_trials(deepcopy=False)
        first = min(t.datetime_start for t in trials if t.datetime_start)
        last = max(t.datetime_complete for t in trials if t.datetime_complete)
    forecast = result["forecast"]
    took = (last - first).total_seconds()
    return {
        "seed": seed,
        "predicted_s": forecast["total_seconds"],
        "predicted_trial_s": forecast["trial_seconds"],
        "source": forecast["source"],
        "took_s": took,
        "ratio": forecast["total_seconds"] / took,
        "trials": len(trials),
        "models": [t.user_attrs.get("lane_mix") for t in trials],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="a 2-trial search of 300 images")
    parser.add_argument(
        "--calibration",
        type=Path,
        help="forecast from this calibration file (nasmlcn calibrate --out FILE, with the "
        "threads the search trains with) [default: none: the forecast times models]",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    runs = []
    for seed in range(args.runs):
        one = run(QUICK if args.quick else QUICKSTART, seed, args.calibration)
        print(
            f"seed {seed}: predicted {one['predicted_s']:.1f} s from {one['source']}, took "
            f"{one['took_s']:.1f} s (ratio {one['ratio']:.2f})",
            file=sys.stderr,
        )
        runs.append(one)
    ratios = [r["ratio"] for r in runs]
    worst = max(ratios, key=lambda r: abs(r - 1.0))
    summary = {"runs": runs, "worst_ratio": worst, "within_25_percent": abs(worst - 1) <= 0.25}
    if args.json:
        print(json.dumps(summary))
    else:
        print(f"worst predicted/took over {len(runs)} runs: {worst:.2f}")


if __name__ == "__main__":
    from nasmlcn.reproduce.engines.common import exit_with

    main()
    exit_with(0)
