from __future__ import annotations

from collections.abc import Callable

import pytest

from nasmlcn.errors import UnknownNameError
from nasmlcn.registry import Registry, did_you_mean


def test_register_get_and_wildcards() -> None:
    # factories, as most registries hold: registered directly or as a decorator
    reg: Registry[Callable[[], int]] = Registry("thing")
    reg.register("alpha", lambda: 1)

    @reg.register("beta-tiny")
    def _beta() -> int:
        return 2

    assert reg.get("alpha")() == 1
    assert reg.get("beta-tiny") is _beta  # the decorator returns the function unchanged
    assert reg.names("beta*") == ["beta-tiny"]
    assert list(reg) == ["alpha", "beta-tiny"]
    assert "alpha" in reg
    assert len(reg) == 2


def test_unregister_takes_an_entry_back() -> None:
    reg: Registry[int] = Registry("thing")
    reg.register("a", 1)
    assert reg.unregister("a") == 1
    assert "a" not in reg
    reg.register("a", 2)  # the name is free again
    assert reg.get("a") == 2
    with pytest.raises(UnknownNameError, match="unknown thing 'b'"):
        reg.unregister("b")


def test_unknown_name_suggests_close_match() -> None:
    reg: Registry[int] = Registry("dataset")
    reg.register("fashion-mnist", 1)
    reg.register("cifar10", 2)
    with pytest.raises(
        UnknownNameError, match=r"unknown dataset 'fashion-mnst'; did you mean 'fashion-mnist'"
    ):
        reg.get("fashion-mnst")
    with pytest.raises(UnknownNameError, match="choose one of: cifar10, fashion-mnist"):
        reg.get("zzz")


def test_duplicate_registration_fails() -> None:
    reg: Registry[int] = Registry("thing")
    reg.register("a", 1)
    with pytest.raises(ValueError, match="already registered"):
        reg.register("a", 2)


def test_did_you_mean_names_the_closest_or_falls_back() -> None:
    from nasmlcn.registry import did_you_mean

    assert did_you_mean("tpee", ["tpe", "random", "nsga2"], otherwise="x") == "did you mean 'tpe'?"
    # folding compares case-insensitively but names the choice as spelt
    assert did_you_mean("k8o", ["K80", "V100"], otherwise="x", fold=str.lower) == (
        "did you mean 'K80'?"
    )
    assert did_you_mean("zzz", ["tpe", "random"], otherwise="known: tpe, random") == (
        "known: tpe, random"
    )


def test_did_you_mean_prefers_a_name_with_the_same_start() -> None:
    """'lanse' is closer to 'balance' by difflib's ratio, but a typo keeps the start."""
    keys = ["kind", "lane_types", "width", "depth", "fill", "balance", "routing"]
    assert did_you_mean("lanse", keys, otherwise="") == "did you mean 'lane_types' or 'balance'?"


def test_names_of_a_kind_are_read_when_asked() -> None:
    from nasmlcn.errors import UnknownNameError
    from nasmlcn.registry import names_of

    names = names_of("test kind only this test makes")
    with pytest.raises(UnknownNameError, match="no registry holds"):
        names()
    registry: Registry[int] = Registry("test kind only this test makes")
    registry.register("b", 2)
    registry.register("a", 1)
    assert names() == ["a", "b"]  # asked after the registry was made and filled
    import nasmlcn.search  # noqa: F401  (the search's registries are made on its import)

    assert "tpe" in names_of("sampler")()
