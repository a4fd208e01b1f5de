"""Figure details that need no study: how the Pareto plot colours its points."""

from __future__ import annotations

from pathlib import Path

from nasmlcn.dashboard._figures._style import dominated_shade, shade_marker
from tests.dashboard.test_extract import _row


def test_dominated_trials_are_coloured_by_generation_only_when_there_are_several() -> None:
    several = [_row(n, (0.5, 1.0), generation=n // 2) for n in range(4)]
    assert dominated_shade(several) == ([0, 0, 1, 1], "generation")
    # one generation (a study shorter than NSGA-II's population): a colour bar of one
    # value says nothing, so the trial numbers colour the points
    one = [_row(n, (0.5, 1.0), generation=0) for n in range(3, 6)]
    assert dominated_shade(one) == ([3, 4, 5], "trial")
    assert dominated_shade([_row(7, (0.5, 1.0))]) == ([7], "trial")  # not NSGA-II
    assert dominated_shade([]) == ([], "trial")


def test_a_single_colour_value_gets_no_colour_bar() -> None:
    """Plotly draws a bar around one value (-0.4 to 0.4 for generation 0)."""

    assert "showscale" not in shade_marker([0], "generation", showscale=True)
    assert "showscale" not in shade_marker([3, 3], "trial", showscale=True)
    several = shade_marker([3, 5, 9], "trial", showscale=True)
    assert several["showscale"] is True
    assert (several["cmin"], several["cmax"]) == (3, 9)


def test_each_objective_gets_its_own_importances() -> None:
    """Optuna's PED-ANOVA takes low targets as good: a maximised objective must be
    negated, or its panel shows what makes it *low*. Here the first objective
    (maximised) is ``x`` where ``y > 0.5``, else 0: what makes it high is mostly
    ``x``; what makes it low is ``y`` alone, as for the second objective (``y``,
    minimised): the two panels were alike."""
    import optuna

    from nasmlcn.dashboard import extract_study, param_importances

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(
        directions=["maximize", "minimize"], sampler=optuna.samplers.RandomSampler(seed=1)
    )

    def objective(trial: optuna.Trial) -> tuple[float, float]:
        x, y = trial.suggest_float("x", 0, 1), trial.suggest_float("y", 0, 1)
        return (x if y > 0.5 else 0.0), y

    study.optimize(objective, n_trials=100)
    imp = param_importances(study, extract_study(study))
    first = dict(zip(imp.params, imp.values[0], strict=True))
    second = dict(zip(imp.params, imp.values[1], strict=True))
    assert first["x"] > first["y"]
    assert second["y"] > second["x"]


def test_the_study_note_shows_no_html_and_replaces_an_old_one(tmp_path: Path) -> None:
    """optuna-dashboard shows HTML as text: the old ``<!-- ... -->`` mark stood in
    every study note. Today's mark is a sentence; notes with the old one are still
    nasmlcn's and get replaced, a user's own note is kept."""
    import optuna
    import optuna_dashboard

    from nasmlcn.dashboard import refresh_study

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(storage=f"sqlite:///{tmp_path / 's.db'}", study_name="s")
    study.optimize(lambda t: t.suggest_float("x", 0, 1), n_trials=2)
    optuna_dashboard.save_note(study, "<!-- nasmlcn study note -->\n### s\nold\n")
    refresh_study(study, notes="none")
    body = optuna_dashboard.get_note(study)
    assert body.startswith(
        "*Written by nasmlcn after every run; delete this line to keep your edits.*"
    )
    assert "<" not in body  # no HTML a Markdown viewer shows as text
    optuna_dashboard.save_note(study, "my own note")
    refresh_study(study, notes="none")
    assert optuna_dashboard.get_note(study) == "my own note"
