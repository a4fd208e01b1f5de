"""What a lane's cost depends on besides the lane itself."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from nasmlcn._validate import check_choice, check_int
from nasmlcn.specs import DEFAULT_ROUTING, LaneSpec, MLCNSpec

BYTES_PER_VALUE = 4  # float32 training
ADAM_STATES = 2  # exp_avg and exp_avg_sq per parameter


@dataclass(frozen=True)
class CostContext:
    """The model-wide settings a lane's cost depends on.

    Attributes:
        input_shape: ``(C, H, W)`` of the images.
        num_classes: K (every lane routes to K outputs).
        routing: ``vector`` or ``classwise``.
        routing_iterations: Dynamic routing iterations.
        decoder: ``full``, ``reduced`` or ``none`` (the head's cost).
        batch_size: Training batch size (memory and step time are per step).
        weight_sharing: Vote transforms shared per capsule channel (FasTrCaps
            Alg. 4): fewer parameters, the same FLOPs.
    """

    input_shape: tuple[int, int, int] = (1, 28, 28)
    num_classes: int = 10
    routing: str = DEFAULT_ROUTING
    routing_iterations: int = 3
    decoder: str = "full"
    batch_size: int = 100
    weight_sharing: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "input_shape", tuple(int(v) for v in self.input_shape))
        check_int("cost context", "num_classes", self.num_classes, 2)
        check_int("cost context", "routing_iterations", self.routing_iterations, 1)
        check_int("cost context", "batch_size", self.batch_size, 1)
        check_choice("cost context", "routing", self.routing, ("vector", "classwise"))
        check_choice("cost context", "decoder", self.decoder, ("full", "reduced", "none"))

    @classmethod
    def of(cls, spec: MLCNSpec, batch_size: int = 100) -> CostContext:
        """The context of an MLCN spec trained at ``batch_size``."""
        return cls(
            input_shape=spec.input_shape,
            num_classes=spec.num_classes,
            routing=spec.routing,
            routing_iterations=spec.routing_iterations,
            decoder=spec.decoder,
            batch_size=batch_size,
            weight_sharing=spec.weight_sharing,
        )

    def spec(self, lanes: Sequence[LaneSpec]) -> MLCNSpec:
        """The MLCN of ``lanes`` in this context (the inverse of :meth:`of`)."""
        return MLCNSpec(
            tuple(lanes),
            num_classes=self.num_classes,
            input_shape=self.input_shape,
            routing_iterations=self.routing_iterations,
            routing=self.routing,
            decoder=self.decoder,
            weight_sharing=self.weight_sharing,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "input_shape": list(self.input_shape),
            "num_classes": self.num_classes,
            "routing": self.routing,
            "routing_iterations": self.routing_iterations,
            "decoder": self.decoder,
            "batch_size": self.batch_size,
            **({"weight_sharing": True} if self.weight_sharing else {}),
        }
