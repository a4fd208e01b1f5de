"""Training-batch augmentation: ``shift`` is a pure zero-filled translation of at most
2 px, ``crop`` one of at most 4 px (pad-and-crop), ``crop-flip`` that and a mirror
half the time; all reproducible from the seed, and only training batches see them."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import torch

from nasmlcn.data import DataSplits, load_splits
from nasmlcn.errors import SpecError
from nasmlcn.specs import MLCNSpec
from nasmlcn.training import (
    AUGMENTATIONS,
    EpochResult,
    InMemoryJob,
    RunOptions,
    TrainConfig,
    _augment,
    evaluate,
    random_shift,
    train,
)

CENTRE = (14, 14)


def _translated(image: torch.Tensor, dy: int, dx: int) -> torch.Tensor:
    """The oracle: ``image`` (H, W) moved by (dy, dx) one pixel at a time, zero fill."""
    h, w = image.shape
    out = torch.zeros_like(image)
    for i in range(h):
        for j in range(w):
            if 0 <= i - dy < h and 0 <= j - dx < w:
                out[i, j] = image[i - dy, j - dx]
    return out


def _marked_batch(n: int) -> torch.Tensor:
    """Channel 0: random pixels; channel 1: one lit pixel at the centre (finds the shift)."""
    x = torch.rand(n, 2, 28, 28, generator=torch.Generator().manual_seed(1))
    x[:, 1] = 0.0
    x[:, 1, CENTRE[0], CENTRE[1]] = 0.75
    return x


def test_registry_lists_the_builtins() -> None:
    assert AUGMENTATIONS.names() == ["crop", "crop-flip", "none", "shift"]
    assert AUGMENTATIONS.get("none").apply is None


def _colour_marked_batch(n: int) -> torch.Tensor:
    """(n, 3, 32, 32): channels 0-1 random, channel 2 one lit pixel at (16, 16)."""
    x = torch.rand(n, 3, 32, 32, generator=torch.Generator().manual_seed(2))
    x[:, 2] = 0.0
    x[:, 2, 16, 16] = 0.5
    return x


def test_crop_is_a_zero_filled_translation_of_at_most_four_pixels() -> None:
    # torchvision's RandomCrop(32, padding=4) picks a window of the zero-padded
    # 40x40 image: the same as moving the image by (dy, dx) in [-4, 4]^2.
    x = _colour_marked_batch(600)
    crop = AUGMENTATIONS.get("crop").apply
    assert crop is not None
    out = crop(x, torch.Generator().manual_seed(0))
    assert out.shape == x.shape
    assert out.dtype == x.dtype
    seen = set()
    for i, (image, o) in enumerate(zip(x, out, strict=True)):
        lit = (o[2] != 0).nonzero()
        assert len(lit) == 1
        dy, dx = int(lit[0, 0]) - 16, int(lit[0, 1]) - 16
        assert max(abs(dy), abs(dx)) <= 4
        if i < 40:  # the pixel-by-pixel oracle is slow; 40 images suffice
            for c in (0, 1):
                assert torch.equal(o[c], _translated(image[c], dy, dx))
        seen.add((dy, dx))
    assert len(seen) == 81  # every window of the padded image is drawn


def test_crop_flip_mirrors_about_half_of_the_cropped_images() -> None:
    x = _colour_marked_batch(400)
    crop_flip = AUGMENTATIONS.get("crop-flip").apply
    assert crop_flip is not None
    out = crop_flip(x, torch.Generator().manual_seed(7))
    # the same generator state draws the same crops first, then the flips
    cropped = random_shift(x, 4, torch.Generator().manual_seed(7))
    flipped = 0
    for c, o in zip(cropped, out, strict=True):
        if torch.equal(o, c):
            continue
        assert torch.equal(o, c.flip(-1))  # a left-right mirror, nothing else
        flipped += 1
    assert 150 < flipped < 250


def test_crop_flip_never_flips_rows_and_crop_never_mirrors() -> None:
    # an image that is symmetric left-right only looks the same after a flip
    row = torch.arange(32, dtype=torch.float32) / 32  # (W,)
    x = row.flip(0).expand(64, 3, 32, 32).clone()  # each row runs 1 -> 0 left to right
    crop, crop_flip = AUGMENTATIONS.get("crop").apply, AUGMENTATIONS.get("crop-flip").apply
    assert crop is not None
    assert crop_flip is not None
    cropped = crop(x, torch.Generator().manual_seed(1))
    flipped = crop_flip(x, torch.Generator().manual_seed(1))
    centre = (slice(None), slice(None), slice(4, 28), slice(4, 28))  # never touched by padding

    def decreasing(batch: torch.Tensor) -> torch.Tensor:
        return (batch[centre].diff(dim=3) < 0).all(dim=(1, 2, 3))  # (B,)

    assert decreasing(cropped).all()
    assert 0 < int(decreasing(flipped).sum()) < 64  # some mirrored (increasing), some not


@pytest.mark.parametrize("name", ["crop", "crop-flip"])
def test_crop_augmentations_are_seeded(name: str) -> None:
    apply = AUGMENTATIONS.get(name).apply
    assert apply is not None
    x = _colour_marked_batch(32)
    a = apply(x, torch.Generator().manual_seed(5))
    b = apply(x, torch.Generator().manual_seed(5))
    c = apply(x, torch.Generator().manual_seed(6))
    assert torch.equal(a, b)
    assert not torch.equal(a, c)
    assert not torch.equal(a, x)


def test_shift_is_a_zero_filled_translation_of_at_most_two_pixels() -> None:
    x = _marked_batch(200)
    shifted = AUGMENTATIONS.get("shift").apply(x, torch.Generator().manual_seed(0))  # type: ignore[misc]
    assert shifted.shape == x.shape
    assert shifted.dtype == x.dtype
    assert not torch.equal(shifted, x)
    seen = set()
    for image, out in zip(x, shifted, strict=True):
        lit = (out[1] != 0).nonzero()
        assert len(lit) == 1  # the marker moved, whole, and nothing else lit up
        dy, dx = int(lit[0, 0]) - CENTRE[0], int(lit[0, 1]) - CENTRE[1]
        assert abs(dy) <= 2
        assert abs(dx) <= 2
        assert float(out[1, lit[0, 0], lit[0, 1]]) == 0.75
        assert torch.equal(out[0], _translated(image[0], dy, dx))
        seen.add((dy, dx))
    assert len(seen) == 25  # every shift in [-2, 2]^2 is drawn


def test_a_pixel_shifted_out_is_dropped() -> None:
    x = _marked_batch(100)
    x[:, 0] = 0.0
    x[:, 0, 0, 0] = 1.0  # a corner pixel: gone whenever the image moves up or left
    shifted = random_shift(x, 2, torch.Generator().manual_seed(3))
    dropped = 0
    for out in shifted:
        lit = (out[1] != 0).nonzero()[0]
        dy, dx = int(lit[0]) - CENTRE[0], int(lit[1]) - CENTRE[1]
        if dy < 0 or dx < 0:
            assert not out[0].any()
            dropped += 1
        else:
            assert (out[0] != 0).nonzero().tolist() == [[dy, dx]]
            assert out[0, dy, dx] == 1.0
    assert 0 < dropped < 100


def test_same_seed_same_shifts_other_seed_other_shifts() -> None:
    x = _marked_batch(50)
    a = random_shift(x, 2, torch.Generator().manual_seed(5))
    b = random_shift(x, 2, torch.Generator().manual_seed(5))
    c = random_shift(x, 2, torch.Generator().manual_seed(6))
    assert torch.equal(a, b)
    assert not torch.equal(a, c)
    assert torch.equal(random_shift(x, 0, torch.Generator()), x)


def test_unknown_augmentation_names_the_value_and_the_choices() -> None:
    with pytest.raises(
        SpecError,
        match=r"unknown augmentation 'flip'; choose one of: crop, crop-flip, none, shift",
    ):
        TrainConfig(augment="flip")
    assert TrainConfig().augment == "none"
    assert TrainConfig(augment="shift").to_dict()["augment"] == "shift"


def _train(
    config: TrainConfig, checkpoint: Path | None = None, resume: bool = False
) -> tuple[torch.nn.Module, list[EpochResult], DataSplits]:
    spec = MLCNSpec.from_lanes("mlcn1:1x1")
    splits = load_splits("synthetic", train_limit=40, val_limit=25)
    # built and seeded with config.seed, as the library trains; untested
    options = RunOptions(checkpoint_path=checkpoint, resume=resume, test=False)
    run = train(InMemoryJob(spec, splits, config, options))
    return run.model, run.history, splits


def test_only_training_batches_are_shifted(monkeypatch: pytest.MonkeyPatch) -> None:
    sizes: list[int] = []
    original = _augment.random_shift

    def spy(images: torch.Tensor, max_pixels: int, generator: torch.Generator) -> torch.Tensor:
        sizes.append(len(images))
        return original(images, max_pixels, generator)

    monkeypatch.setattr(_augment, "random_shift", spy)
    config = TrainConfig(epochs=2, batch_size=10, eval_batch_size=25, augment="shift")
    model, history, splits = _train(config)
    assert sizes == [10] * 8  # 4 training batches per epoch; the 25 validation images never
    # The reported validation figures are those of the plain validation images.
    assert history[-1].val_loss == pytest.approx(
        evaluate(model, splits.val, batch_size=25)[0], rel=1e-6
    )


def test_shift_training_is_reproducible_and_resumable(tmp_path: Path) -> None:
    # Extended from 1 epoch to 2 below, which only a per-epoch lr policy allows.
    config = TrainConfig(epochs=2, batch_size=10, augment="shift", seed=4, lr_policy="exponential")
    first, history, _ = _train(config)
    _, history_again, _ = _train(config)
    _, history_plain, _ = _train(TrainConfig(epochs=2, batch_size=10, seed=4))
    assert [h.train_loss for h in history] == [h.train_loss for h in history_again]
    assert history[0].train_loss != history_plain[0].train_loss
    # 1 epoch, then resumed for the second: the same shifts as in one go.
    checkpoint = tmp_path / "checkpoint.pt"
    _train(replace(config, epochs=1), checkpoint)
    resumed, history_resumed, _ = _train(config, checkpoint, resume=True)
    assert [h.train_loss for h in history_resumed] == [h.train_loss for h in history]
    for a, b in zip(first.state_dict().values(), resumed.state_dict().values(), strict=True):
        assert torch.equal(a, b)
