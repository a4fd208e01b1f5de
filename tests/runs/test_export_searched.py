"""Every format exports the models a default-space search samples: many lanes of
mixed kinds in no sorted order (their stacks reorder the lanes' outputs), checked
against the model on real images. TorchScript's trace, checked by tracing twice, once
saw two graphs in every such model (a constant made on the first call, cached after)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import torch

from nasmlcn.data import load_splits
from nasmlcn.runs import EXPORT_FORMATS, export_run, load_run
from nasmlcn.specs import MLCNSpec
from tests.runs.conftest import write_run
from tests.search.test_spaces import _context, _prepared, _sample

SEEDS = range(10)
# three in the default run (each format takes seconds a model), all ten with -m slow
CASES = [pytest.param(seed, marks=[pytest.mark.slow] if seed >= 3 else []) for seed in SEEDS]


@pytest.fixture(scope="module")
def searched() -> list[MLCNSpec]:
    """Ten seeded models of the default space on the quickstart's devices."""
    ctx = _context("8xK80", "12GB", flops="0.5x", rewards_cost=False)
    space = _prepared("mlcn-buckets", ctx)
    specs = []
    for seed in SEEDS:
        spec = space.build(_sample(space.distributions(), random.Random(seed)), ctx).spec
        assert isinstance(spec, MLCNSpec)
        specs.append(spec)
    return specs


@pytest.fixture(scope="module")
def real_images(data_dir: Path) -> torch.Tensor:
    split = load_splits("fashion-mnist", data_dir, download=False, test_limit=5).test
    images, _ = next(split.batches(5))
    return images


def test_the_sample_holds_what_broke_the_trace(searched: list[MLCNSpec]) -> None:
    unsorted = [
        s for s in searched if [ln.type for ln in s.lanes] != sorted(ln.type for ln in s.lanes)
    ]
    assert len({ln.type for s in searched for ln in s.lanes}) >= 2
    assert len(unsorted) >= 3, [s.describe() for s in searched]


@pytest.mark.parametrize("fmt", list(EXPORT_FORMATS))
@pytest.mark.parametrize("seed", CASES)
def test_a_searched_model_exports_and_matches(
    tmp_path: Path, searched: list[MLCNSpec], real_images: torch.Tensor, fmt: str, seed: int
) -> None:
    arch = searched[seed]
    original = write_run(tmp_path / "run", arch, dataset=None).eval()
    exported = export_run(load_run(tmp_path / "run", require_dataset=False), fmt)
    probabilities, capsules = EXPORT_FORMATS.get(fmt).load(exported.path)(real_images)
    with torch.no_grad():
        out = original(real_images)
    torch.testing.assert_close(probabilities, out.lengths, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(capsules, out.class_capsules, rtol=1e-4, atol=1e-5)
