"""The memory child's protocol: JSON in argv, one JSON line out, run with ``-m``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from nasmlcn.costs import CostContext
from nasmlcn.measure._child import (
    CHILD_MODULE,
    FIXED_MMAP_THRESHOLD,
    MemoryReply,
    MemoryRequest,
    peak_in_child,
)
from nasmlcn.specs import LaneSpec

ROOT = Path(__file__).resolve().parents[2]
REQUEST = MemoryRequest(LaneSpec("mlcn1", 1, 1), CostContext(batch_size=4), 1, 1, 0)


def test_request_and_reply_survive_json() -> None:
    assert MemoryRequest.from_json(REQUEST.to_json()) == REQUEST
    reply = MemoryReply(3 * 1024, 7 * 1024, "VmHWM")
    assert MemoryReply.from_json(reply.to_json()) == reply


def test_importing_the_package_does_not_import_the_child() -> None:
    # Otherwise ``python -m`` finds it in sys.modules before running it and warns.
    code = "import sys, nasmlcn.measure; print('nasmlcn.measure._child' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert done.stdout.strip() == "False"


def test_child_runs_as_a_module_and_answers_one_json_line() -> None:
    env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": str(FIXED_MMAP_THRESHOLD)}
    done = subprocess.run(
        [sys.executable, "-W", "error", "-m", CHILD_MODULE, REQUEST.to_json()],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        check=True,
    )
    assert done.stderr == ""
    (line,) = done.stdout.splitlines()
    reply = MemoryReply.from_json(line)
    assert reply.peak_bytes > 0
    assert reply.baseline_bytes > reply.peak_bytes  # torch itself outweighs a 1x1 lane


def test_unknown_malloc_mode_is_refused_before_a_child_starts() -> None:
    with pytest.raises(ValueError, match="malloc must be one of"):
        peak_in_child(REQUEST, timeout=1.0, malloc="jemalloc")
