"""The planning layer and the CLI import without torch."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    "module",
    [
        "nasmlcn",
        "nasmlcn.specs",
        "nasmlcn.data",
        "nasmlcn.training",
        "nasmlcn.cli",
        "nasmlcn.hardware",
        "nasmlcn.costs",
        "nasmlcn.placement",
        "nasmlcn.planning",
    ],
)
def test_import_does_not_load_torch(module: str) -> None:
    code = f"import sys, {module}; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_version_matches_metadata() -> None:
    from importlib.metadata import version

    import nasmlcn

    assert version("nasmlcn") == nasmlcn.__version__
