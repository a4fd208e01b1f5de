"""One model, one spelling: lane order does not change what an
MLCN computes, so the search builds every model with its lanes in canonical order
(``Candidate.canonical``): its spelling is its lane mix, in ``best``'s tables and in
``retrain``/``evaluate``/``export-model``'s lines alike, and a reordering of a
model's lanes is that model to the search's repeats."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import torch

from nasmlcn.search import SearchConfig, run_search
from nasmlcn.search._run.repeats import model_key
from nasmlcn.search.spaces import Candidate
from nasmlcn.specs import ARCHITECTURES, MLCNSpec, format_lane_mix, format_lanes
from nasmlcn.study import TrialRecord, load_existing_study
from tests.search.test_spaces import _context, _prepared, _sample


def test_lane_order_does_not_change_what_a_model_computes() -> None:
    """The same lanes' weights in the other order give the same class probabilities
    (the class capsules' lengths run over the lanes; the decoder, a linear map of
    them, sees its inputs permuted)."""
    from nasmlcn.models import MLCN

    torch.manual_seed(0)
    ab = MLCN(MLCNSpec.from_lanes("mlcn1:1x1,mlcn2:1x2", decoder="none")).eval()
    ba = MLCN(MLCNSpec.from_lanes("mlcn2:1x2,mlcn1:1x1", decoder="none")).eval()
    stacks_ab, stacks_ba = list(ab.lanes.stacks), list(ba.lanes.stacks)
    stacks_ba[0].load_state_dict(stacks_ab[1].state_dict())
    stacks_ba[1].load_state_dict(stacks_ab[0].state_dict())
    x = torch.rand(4, 1, 28, 28)
    with torch.no_grad():
        out_ab, out_ba = ab(x), ba(x)
        assert torch.allclose(out_ab.lengths, out_ba.lengths, atol=1e-6)
        assert torch.equal(out_ab.class_capsules[..., 0], out_ba.class_capsules[..., 1])


@pytest.mark.parametrize("devices", ["8xK80", "1xK80,1xM40,1xP100,1xV100"])
def test_searched_models_are_spelled_by_their_lane_mix(devices: str) -> None:
    """Every bucket-space model's lanes are in canonical order: its exact spelling
    (``format_lanes``, what retrain/evaluate/export print) is its lane mix (what
    ``best`` prints), and each device holds the lanes it was given."""
    ctx = _context(devices, "12GB")
    space = _prepared("mlcn-buckets", ctx)
    rng = random.Random(0)
    reordered = 0
    for _ in range(40):
        params = _sample(space.distributions(), rng)
        drawn = space.build_candidate(params, space.trial_context(params, ctx))
        built = space.build(params, ctx)
        assert format_lanes(built.spec.lanes) == format_lane_mix(built.spec.lanes)
        assert built.assignment is not None
        assert drawn.assignment is not None

        def per_device(c: Candidate) -> Counter[tuple[int, str]]:
            assert c.assignment is not None
            return Counter(zip(c.assignment, map(str, c.spec.lanes), strict=True))

        assert per_device(built) == per_device(drawn)
        reordered += drawn.spec.lanes != built.spec.lanes
        assert space.build(params, ctx) == built  # deterministic
    assert reordered > 10  # the draws are in device-turn order; most were reordered


def test_a_reordering_is_one_candidate_and_one_key() -> None:
    lanes = MLCNSpec.from_lanes("mlcn1:1x1,mlcn2:1x2,mlcn1:1x1")
    other = MLCNSpec.from_lanes("mlcn1:1x1,mlcn1:1x1,mlcn2:1x2")
    a = Candidate(lanes, (1, 0, 0)).canonical()
    b = Candidate(other, (0, 1, 0)).canonical()
    assert a == b
    assert a.spec.describe() == "2*mlcn1:1x1,mlcn2:1x2"
    assert a.assignment == (0, 1, 0)
    settings = {"epochs": 1, "seed": 0}
    assert model_key(a.spec, settings, a.assignment) == model_key(b.spec, settings, b.assignment)
    # the same lanes placed another way: other costs, so another key (not a repeat),
    # but the same network, so the same seed (the key without the placement)
    c = Candidate(other, (0, 0, 1)).canonical()  # both mlcn1 lanes on device 0
    assert model_key(c.spec, settings, c.assignment) != model_key(a.spec, settings, a.assignment)
    assert model_key(c.spec, settings) == model_key(a.spec, settings)


def test_a_search_takes_a_reordered_model_as_a_repeat(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two named models that differ only in lane order: the second trial is a repeat
    of the first, spelled alike."""

    def named(text: str) -> Any:
        return lambda **kw: MLCNSpec.from_lanes(text, **kw)

    monkeypatch.setitem(ARCHITECTURES._entries, "test-ab", named("mlcn1:1x1,mlcn2:1x2"))
    monkeypatch.setitem(ARCHITECTURES._entries, "test-ba", named("mlcn2:1x2,mlcn1:1x1"))
    space = tmp_path / "two.toml"
    space.write_text('kind = "table"\nmodels = ["test-ab", "test-ba"]\n')
    config = SearchConfig(
        evaluator="proxy",
        sampler="random",
        space=str(space),
        trials=6,
        epochs=1,
        devices="2xK80",
        mem="12GB",
        prune=False,
        storage=f"sqlite:///{tmp_path / 's.db'}",
        study="s",
        seed=0,
        count_repeats=True,  # six proposals, whatever they are
    )
    run_search(config)
    trials = load_existing_study("s", config.storage).trials
    assert {t.params["model"] for t in trials} == {"test-ab", "test-ba"}
    records = [TrialRecord.of(t) for t in trials]
    assert {r.lanes for r in records} == {"mlcn1:1x1,mlcn2:1x2"}
    assert [r.repeat_of for r in records] == [None] + [0] * 5
    assert all(r.values == records[0].values for r in records)
