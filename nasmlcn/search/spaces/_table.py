"""``table``: fixed named models (thesis Table 4.1), for reference runs.

One categorical parameter, ``model``. Fixed models cannot be repaired: one that
does not fit the devices' memory is reported infeasible (the constraint is set)
and not trained.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from nasmlcn.errors import SearchError
from nasmlcn.search.spaces._base import SPACE_KINDS, Candidate, SearchSpace, SpaceContext, placed
from nasmlcn.specs import ARCHITECTURES, MLCNSpec, create_arch, in_mix_order

if TYPE_CHECKING:
    from optuna.distributions import BaseDistribution


@SPACE_KINDS.register("table")
class TableSpace(SearchSpace):
    """A choice among named MLCN architectures (``nasmlcn models``)."""

    kind = "table"
    keys = ("models",)

    def __init__(self, name: str, data: Mapping[str, Any], source: str) -> None:
        super().__init__(name, data, source)
        models = data.get("models")
        if not isinstance(models, list) or not models:
            raise SearchError(f"space {name!r}: models must list named architectures")
        for model in models:
            if not isinstance(
                create_arch(str(model)) if model in ARCHITECTURES else None, MLCNSpec
            ):
                if model not in ARCHITECTURES:
                    raise SearchError(
                        f"space {name!r}: {ARCHITECTURES.unknown_message(str(model))}"
                    )
                raise SearchError(f"space {name!r}: {model!r} is not an MLCN")
        self.models = tuple(str(m) for m in models)

    def model_distributions(self) -> dict[str, BaseDistribution]:
        from optuna.distributions import CategoricalDistribution

        return {"model": CategoricalDistribution(self.models)}

    def build_candidate(self, params: Mapping[str, Any], ctx: SpaceContext) -> Candidate:
        named = create_arch(params["model"])
        assert isinstance(named, MLCNSpec)
        # placed in canonical order, so a named model and a reordering of its lanes
        # are one model on the devices too (Candidate.canonical)
        return placed(self.make_spec(in_mix_order(named.lanes), ctx), ctx)
