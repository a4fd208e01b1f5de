"""Markdown notes that optuna-dashboard shows next to each trial and the study.

A trial's note holds its architecture, its placement table and its accuracy
after every epoch; the study's note says what was searched and which figures
nasmlcn saved. Notes use optuna-dashboard's storage layout (``save_note``):
study system attributes ``dashboard:{trial_id}:note_str:{i}`` holding chunks of
at most 2045 characters and ``dashboard:{trial_id}:note_ver``. They are written
here directly rather than through ``save_note``, which reads every system
attribute of the study first and commits each chunk on its own: that read grows
with the study and would make a trial's note cost tens of milliseconds after a
few hundred trials, where this costs one small transaction (the note is written
once, right after the trial ends).

Notes live in the study's system attributes, which some samplers (NSGA-II) read
whole on every trial; so notes are kept short (identical placement rows are
merged), about 1 KB for an 8-device plan.
``tests/dashboard`` checks that ``optuna_dashboard.get_note`` reads them back.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from nasmlcn.dashboard._extract import group_lanes, lane_kind
from nasmlcn.study import set_study_system_attrs

if TYPE_CHECKING:
    import optuna
    from optuna.storages import BaseStorage
    from optuna.trial import FrozenTrial

    from nasmlcn.study import StudyRecord, TrialRecord

NOTE_CHUNK = 2045
"""optuna-dashboard's longest system attribute string (``SYSTEM_ATTR_MAX_LENGTH``)."""
STUDY_NOTE_MARK = "*Written by nasmlcn after every run; delete this line to keep your edits.*"
"""Starts the study notes nasmlcn writes, so that it never overwrites one a user wrote.
A line a reader sees and understands: optuna-dashboard shows HTML as text, so the
HTML comment used before (``LEGACY_NOTE_MARKS``) stood in every study note."""
LEGACY_NOTE_MARKS = ("<!-- nasmlcn study note -->",)
"""Marks of study notes written by earlier versions (replaced like today's)."""


def is_nasmlcn_note(body: str) -> bool:
    """Whether a study note is nasmlcn's own (else a user wrote it: leave it)."""
    return body.startswith((STUDY_NOTE_MARK, *LEGACY_NOTE_MARKS))


def _note_keys(trial_id: int | None) -> tuple[str, str]:
    """optuna-dashboard's (version key, chunk key prefix) for a trial or the study."""
    if trial_id is None:
        return "dashboard:note_ver", "dashboard:note_str:"
    return f"dashboard:{trial_id}:note_ver", f"dashboard:{trial_id}:note_str:"


def split_chunks(prefix: str, text: str, old_chunks: int = 0) -> list[tuple[str, str]]:
    """``text`` as optuna-dashboard's ``<prefix><i>`` chunks of at most 2045
    characters; chunks ``old_chunks`` left beyond them are blanked, as
    optuna-dashboard itself does (it reads chunks up to the number of keys)."""
    chunks = max(1, math.ceil(len(text) / NOTE_CHUNK))
    return [
        (f"{prefix}{i}", text[i * NOTE_CHUNK : (i + 1) * NOTE_CHUNK])
        for i in range(max(chunks, old_chunks))
    ]


def note_items(
    trial_id: int | None, body: str, version: int = 1, old_chunks: int = 0
) -> list[tuple[str, Any]]:
    """The system attributes that store ``body`` as a note (chunks, then version)."""
    ver_key, prefix = _note_keys(trial_id)
    return [*split_chunks(prefix, body, old_chunks), (ver_key, version)]


def write_note(
    storage: BaseStorage,
    study_id: int,
    trial_id: int | None,
    body: str,
    *,
    version: int = 1,
    old_chunks: int = 0,
) -> None:
    """Stores ``body`` as the note of a trial (or of the study when ``trial_id`` is
    None), as optuna-dashboard's ``save_note`` would.

    Everything is one transaction on SQLite and PostgreSQL, so a dashboard reading
    meanwhile sees the old note or the new one, never half of one.
    """
    set_study_system_attrs(storage, study_id, note_items(trial_id, body, version, old_chunks))


def read_note(system_attrs: Mapping[str, Any], trial_id: int | None) -> tuple[int, str, int]:
    """(version, body, number of chunks) of a note in the study's system attributes."""
    ver_key, prefix = _note_keys(trial_id)
    if ver_key not in system_attrs:
        return 0, "", 0
    chunks = sum(1 for k in system_attrs if k.startswith(prefix))
    body = "".join(str(system_attrs.get(f"{prefix}{i}", "")) for i in range(chunks))
    return int(system_attrs[ver_key]), body, chunks


# -- note bodies ---------------------------------------------------------------


def _fmt(value: Any, digits: int = 4) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "-" if value is None else str(value)
    return f"{value:.{digits}g}"


def _bytes(value: Any) -> str:
    from nasmlcn.hardware import format_bytes

    return format_bytes(value) if isinstance(value, (int, float)) else "-"


