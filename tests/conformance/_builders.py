"""How the conformance suites build an entry of a registry whose entries need
arguments, and small helpers they share.

An entry that needs no arguments is built with none; one that does (the
``calibrated`` cost model needs a calibration) gets a builder here. A new entry
that needs arguments fails its conformance tests until it has one: that is the
point, every entry is tested.
"""

from __future__ import annotations

from collections.abc import Callable

from nasmlcn.costs import COST_MODELS, CostContext, CostModel

# Seconds per unit of TIME_FEATURES and bytes per unit of MEMORY_FEATURES, of the
# order ``nasmlcn calibrate`` measures on a 2-core CPU (as tests/costs uses): every
# coefficient > 0, so every feature counts.
_TIME_COEFFICIENTS = (5e-12, 6e-8, 1e-9, 1e-7, 1.2e-3, 2.4e-3)
_MEMORY_COEFFICIENTS = (1.0, 1.05, 750.0, 1.5e6)


def _calibrated() -> CostModel:
    from nasmlcn.costs import CalibratedCostModel, Calibration

    calibration = Calibration(
        device="cpu",
        speed=0.15,
        context=CostContext(),
        threads=2,
        time_coefficients=_TIME_COEFFICIENTS,
        memory_coefficients=_MEMORY_COEFFICIENTS,
    )
    return CalibratedCostModel(calibration=calibration)


COST_MODEL_BUILDERS: dict[str, Callable[[], CostModel]] = {"calibrated": _calibrated}


def build_cost_model(name: str) -> CostModel:
    """The cost model registered as ``name``, built as the conformance suite needs."""
    build = COST_MODEL_BUILDERS.get(name)
    return build() if build is not None else COST_MODELS.get(name)()
