"""Images too small for the lanes: the error says how to make them larger."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from nasmlcn.data._registry import DatasetInfo
from nasmlcn.errors import SpecError, nested, option


@contextlib.contextmanager
def images_too_small_hint(dataset: DatasetInfo) -> Iterator[None]:
    """A lane that does not fit a user's images says how to make them larger.

    Raises:
        SpecError: The one raised inside, with ``--image-size`` suggested.
    """
    try:
        yield
    except SpecError as err:
        if dataset.own is None or "does not fit input" not in str(err):
            raise
        raise SpecError(
            f"{nested(err)}: the images of {dataset.own.name!r} are too small for the lanes; "
            f"pass {option('image_size')} 28 (or larger) to resize them"
        ) from None
