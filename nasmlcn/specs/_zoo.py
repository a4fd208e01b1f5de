"""Named architectures (``--model NAME``), as data: each entry builds a spec.

The MLCN entries are the fixed models of the thesis's Table 4.1, in the thesis text's
lanes (``mlcn2-8x4`` = ``8*mlcn2:4x1``) and in its reference code's
(``mlcn2-ref-8x4`` = ``8*mlcn2-ref:4x1``, that code's network); ``capsnet`` is the
Sabour et al. baseline; ``*-tiny`` entries are small variants that keep tests fast.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nasmlcn.registry import Registry
from nasmlcn.specs._arch import ArchSpec, CapsNetSpec, MLCNSpec

ArchFactory = Callable[..., ArchSpec]
ARCHITECTURES: Registry[ArchFactory] = Registry("model")

DEFAULT_LANES = "2*mlcn2:4x1"
"""The default MLCN: 2 mlcn2 lanes of width 4 (thesis Table 4.1, Fashion-MNIST).

Chosen on the validation split over mlcn1 at the same width: as accurate, faster
and smaller (measured figures: docs/results.md).
"""


def create_arch(name: str, **overrides: Any) -> ArchSpec:
    """The spec of the named architecture, with fields overridden (``num_classes=...``)."""
    return ARCHITECTURES.get(name)(**overrides)


def _register_table() -> None:
    for lane_type in ("mlcn1", "mlcn2", "mlcn1-ref", "mlcn2-ref"):
        for lanes, width in ((2, 4), (4, 4), (8, 4), (32, 2)):
            text = f"{lanes}*{lane_type}:{width}x1"

            def factory(text: str = text, **kw: Any) -> ArchSpec:
                return MLCNSpec.from_lanes(text, **kw)

            ARCHITECTURES.register(f"{lane_type}-{lanes}x{width}", factory)


ARCHITECTURES.register("capsnet", lambda **kw: CapsNetSpec(**kw))
ARCHITECTURES.register(
    "capsnet-tiny",
    lambda **kw: CapsNetSpec(**{"conv_channels": 16, "primary_channels": 4, "class_dim": 4, **kw}),
)
ARCHITECTURES.register("mlcn", lambda **kw: MLCNSpec.from_lanes(DEFAULT_LANES, **kw))
ARCHITECTURES.register("mlcn-tiny", lambda **kw: MLCNSpec.from_lanes("mlcn1:1x1,mlcn2:1x2", **kw))
_register_table()
