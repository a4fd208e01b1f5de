"""A user's photos read at full size: the refusal says to resize them first.

Six 3000x2000 JPEGs made every lane need 87 GiB at batch 100, and the search said
"raise --mem or lower --batch-size": no memory holds that, and the fix is
``--image-size``."""

from __future__ import annotations

from pathlib import Path

import pytest

from nasmlcn.errors import SearchError
from nasmlcn.search import SearchConfig, setup_search
from tests.data._images import write_folder


@pytest.fixture(scope="module")
def photos(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two classes of three 3000x2000 colour JPEGs, and a data folder for their cache."""
    root = tmp_path_factory.mktemp("photos")
    write_folder(
        root / "photos", classes=2, per_class=3, size=(2000, 3000), channels=3, suffix=".jpg"
    )
    (root / "data").mkdir()
    return root / "photos", root / "data"


def _refusal(photos: tuple[Path, Path], **options: object) -> str:
    folder, data = photos
    config = SearchConfig(
        evaluator="proxy",
        dataset=str(folder),
        data_dir=str(data),
        **options,  # type: ignore[arg-type]
    )
    with pytest.raises(SearchError) as err:
        setup_search(config)
    return err.value.for_cli()


def test_photos_too_large_to_train_on_are_told_to_pass_an_image_size(
    photos: tuple[Path, Path],
) -> None:
    said = _refusal(photos)
    assert said.startswith("no model fits the target devices: the smallest lane (")
    assert said.endswith(
        "; pass --image-size 64 to resize your images (those of 'photos' are 3x2000x3000, "
        "CxHxW), or raise --mem or lower --batch-size"
    )
    # a size given but still too large: lower it
    resized = _refusal(photos, image_size=1024)
    assert resized.endswith(
        "; lower --image-size to 64 (it resizes the images of 'photos' to 3x1024x1024, "
        "CxHxW), or raise --mem or lower --batch-size"
    )
    # where no smaller image fits either, memory is all there is to change
    tiny = _refusal(photos, image_size=64, mem="1MiB")
    assert tiny.endswith("the largest device (K80) has 1 MiB; raise --mem or lower --batch-size")