def _seconds(value: Any, unit: str = "s") -> str:
    if not isinstance(value, (int, float)):
        return "-"
    if unit == "s":
        return f"{value * 1e3:.3g} ms" if abs(value) < 1 else f"{value:.3g} s"
    return f"{value:.4g} {unit}"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def trial_note(trial: FrozenTrial, metric_names: Sequence[str]) -> str:
    """The Markdown note of one trial: result, architecture, placement, curve."""
    from nasmlcn.study import TrialRecord

    record = TrialRecord.of(trial)
    lines = _result_lines(trial, record, metric_names)
    lines += _architecture_lines(record)
    lines += _placement_lines(record)
    lines += _curve_lines(record.training)
    return "\n".join(lines) + "\n"


def _result_lines(
    trial: FrozenTrial, record: TrialRecord, metric_names: Sequence[str]
) -> list[str]:
    """The note's heading: state, objective values, constraints, why it ended."""
    lines = [f"### Trial {trial.number}: {trial.state.name.lower()}"]
    if trial.values is not None:
        lines.append(
            " · ".join(
                f"**{name}** {_fmt(v)}" for name, v in zip(metric_names, trial.values, strict=False)
            )
        )
    if record.constraints:
        verdict = "feasible" if record.feasible else "**infeasible**"
        detail = ", ".join(f"{k} {_fmt(v, 3)}" for k, v in sorted(record.constraints.items()))
        lines += ["", f"{verdict} (constraints, feasible when <= 0: {detail})"]
    reason = record.reason
    if reason:
        lines += ["", f"> {reason}"]
    return lines


def _architecture_lines(record: TrialRecord) -> list[str]:
    """The architecture section: lane mix, settings, size, repairs (none: no lines)."""
    attrs, arch, predicted = record.attrs, record.arch, record.predicted
    lanes = arch.get("lanes") or []
    if not (lanes or attrs.get("lane_mix")):
        return []
    lines = ["", "#### Architecture"]
    mix = attrs.get("lane_mix") or group_lanes([lane_kind(lane) for lane in lanes])
    lines.append(f"{attrs.get('num_lanes', len(lanes))} lanes: `{mix}`")
    details = [
        f"{key} {arch[key]}"
        for key in ("routing", "routing_iterations", "decoder", "lane_dropout")
        if key in arch
    ]
    if predicted.get("params") is not None:
        details.append(f"{predicted['params']:,} parameters")
    if predicted.get("train_flops") is not None:
        details.append(f"{predicted['train_flops'] / 1e9:.3g} GFLOP per training step")
    if details:
        lines += ["", " · ".join(details)]
    repairs = attrs.get("repairs") or []
    if repairs:
        lines.append("")
    lines += [f"- repaired: {repair}" for repair in repairs]
    return lines


def _placement_lines(record: TrialRecord) -> list[str]:
    """The placement section: one table row per device (none without a plan)."""
    plan = record.attrs.get("plan") or {}
    if not plan.get("devices"):
        return []
    unit = str(record.predicted.get("time_unit") or "s")
    kinds = [lane_kind(lane) for lane in record.arch.get("lanes") or []]
    lines = [
        "",
        _placement_heading(plan, record.predicted, unit) + ")",
        "",
        "| device | speed | lanes | time | memory |",
        "|---|---:|---|---:|---:|",
    ]
    for names, rest in _device_rows(plan["devices"], kinds, unit):
        label = names[0] if len(names) == 1 else f"{names[0]} … {names[-1]} ({len(names)})"
        lines.append(f"| {label} | {rest}")
    return lines


def _placement_heading(plan: Mapping[str, Any], predicted: Mapping[str, Any], unit: str) -> str:
    """``#### Placement (strategy, imbalance, predicted times ...`` (unclosed)."""
    imbalance = predicted.get("imbalance")
    head = f"#### Placement ({plan.get('strategy', '?')}"
    if isinstance(imbalance, (int, float)):
        head += f", imbalance {imbalance:.1%}"
    if predicted.get("latency") is not None:
        head += (
            f", predicted lanes' training step (makespan) {_seconds(predicted['latency'], unit)}"
        )
    if predicted.get("inference_latency_s") is not None:
        head += (
            f", predicted inference {_seconds(predicted['inference_latency_s'], unit)}"
            f"/image at batch {predicted.get('inference_batch_size', 1)}"
        )
    if predicted.get("latency") is not None or predicted.get("inference_latency_s") is not None:
        # for the devices listed below, never for the machine that trained it
        head += " on the devices below"
    return head


