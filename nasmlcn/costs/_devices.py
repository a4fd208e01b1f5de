"""Which cost model a search's target devices use.

A catalog kind may declare its own cost model (``cost_model = "capsacc"`` in
``devices.toml``): its lanes' costs then come from that model. A search's
``cost_model`` is the default ``analytic`` unless given; on devices that declare
one, the default yields to it, and any other explicit choice is refused (the
device's figures mean nothing to it). A plan has one cost model, so a pool may
not mix kinds that declare different ones.
"""

from __future__ import annotations

from nasmlcn.errors import NasmlcnError, SearchError, option
from nasmlcn.hardware import load_catalog, parse_devices

DEFAULT = "analytic"


def devices_cost_model(devices: str, cost_model: str, device_file: str | None = None) -> str:
    """The cost model of a search on ``devices`` asked for ``cost_model``.

    Devices that cannot be read leave ``cost_model`` as it is: the search's setup
    reports them.

    Raises:
        SearchError: The devices declare a cost model and another one was given, or
            they declare different ones.
    """
    try:
        catalog = load_catalog(device_file)
        kinds = {
            d.kind: catalog[d.kind].cost_model for d in parse_devices(devices, catalog=catalog)
        }
    except NasmlcnError:
        return cost_model
    declared = set(kinds.values())
    if len(declared) > 1:
        listed = ", ".join(f"{k} ({m or DEFAULT + ' or --cost-model'})" for k, m in kinds.items())
        raise SearchError(
            f"devices {devices!r} mix cost models: {listed}; a search's devices must share one"
        )
    model = declared.pop()
    check_declared(model, next(iter(kinds)), device_file)
    if not model or cost_model == model:
        return cost_model
    if cost_model == DEFAULT:
        return model
    raise SearchError(
        f"devices {devices!r} use cost model {model!r}; {option('cost_model')} {cost_model!r} "
        "does not apply to them (leave it out)"
    )


def check_declared(model: str, kind: str, device_file: str | None) -> None:
    """Refuses a device kind's ``cost_model`` that names no cost model.

    Raises:
        SearchError: ``model`` is set and unknown, naming the kind and its file.
    """
    from nasmlcn.costs._base import COST_MODELS

    if model and model not in COST_MODELS:
        where = f"device file {device_file!r}" if device_file else "the device catalog"
        raise SearchError(f"{where}: [{kind}] cost_model: {COST_MODELS.unknown_message(model)}")
