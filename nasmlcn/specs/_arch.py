"""Architecture specs: a Multi-Lane Capsule Network and the CapsNet baseline.

Specs are frozen, validated on construction (errors name the field and value) and
round-trip through JSON with a schema version. They hold no torch objects; the
models in :mod:`nasmlcn.models` are built from them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, ClassVar

from nasmlcn._toml import check_keys
from nasmlcn._validate import check_choice, check_fraction, check_int
from nasmlcn.errors import SpecError
from nasmlcn.specs._lane import LaneSpec, format_lanes, parse_lanes
from nasmlcn.specs._layers import ConvSpec, LaneLayout

ARCH_SCHEMA_VERSION = 1

ROUTINGS = ("vector", "classwise")
"""How a lane's primary capsules are routed (see :mod:`nasmlcn.models._mlcn`).

``vector``: the lane routes to one ``num_classes``-D capsule (the reference code);
with a single output capsule the routing softmax is always 1, so routing reduces to
``squash(sum of votes)``. ``classwise``: the lane routes to ``num_classes`` 1-D
capsules with a softmax over classes, so routing by agreement really happens.
"""

LaneInput = LaneSpec | str | dict[str, Any]
"""One lane as :class:`MLCNSpec` accepts it: a LaneSpec, a lane string (``"mlcn2:4x1"``)
or its JSON object (``{"type": "mlcn2", "width": 4}``)."""

LanesInput = str | Sequence[LaneInput]
"""The lanes as :class:`MLCNSpec` accepts them: a lane string (``"2*mlcn2:4x1"``) or a
list or tuple of :data:`LaneInput`; ``MLCNSpec.lanes`` always holds LaneSpecs."""

DEFAULT_ROUTING = "vector"
"""Chosen by measurement; see the note in :mod:`nasmlcn.models._mlcn`."""

VOTE_INITS = ("scaled", "glorot")
"""How an MLCN lane's vote transforms start (:func:`nasmlcn.models._lane.vote_weights`).