def _device_rows(
    devices: Sequence[Mapping[str, Any]], kinds: Sequence[str], unit: str
) -> list[tuple[list[str], str]]:
    """(device names, rest of the row) per table row; identical devices share one."""
    rows: list[tuple[list[str], str]] = []
    for d in devices:
        ids = d.get("lanes") or []
        mix = group_lanes([kinds[i] if i < len(kinds) else "?" for i in ids]) if kinds else ""
        memory = _bytes(d.get("memory_bytes"))
        if d.get("memory_limit_bytes"):
            memory += f" / {_bytes(d['memory_limit_bytes'])}"
        rest = (
            f"{_fmt(d.get('speed'), 3)} | {len(ids)}: `{_cell(mix)}` | "
            f"{_seconds(d.get('time'), unit)} | {memory} |"
        )
        name = _cell(str(d.get("name", "?")))
        if rows and rows[-1][1] == rest:  # identical devices share one row
            rows[-1][0].append(name)
        else:
            rows.append(([name], rest))
    return rows


def _curve_lines(training: Mapping[str, Any]) -> list[str]:
    """The validation accuracy per epoch, and what was measured (none: no lines)."""
    curve = training.get("val_accuracy_per_epoch") or []
    if not curve:
        return []
    lines = ["", "#### Validation accuracy per epoch"]
    if training.get("mode") == "proxy" or training.get("evaluator") == "proxy":
        lines += ["", "(proxy evaluator: an analytic stand-in, not a trained model)"]
    lines += [
        "",
        "| epoch | " + " | ".join(str(i + 1) for i in range(len(curve))) + " |",
        "|---|" + "---:|" * len(curve),
        "| accuracy | " + " | ".join(f"{a:.4f}" for a in curve) + " |",
    ]
    measured = [
        f"{training['seconds']:.3g} s" if isinstance(training.get("seconds"), (int, float)) else "",
        _bytes(training["peak_memory_bytes"]) + " peak"
        if isinstance(training.get("peak_memory_bytes"), (int, float))
        else "",
        _measured_inference(training),
    ]
    if any(measured):
        # where it trained, not the target devices of the placement above
        where = training.get("device") if training.get("device") != "proxy" else None
        lines.append("")
        lines.append(
            (f"measured on {where} (where it trained): " if where else "measured: ")
            + " · ".join(m for m in measured if m)
        )
    return lines


def _measured_inference(training: Mapping[str, Any]) -> str:
    """``inference 3.1 ms (IQR 2.9-3.4 ms)/image at batch 1``: the median of the
    timed passes and their spread (and where, when not the training device);
    empty when nothing was measured (the proxy)."""
    from nasmlcn.dashboard._labels import format_measured

    if not isinstance(training.get("measured_inference_latency_s"), (int, float)):
        return ""
    text = (
        f"inference {format_measured(training, device=False)}/image at batch "
        f"{training.get('measured_inference_batch_size', '?')}"
    )
    where = training.get("measured_inference_device")
    return text + (f" on {where}" if where and where != training.get("device") else "")


def study_note(study: optuna.Study, figure_titles: Sequence[str]) -> str:
    """The Markdown note of a study written by nasmlcn: what was searched."""
    from nasmlcn.study import StudyRecord, metric_names

    record = StudyRecord.read(study)
    config = record.config
    names = metric_names(study)
    directions = [d.name.lower() for d in study.directions]
    lines = [
        STUDY_NOTE_MARK,
        "",
        f"### {study.study_name}",
        "",
        "objectives: "
        + ", ".join(f"{n} ({d[:3]})" for n, d in zip(names, directions, strict=False)),
    ]
    for label, key in (
        ("target devices", "devices"),
        ("memory", "mem"),
        ("search space", "space"),
        ("sampler", "sampler"),
        ("evaluator", "evaluator"),
        ("dataset", "dataset"),
        ("epochs", "epochs"),
        ("cost model", "cost_model"),
    ):
        if config.get(key) is not None:
            lines.append(f"- {label}: {config[key]}")
    if record.accuracy_is_proxy:
        lines.append("- **accuracy is a proxy** (analytic stand-in, no training)")
    lines += _retrained_lines(record)
    lines += [
        "",
        "Every trial's note holds its architecture, placement and per-epoch accuracy.",
        "Figures saved by nasmlcn (below): " + ", ".join(figure_titles) + ".",
        "Export a report: `nasmlcn export --study " + study.study_name + "`.",
    ]
    return "\n".join(lines) + "\n"


def _retrained_lines(record: StudyRecord) -> list[str]:
    """The models ``nasmlcn retrain`` trained again, as a Markdown table (none: no lines)."""
    from nasmlcn.study import retrained_models

    models = retrained_models(record)
    if not models:
        return []
    lines = [
        "",
        "#### Retrained (`nasmlcn retrain`)",
        "",
        "| trial | dataset | seed | search val acc | epochs | test acc | params | train img/s "
        "| inference img/s |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for m in models:
        seed = "-" if m.seed is None else str(m.seed)
        lines.append(
            f"| {m.number} | {_cell(m.dataset)} | {seed} | {_fmt(m.search_accuracy)} | {m.epochs} "
            f"| {m.test_accuracy:.4f} ({m.tested}) | {m.params:,} "
            f"| {m.train_images_per_second:.0f} "
            f"| {m.inference_images_per_second:.0f} (batch {m.inference_batch_size}) |"
        )
    return lines
