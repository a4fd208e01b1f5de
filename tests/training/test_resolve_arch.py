"""``resolve_arch``: what ``nasmlcn train`` trains, from --lanes/--arch/--model."""

from __future__ import annotations

from pathlib import Path

import pytest

from nasmlcn.data import DATASETS
from nasmlcn.errors import SpecError, UnknownNameError
from nasmlcn.specs import DEFAULT_LANES, CapsNetSpec, MLCNSpec, save_arch
from nasmlcn.training import resolve_arch

FMNIST = DATASETS.get("fashion-mnist")
CIFAR = DATASETS.get("cifar10")


def test_default_is_the_default_lanes_fitted_to_the_dataset() -> None:
    spec = resolve_arch(CIFAR)
    assert isinstance(spec, MLCNSpec)
    assert spec.lanes == MLCNSpec.from_lanes(DEFAULT_LANES).lanes
    assert spec.input_shape == CIFAR.input_shape
    assert spec.num_classes == CIFAR.num_classes


def test_lanes_and_overrides() -> None:
    spec = resolve_arch(FMNIST, lanes="3*mlcn1:2x1", routing="classwise", lane_dropout=0.25)
    assert isinstance(spec, MLCNSpec)
    assert len(spec.lanes) == 3
    assert spec.routing == "classwise"
    assert spec.lane_dropout == 0.25


def test_model_name_is_fitted_and_decoder_applies_to_capsnet() -> None:
    spec = resolve_arch(CIFAR, model="capsnet", decoder="none")
    assert isinstance(spec, CapsNetSpec)
    assert spec.input_shape == CIFAR.input_shape
    assert spec.decoder == "none"


def test_arch_file_must_fit_the_dataset(tmp_path: Path) -> None:
    path = tmp_path / "arch.json"
    save_arch(MLCNSpec.from_lanes("2*mlcn2:2x1"), path)
    assert resolve_arch(FMNIST, arch=path) == MLCNSpec.from_lanes("2*mlcn2:2x1")
    with pytest.raises(SpecError, match="cifar10 has 3x32x32"):
        resolve_arch(CIFAR, arch=path)
    with pytest.raises(SpecError, match="routing cannot be combined with arch"):
        resolve_arch(FMNIST, arch=path, routing="vector")


def test_bad_combinations() -> None:
    with pytest.raises(SpecError, match=r"only one of lanes, arch, model \(got lanes and model\)"):
        resolve_arch(FMNIST, lanes="2*mlcn2:2x1", model="capsnet")
    with pytest.raises(SpecError, match="MLCN models only"):
        resolve_arch(FMNIST, model="capsnet", routing="classwise")
    with pytest.raises(UnknownNameError, match="capsnt"):
        resolve_arch(FMNIST, model="capsnt")
    with pytest.raises(SpecError):
        resolve_arch(FMNIST, lanes="")


def test_vote_init_is_an_mlcn_option() -> None:
    spec = resolve_arch(FMNIST, lanes="2*mlcn1-ref:4x1", vote_init="glorot")
    assert isinstance(spec, MLCNSpec)
    assert spec.vote_init == "glorot"
    with pytest.raises(SpecError, match="vote_init apply to MLCN models only"):
        resolve_arch(FMNIST, model="capsnet", vote_init="glorot")
    with pytest.raises(SpecError, match="vote_init must be one of"):
        resolve_arch(FMNIST, vote_init="xavier")
