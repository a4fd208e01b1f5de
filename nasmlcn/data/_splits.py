"""Train/validation/test splits held in memory, and batch iteration."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace

import torch

from nasmlcn.data._normalize import Normalization
from nasmlcn.errors import DatasetError


def to_device(t: torch.Tensor, device: torch.device) -> torch.Tensor:
    """A CPU tensor on ``device`` without the host waiting for the copy: through
    pinned memory, asynchronously, on a GPU (a plain copy from pageable memory waits
    for the GPU's whole queue); as it is on the CPU."""
    if device.type != "cuda":
        return t.to(device)
    return t.pin_memory().to(device, non_blocking=True)


@dataclass(frozen=True)
class RawData:
    """A dataset as loaded: images uint8 ``(N, C, H, W)``, labels int64 ``(N,)``.

    ``shared``: the tensors are memory-mapped from a file that other processes map
    too (a user's cached dataset): its splits index them rather than copy them.
    """

    train_images: torch.Tensor
    train_labels: torch.Tensor
    test_images: torch.Tensor
    test_labels: torch.Tensor
    shared: bool = field(default=False, kw_only=True)


@dataclass(frozen=True)
class Split:
    """One split: uint8 images ``(N, C, H, W)`` and int64 labels ``(N,)``.

    ``normalization`` is the dataset's per-channel normalisation (None for the grey
    sets): :meth:`batches` yields images in [0, 1] (what the decoder reconstructs
    and what augmentations transform), :meth:`inputs` turns such a batch into what
    a model is given.

    With ``index``, the split is the rows ``index`` of a shared ``images`` and
    ``labels`` (a memory-mapped dataset that every worker maps once): batches are
    gathered from them, and nothing is copied until the split moves to another
    device (:meth:`to`) or is read whole (:meth:`dense`). Read a split's images
    through :meth:`dense` where it may hold an index.
    """

    images: torch.Tensor
    labels: torch.Tensor
    normalization: Normalization | None = field(default=None, kw_only=True)
    index: torch.Tensor | None = field(default=None, kw_only=True)

    def __len__(self) -> int:
        return int((self.labels if self.index is None else self.index).shape[0])

    def dense(self) -> Split:
        """The split with its own images and labels (no index): a copy of the rows
        of an indexed split, this split otherwise."""
        if self.index is None:
            return self
        return replace(
            self, images=self.images[self.index], labels=self.labels[self.index], index=None
        )

    def batches(
        self, batch_size: int, *, generator: torch.Generator | None = None
    ) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        """Float images in [0, 1] and labels, shuffled when a generator is given."""
        n = len(self)
        order = None
        if generator is not None:
            # drawn on the CPU (the same order on every device), sent once per epoch
            order = to_device(torch.randperm(n, generator=generator), self.images.device)
        if self.index is not None:
            order = self.index if order is None else self.index[order]
        for start in range(0, n, batch_size):
            if order is None:
                x = self.images[start : start + batch_size]
                y = self.labels[start : start + batch_size]
            else:
                idx = order[start : start + batch_size]
                x, y = self.images[idx], self.labels[idx]
            yield x.float().div_(255.0), y

    def to(self, device: torch.device | str) -> Split:
        """The split with its images and labels on ``device`` (shuffling, batching
        and scaling then happen there); an indexed split on the CPU stays as it is."""
        if self.index is not None and torch.device(device).type == "cpu":
            return self
        split = self.dense()
        return replace(split, images=split.images.to(device), labels=split.labels.to(device))

    @property
    def nbytes(self) -> int:
        """The bytes of the split's own rows (what moving it to a device copies)."""
        if self.index is None:
            return int(self.images.nbytes + self.labels.nbytes)
        row = self.images[0].nbytes if len(self.images) else 0
        return int(len(self) * (row + self.labels.element_size()))

    def inputs(self, images: torch.Tensor) -> torch.Tensor:
        """A model's input for ``images`` ``(B, C, H, W)`` in [0, 1]: normalised per
        channel for a colour dataset, unchanged otherwise."""
        if self.normalization is None:
            return images
        return self.normalization.apply(images)

    def first_inputs(self, count: int) -> torch.Tensor:
        """The first ``count`` images as a model takes them (what inference is timed
        on): scaled to [0, 1], then :meth:`inputs`."""
        rows = self.images[:count] if self.index is None else self.images[self.index[:count]]
        return self.inputs(rows.float().div_(255.0))


@dataclass(frozen=True)
class DataSplits:
    """Training, validation (held out from the training set) and test splits."""

    train: Split
    val: Split
    test: Split

    def to(self, device: torch.device | str) -> DataSplits:
        """Every split on ``device``."""
        return DataSplits(self.train.to(device), self.val.to(device), self.test.to(device))

    def refit(self) -> DataSplits:
        """The splits of a refit (a final training whose epochs were chosen on
        validation before): the training images followed by the validation images as
        the training split, a validation split of zero images, the same test split."""
        if self.train.index is not None and self.val.index is not None:  # rows of one source
            indices = torch.cat((self.train.index, self.val.index))  # (N_train + N_val,)
            empty = replace(self.val, index=self.val.index[:0])
            return DataSplits(replace(self.train, index=indices), empty, self.test)
        train, val = self.train.dense(), self.val.dense()
        merged = replace(
            train,
            images=torch.cat((train.images, val.images)),  # (N_train + N_val, C, H, W)
            labels=torch.cat((train.labels, val.labels)),  # (N_train + N_val,)
        )
        empty = replace(val, images=val.images[:0], labels=val.labels[:0])  # (0, C, H, W)
        return DataSplits(merged, empty, self.test)

    @property
    def nbytes(self) -> int:
        return self.train.nbytes + self.val.nbytes + self.test.nbytes


def make_splits(
    raw: RawData,
    *,
    val_fraction: float = 0.1,
    seed: int = 0,
    train_limit: int | None = None,
    val_limit: int | None = None,
    test_limit: int | None = None,
    normalization: Normalization | None = None,
) -> DataSplits:
    """Splits the training set into train/validation with a seeded permutation.

    The validation split is ``val_fraction`` of the training set, chosen by
    ``seed``; the test set is kept whole for final reporting. Limits take the first
    N of each split (after the seeded shuffle), so a limited run is a subset of the
    full one. Every split carries ``normalization`` (the dataset's).
    """
    n = int(raw.train_labels.shape[0])
    if not 0 < val_fraction < 1:
        raise DatasetError(f"val_fraction must be in (0, 1), got {val_fraction}")
    n_val = max(1, round(n * val_fraction))
    if n - n_val < 1:
        raise DatasetError(f"the training set has only {n} images; nothing left after validation")
    order = torch.randperm(n, generator=torch.Generator().manual_seed(seed))
    val_idx, train_idx = order[:n_val], order[n_val:]
    train_idx = train_idx[:train_limit] if train_limit else train_idx
    val_idx = val_idx[:val_limit] if val_limit else val_idx
    test_n = min(test_limit, len(raw.test_labels)) if test_limit else len(raw.test_labels)
    test = Split(raw.test_images[:test_n], raw.test_labels[:test_n], normalization=normalization)
    if raw.shared:  # rows of the shared, memory-mapped images: no copy per process
        images, labels = raw.train_images, raw.train_labels
        return DataSplits(
            train=Split(images, labels, normalization=normalization, index=train_idx),
            val=Split(images, labels, normalization=normalization, index=val_idx),
            test=test,
        )
    return DataSplits(
        train=Split(
            raw.train_images[train_idx], raw.train_labels[train_idx], normalization=normalization
        ),
        val=Split(
            raw.train_images[val_idx], raw.train_labels[val_idx], normalization=normalization
        ),
        test=test,
    )
