"""The planner and the cost models follow the data's shape: larger and colour images
cost more FLOPs and memory per lane, and a search on them still fills every bucket
with models that fit (the analytic predictions at 3x64x64 are checked against
measured peaks by ``benchmarks/image_shape_costs.py``)."""

from __future__ import annotations

import statistics
from pathlib import Path

import numpy as np
import optuna
import pytest

from nasmlcn.costs import CostContext, get_cost_model
from nasmlcn.search import SearchConfig, run_search
from nasmlcn.specs import LaneSpec
from nasmlcn.study import TrialRecord
from tests.data._images import write_npz

LANES = [LaneSpec("mlcn1", 1, 1), LaneSpec("mlcn2", 3, 2), LaneSpec("mlcn1-ref", 2, 1)]


@pytest.mark.parametrize("model", ["analytic", "thesis"])
def test_a_lane_costs_more_on_larger_and_colour_images(model: str) -> None:
    costs = get_cost_model(model)
    for lane in LANES:
        small = costs.lane_cost(lane, CostContext(input_shape=(1, 28, 28)))
        colour = costs.lane_cost(lane, CostContext(input_shape=(3, 28, 28)))
        large = costs.lane_cost(lane, CostContext(input_shape=(3, 64, 64)))
        assert small.train_flops < colour.train_flops < large.train_flops
        if model == "thesis":  # eq. 6.1 is width and depth only: no image in it
            assert small.memory_bytes == large.memory_bytes
            continue
        assert small.memory_bytes < colour.memory_bytes < large.memory_bytes


def _search(tmp_path: Path, shape: tuple[int, int, int]) -> list[TrialRecord]:
    c, h, w = shape
    rng = np.random.default_rng(0)
    path = write_npz(
        tmp_path / f"{c}x{h}x{w}.npz",
        x_train=rng.integers(0, 256, (12, h, w, c), dtype=np.uint8).squeeze(-1 if c == 1 else ()),
        y_train=np.arange(12) % 4,
    )
    config = SearchConfig(
        devices="2xK80", mem="12GB", evaluator="proxy", dataset=str(path),
        data_dir=str(tmp_path), trials=12, sampler="random", seed=0, study=f"s{h}", prune=False,
        storage=f"sqlite:///{tmp_path / 's.db'}",
    )  # fmt: skip
    run_search(config)
    study = optuna.load_study(study_name=f"s{h}", storage=config.storage)
    return [TrialRecord.of(t) for t in study.trials]


def test_the_buckets_fill_with_models_that_fit_on_larger_colour_images(tmp_path: Path) -> None:
    small = _search(tmp_path, (1, 28, 28))
    large = _search(tmp_path, (3, 64, 64))
    for records, shape in ((small, [1, 28, 28]), (large, [3, 64, 64])):
        assert len(records) == 12
        for r in records:
            assert r.state == "COMPLETE"
            assert r.fits
            assert r.arch["input_shape"] == shape
            assert r.arch["num_classes"] == 4
            devices = r.plan["devices"]
            assert all(d["lanes"] for d in devices)  # both buckets hold lanes
            assert all(d["memory_bytes"] <= d["memory_limit_bytes"] for d in devices)
    flops = [statistics.median(r.predicted["train_flops"] for r in rs) for rs in (small, large)]
    assert flops[1] > 3 * flops[0]  # a 1x FLOPS budget of 3x64x64 images is larger


def test_a_recipe_names_ones_own_images_and_their_size(tmp_path: Path) -> None:
    from nasmlcn.search import load_search_recipe

    rng = np.random.default_rng(1)
    path = write_npz(
        tmp_path / "mine.npz",
        x_train=rng.integers(0, 256, (9, 20, 30), dtype=np.uint8),
        y_train=np.arange(9) % 3,
    )
    recipe = tmp_path / "mine.toml"
    recipe.write_text(
        f'devices = "1xK80"\nmem = "12GB"\nevaluator = "proxy"\ndataset = "{path}"\n'
        f'image_size = 24\ndata_dir = "{tmp_path}"\n'
    )
    options, _, _ = load_search_recipe(recipe)
    config = SearchConfig(**options, storage=f"sqlite:///{tmp_path / 's.db'}")
    assert config.image_size == "24x24"
    from nasmlcn.search import setup_search

    setup = setup_search(config)
    assert setup.dataset.input_shape == (1, 24, 24)
    assert setup.dataset.class_names == ("0", "1", "2")


@pytest.mark.parametrize(
    ("shape", "classes"), [((1, 20, 20), 3), ((3, 96, 96), 12), ((3, 20, 33), 5)]
)
def test_the_model_builds_and_classifies_from_20x20_to_96x96(
    shape: tuple[int, int, int], classes: int
) -> None:
    from dataclasses import replace

    import torch

    from nasmlcn.models import build_model
    from nasmlcn.specs import MLCNSpec

    spec = replace(
        MLCNSpec.from_lanes("mlcn1:1x1,mlcn2:2x2"), input_shape=shape, num_classes=classes
    )
    model = build_model(spec).eval()
    with torch.no_grad():
        out = model(torch.rand(2, *shape))
    assert tuple(out.lengths.shape) == (2, classes)
    assert tuple(out.reconstruction.shape[1:]) in (shape, (shape[0] * shape[1] * shape[2],))


def test_a_warm_start_takes_the_same_data_at_another_path_and_not_changed_data(
    tmp_path: Path,
) -> None:
    import shutil

    rng = np.random.default_rng(3)
    x = rng.integers(0, 256, (12, 28, 28), dtype=np.uint8)
    first = write_npz(tmp_path / "a.npz", x_train=x, y_train=np.arange(12) % 3)
    shutil.copy(first, tmp_path / "copy.npz")
    write_npz(tmp_path / "changed.npz", x_train=255 - x, y_train=np.arange(12) % 3)
    base = SearchConfig(
        devices="2xK80", mem="12GB", evaluator="proxy", dataset=str(first), data_dir=str(tmp_path),
        trials=4, sampler="random", seed=0, study="first", prune=False,
        storage=f"sqlite:///{tmp_path / 's.db'}",
    )  # fmt: skip
    run_search(base)
    same = run_search(
        base.with_overrides(dataset=str(tmp_path / "copy.npz"), study="same", warm_start="first")
    ).warm_start
    assert same is not None
    assert same["transferred"] == 4
    other = run_search(
        base.with_overrides(
            dataset=str(tmp_path / "changed.npz"), study="other", warm_start="first"
        )
    ).warm_start
    assert other is not None
    assert other["transferred"] == 0
    assert other["no_transfer"].startswith("trained differently: data npz 'a' (1x28x28, 3 classes")
    assert "(now npz 'changed' (1x28x28, 3 classes" in other["no_transfer"]
