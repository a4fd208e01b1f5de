"""A study's trials as flat rows (the CSV export) and as one JSON object (the
JSON export)."""

from __future__ import annotations

from typing import Any

from nasmlcn.dashboard._extract._trials import StudyData

_PREDICTED = (
    "latency", "step_time", "inference_latency_s", "inference_batch_size", "imbalance",
    "peak_memory_bytes", "params", "train_flops",
)  # fmt: skip
_TRAINING = (
    "accuracy", "seconds", "step_seconds", "images_per_second", "peak_memory_bytes",
    "measured_inference_latency_s", "measured_inference_batch_size", "measured_inference_device",
    "measured_inference_p25_s", "measured_inference_p75_s",
)  # fmt: skip


def trial_table(data: StudyData) -> tuple[list[str], list[dict[str, Any]]]:
    """All trials as flat rows of scalars (the CSV export): columns, rows.

    Columns: number, state, feasibility and front, one per objective (by metric
    name), one per constraint and parameter, the lane syntax, the predicted and
    measured costs, the accuracy after every epoch, and the timestamps.
    """
    constraint_names = sorted({k for r in data.rows for k in r.constraints})
    param_names = sorted({k for r in data.rows for k in r.params})
    epochs = max((len(r.accuracy_per_epoch) for r in data.rows), default=0)
    columns = [
        "number", "state", "evaluator", "feasible", "pareto", "repeat_of", "proposed",
        *data.metric_names,
        *(f"constraint:{c}" for c in constraint_names),
        *(f"param:{p}" for p in param_names),
        "num_lanes", "lane_mix", "lanes",
        *(f"predicted:{k}" for k in _PREDICTED), "predicted:time_unit", "predicted:devices",
        *(f"training:{k}" for k in _TRAINING),
        *(f"accuracy_epoch_{e + 1}" for e in range(epochs)),
        "generation", "reason", "datetime_start", "datetime_complete", "duration_s",
    ]  # fmt: skip
    rows = []
    for r in data.rows:
        predicted = r.attrs.get("predicted") or {}
        training = r.attrs.get("training") or {}
        row: dict[str, Any] = {
            "number": r.number,
            "state": r.state,
            # "proxy": every accuracy and training: figure is an analytic stand-in
            "evaluator": _evaluator(data, training),
            "feasible": r.feasible,
            "pareto": r.pareto,
            # a repeat took trial repeat_of's result; proposed: trials of this model
            "repeat_of": r.repeat_of,
            "proposed": r.proposed if r.repeat_of is None else None,
            "num_lanes": r.num_lanes,
            "lane_mix": r.lane_mix,
            "lanes": r.lanes,
            "predicted:time_unit": predicted.get("time_unit"),
            # the predictions are for the study's target devices, the training:
            # figures for where it trained (training:measured_inference_device)
            "predicted:devices": data.target_devices,
            "generation": r.generation,
            "reason": r.reason,
            "datetime_start": r.datetime_start,
            "datetime_complete": r.datetime_complete,
            "duration_s": r.duration_s,
        }
        for i, name in enumerate(data.metric_names):
            row[name] = r.values[i] if r.values is not None and i < len(r.values) else None
        row.update({f"constraint:{c}": r.constraints.get(c) for c in constraint_names})
        row.update({f"param:{p}": r.params.get(p) for p in param_names})
        row.update({f"predicted:{k}": predicted.get(k) for k in _PREDICTED})
        row.update({f"training:{k}": training.get(k) for k in _TRAINING})
        for e in range(epochs):
            row[f"accuracy_epoch_{e + 1}"] = (
                r.accuracy_per_epoch[e] if e < len(r.accuracy_per_epoch) else None
            )
        rows.append(row)
    return columns, rows


def _evaluator(data: StudyData, training: dict[str, Any]) -> str | None:
    """What produced a trial's accuracy: its own record, else the study's."""
    return training.get("evaluator") or data.record.evaluator


def trial_records(data: StudyData) -> dict[str, Any]:
    """The whole study as one JSON-ready object (the JSON export): the study's
    nasmlcn attributes and every trial with all of its user attributes."""
    return {
        "study": data.name,
        "metric_names": list(data.metric_names),
        "directions": list(data.directions),
        "states": data.state_counts,
        "nasmlcn": dict(data.info),
        "trials": [
            {
                "number": r.number,
                "state": r.state,
                "evaluator": _evaluator(data, r.attrs.get("training") or {}),
                "values": (
                    dict(zip(data.metric_names, r.values, strict=False))
                    if r.values is not None
                    else None
                ),
                "feasible": r.feasible,
                "pareto": r.pareto,
                "repeat_of": r.repeat_of,
                "proposed": r.proposed if r.repeat_of is None else None,
                "constraints": r.constraints,
                "params": r.params,
                "generation": r.generation,
                "datetime_start": r.datetime_start,
                "datetime_complete": r.datetime_complete,
                "duration_s": r.duration_s,
                "user_attrs": dict(r.attrs),
            }
            for r in data.rows
        ],
    }
