"""Predicted vs measured inference latency per image (batch 1) of whole MLCNs.

For each model: the ``inference`` objective's prediction on the target devices
(``--devices``, default ``1xcpu``) by every cost model (``calibrated`` only with
``--calibration FILE``), and the latency measured here as the ``train``
evaluator measures it (:func:`nasmlcn.measure.time_inference`: eval mode,
``torch.no_grad()``, no decoder, 3 warm-up then 20 timed batch-1 passes, the
median). The weights are untrained: they do not change the arithmetic.

Measured on this machine, so compare with a prediction for the device it is
(``--devices 1xcpu`` on a CPU). On a shared CPU, pass ``--threads 1`` (torch's
threads at batch 1 suffer most from other processes) and calibrate the same way
(``nasmlcn calibrate --threads 1 --clock cpu``).

    python benchmarks/inference_latency.py [--lanes '2*mlcn1:4x1' ...] [--devices 1xcpu]
        [--threads 1] [--calibration FILE] [--json]
"""

from __future__ import annotations

import argparse
import json
import os

import torch

from nasmlcn.costs import CostModel, get_cost_model
from nasmlcn.hardware import parse_devices
from nasmlcn.measure import time_inference
from nasmlcn.models import build_model
from nasmlcn.planning import plan_model
from nasmlcn.specs import MLCNSpec

MODELS = ["mlcn1:1x1", "mlcn1:4x1", "2*mlcn1:4x1", "mlcn2:3x3", "mlcn1:5x2", "4*mlcn2:2x2"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lanes", nargs="+", default=MODELS, help="models, compact syntax")
    parser.add_argument("--devices", default="1xcpu", help="target devices of the prediction")
    # memory is not what this compares: large enough for eq. 6.1's estimates
    parser.add_argument("--mem", default="1024GiB", help="memory of each target device")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    parser.add_argument("--calibration", default=None, help="calibration file (calibrated)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    models: dict[str, CostModel] = {name: get_cost_model(name) for name in ("analytic", "thesis")}
    if args.calibration:
        models["calibrated"] = get_cost_model("calibrated", calibration_file=args.calibration)
    devices = parse_devices(args.devices, mem=args.mem)
    images = torch.rand(64, 1, 28, 28)  # (N, C, H, W)
    rows = []
    for lanes in args.lanes:
        spec = MLCNSpec.from_lanes(lanes)
        predicted = {}
        for name, model in models.items():
            plan = plan_model(spec, devices, cost_model=model)
            predicted[name] = {"value": plan.inference_latency, "unit": plan.time_unit}
        measured = time_inference(build_model(spec), images, input_device="cpu")
        rows.append({"lanes": lanes, "predicted": predicted, "measured": measured.to_dict()})
    if args.json:
        print(json.dumps({"devices": args.devices, "load": os.getloadavg()[0], "rows": rows}))
        return
    print(f"inference latency per image at batch 1; predicted for {args.devices}, measured here")
    for row in rows:
        m = row["measured"]
        shown = "  ".join(
            f"{n} {p['value'] * 1e3:.3g} ms" if p["unit"] == "s" else f"{n} {p['value']:.3g} w2d"
            for n, p in row["predicted"].items()
        )
        print(
            f"{row['lanes']:14} measured {m['seconds_per_image'] * 1e3:.3g} ms "
            f"({m['device']}, {m['threads']} threads, load {m['load_average']:.1f})  "
            f"predicted: {shown}"
        )


if __name__ == "__main__":
    from nasmlcn.reproduce.engines.common import exit_with

    main()
    exit_with(0)