``scaled``: normal with standard deviation ``1/sqrt(N)`` for ``N`` primary capsules, so
the summed votes start with a length of order one. ``glorot``: Glorot (Xavier) uniform
as Keras draws the reference code's ``CapsuleLayer`` weights ``(1, N, K, d)``: bound
``sqrt(6 / ((K + d) N))``, a standard deviation about 3.5x smaller for 16-D capsules.
"""

DEFAULT_VOTE_INIT = "scaled"

DECODERS = ("full", "reduced", "none")
"""Reconstruction decoders: ``full`` reads all class capsules with the non-target ones
masked to zero (Sabour et al.); ``reduced`` reads only the selected class capsule
(FasTrCaps); ``none`` trains with the margin loss alone."""


def _check_input_shape(owner: str, value: Any) -> tuple[int, int, int]:
    if not isinstance(value, (tuple, list)) or len(value) != 3:
        raise SpecError(f"{owner} input_shape must be [channels, height, width], got {value!r}")
    for name, v in zip(("channels", "height", "width"), value, strict=True):
        check_int(owner, f"input_shape.{name}", v, 1)
    return (int(value[0]), int(value[1]), int(value[2]))


def _check_bool(owner: str, name: str, value: Any) -> None:
    if not isinstance(value, bool):
        raise SpecError(f"{owner} {name} must be true or false, got {value!r}")


def _check_common(spec: MLCNSpec | CapsNetSpec) -> None:
    owner = _OWNER[type(spec)]
    check_int(owner, "num_classes", spec.num_classes, 2)
    object.__setattr__(spec, "input_shape", _check_input_shape(owner, spec.input_shape))
    check_int(owner, "routing_iterations", spec.routing_iterations, 1)
    check_choice(owner, "decoder", spec.decoder, DECODERS)


@dataclass(frozen=True)
class MLCNSpec:
    """A Multi-Lane Capsule Network.

    Attributes:
        lanes: The lanes, possibly all different. The constructor also accepts a lane
            string such as ``"2*mlcn2:4x1"`` or a list of lanes in any form of
            :data:`LaneInput` (:data:`LanesInput`); ``__post_init__`` converts them.
        num_classes: Number of classes (and dimension of each lane's output).
        input_shape: ``(channels, height, width)`` of the images.
        routing_iterations: Dynamic routing iterations (3 in the thesis).
        routing: ``vector`` or ``classwise`` (see :data:`ROUTINGS`).
        decoder: ``full``, ``reduced`` or ``none`` (see :data:`DECODERS`).
        lane_dropout: Probability of dropping each lane from the classification path
            during training (thesis sec. 4.2.1); the decoder always sees every lane.
        weight_sharing: Each lane's vote transforms are shared by the primary
            capsules of one capsule channel at every position (FasTrCaps sec. IV-D,
            Alg. 4): ``C/8`` transforms per lane instead of one per primary capsule.
        vote_init: How the vote transforms start: ``scaled`` or ``glorot`` (see
            :data:`VOTE_INITS`); the initial weights only, not the network.
    """

    kind: ClassVar[str] = "mlcn"

    lanes: tuple[LaneSpec, ...]
    num_classes: int = 10
    input_shape: tuple[int, int, int] = (1, 28, 28)
    routing_iterations: int = 3
    routing: str = DEFAULT_ROUTING
    decoder: str = "full"
    lane_dropout: float = 0.0
    weight_sharing: bool = False
    vote_init: str = DEFAULT_VOTE_INIT
    _layouts: tuple[LaneLayout, ...] = field(init=False, repr=False, compare=False)

    if TYPE_CHECKING:
        # What the generated __init__ accepts: `lanes` is wider than the field, which
        # __post_init__ converts to a tuple of LaneSpec. Keep in step with the fields.
        def __init__(
            self,
            lanes: LanesInput,
            num_classes: int = ...,
            input_shape: tuple[int, int, int] = ...,
            routing_iterations: int = ...,
            routing: str = ...,
            decoder: str = ...,
            lane_dropout: float = ...,
            weight_sharing: bool = ...,
            vote_init: str = ...,
        ) -> None: ...

    def __post_init__(self) -> None:
        lanes: Any = self.lanes
        if isinstance(lanes, str):
            lanes = parse_lanes(lanes)
        if not isinstance(lanes, (list, tuple)) or not lanes:
            raise SpecError(f"MLCN lanes must hold at least one lane, got {lanes!r}")
        lanes = tuple(
            lane if isinstance(lane, LaneSpec) else LaneSpec.from_dict(lane) for lane in lanes
        )
        object.__setattr__(self, "lanes", lanes)
        _check_common(self)
        check_choice("MLCN", "routing", self.routing, ROUTINGS)
        dropout = check_fraction("MLCN", "lane_dropout", self.lane_dropout)
        object.__setattr__(self, "lane_dropout", dropout)
        _check_bool("MLCN", "weight_sharing", self.weight_sharing)
        check_choice("MLCN", "vote_init", self.vote_init, VOTE_INITS)
        layouts = tuple(lane.layout(self.input_shape) for lane in lanes)
        object.__setattr__(self, "_layouts", layouts)

    @classmethod
    def from_lanes(cls, lanes: str, **fields: Any) -> MLCNSpec:
        """The spec of ``lanes`` in the compact syntax (``"2*mlcn1:4x1"``)."""
        return cls(tuple(parse_lanes(lanes)), **fields)

    @property
    def num_lanes(self) -> int:
        return len(self.lanes)

    @property
    def lane_layouts(self) -> tuple[LaneLayout, ...]:
        """Per-lane layers for this spec's input shape."""
        return self._layouts

    @property
    def class_capsule_dim(self) -> int:
        """Class capsule k is (lane_1[k], ..., lane_L[k]): one dimension per lane."""
        return self.num_lanes

    def describe(self) -> str:
        """The lanes in the compact syntax."""
        return format_lanes(self.lanes)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object; ``vote_init`` only where it is not the default, so the
        files and model keys of every network written before it stay as they were."""
        data = {
            "schema_version": ARCH_SCHEMA_VERSION,
            "kind": self.kind,
            "lanes": [lane.to_dict() for lane in self.lanes],
            "num_classes": self.num_classes,
            "input_shape": list(self.input_shape),
            "routing_iterations": self.routing_iterations,
            "routing": self.routing,
            "decoder": self.decoder,
            "lane_dropout": self.lane_dropout,
            "weight_sharing": self.weight_sharing,
        }
        if self.vote_init != DEFAULT_VOTE_INIT:
            data["vote_init"] = self.vote_init
        return data


@dataclass(frozen=True)
class CapsNetSpec:
    """The CapsNet baseline of Sabour et al. (2017), in the same framework as MLCN.

    conv ``conv_channels`` kernel 9 + ReLU -> primary capsules (``primary_channels``
    capsule channels of ``primary_dim``-D, kernel 9 stride 2) -> ``num_classes``
    class capsules of ``class_dim``-D by dynamic routing. On 28x28 input: 1152
    primary capsules, 10x16-D class capsules, 8.2 M parameters with the full decoder.

    ``weight_sharing`` (FasTrCaps sec. IV-D, Alg. 4): the 36 primary capsules of one
    capsule channel (its 6x6 grid) share one transform to the class capsules, 32
    transforms instead of 1152: 8.2 M -> 6.8 M parameters (the paper: 6.7 M).
    """

    kind: ClassVar[str] = "capsnet"

    num_classes: int = 10
    input_shape: tuple[int, int, int] = (1, 28, 28)
    conv_channels: int = 256
    primary_channels: int = 32
    primary_dim: int = 8
    class_dim: int = 16
    kernel: int = 9
    routing_iterations: int = 3
    decoder: str = "full"
    weight_sharing: bool = False
    _layout: LaneLayout = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        _check_common(self)
        for name in ("conv_channels", "primary_channels", "primary_dim", "class_dim", "kernel"):
            check_int("CapsNet", name, getattr(self, name), 1)
        _check_bool("CapsNet", "weight_sharing", self.weight_sharing)
        convs = (
            ConvSpec(self.input_shape[0], self.conv_channels, self.kernel),
            ConvSpec(
                self.conv_channels,
                self.primary_channels * self.primary_dim,
                self.kernel,
                stride=2,
                relu=False,
            ),
        )
        shapes = []
        h, w = self.input_shape[1:]
        for conv in convs:
            h, w = conv.output_size(h), conv.output_size(w)
            if h < 1 or w < 1:
                raise SpecError(
                    f"CapsNet kernel {self.kernel} is too large for input {self.input_shape}"
                )
            shapes.append((conv.out_channels, h, w))
        layout = LaneLayout(convs, tuple(shapes), self.primary_dim, self.primary_channels * h * w)
        object.__setattr__(self, "_layout", layout)

    @property
    def layout(self) -> LaneLayout:
        return self._layout

    def describe(self) -> str:
        return f"capsnet ({self._layout.num_primary} primary caps -> {self.num_classes}x{self.class_dim}-D)"

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"schema_version": ARCH_SCHEMA_VERSION, "kind": self.kind}
        for f in fields(self):
            if f.init:
                value = getattr(self, f.name)
                data[f.name] = list(value) if isinstance(value, tuple) else value
        return data


ArchSpec = MLCNSpec | CapsNetSpec
_KINDS: dict[str, type[MLCNSpec] | type[CapsNetSpec]] = {"mlcn": MLCNSpec, "capsnet": CapsNetSpec}
_OWNER: dict[type, str] = {MLCNSpec: "MLCN", CapsNetSpec: "CapsNet"}
"""What the field checks' messages call each kind (a user knows no class names)."""


def arch_from_dict(data: Any) -> ArchSpec:
    """Builds an architecture spec from its JSON object.

    Raises:
        SpecError: Wrong kind, newer schema, unknown field or invalid value.
    """
    if not isinstance(data, dict):
        raise SpecError(f"an architecture must be a JSON object, got {type(data).__name__}")
    data = dict(data)
    version = data.pop("schema_version", ARCH_SCHEMA_VERSION)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise SpecError(f"schema_version must be a positive integer, got {version!r}")
    if version > ARCH_SCHEMA_VERSION:
        raise SpecError(
            f"schema_version {version} is newer than this nasmlcn reads ({ARCH_SCHEMA_VERSION}); upgrade nasmlcn"
        )
    kind = data.pop("kind", "mlcn" if "lanes" in data else None)
    if kind not in _KINDS:
        raise SpecError(f"kind must be one of {', '.join(_KINDS)}; got {kind!r}")
    cls = _KINDS[kind]
    known = (f.name for f in fields(cls) if f.init)
    check_keys(data, known, f"the {kind} architecture", SpecError)
    if "input_shape" in data and isinstance(data["input_shape"], list):
        data["input_shape"] = tuple(data["input_shape"])
    if cls is MLCNSpec and "lanes" not in data:
        raise SpecError("an mlcn architecture needs 'lanes'")
    return cls(**data)
