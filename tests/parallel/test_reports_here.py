"""Only rank 0 of a torchrun job reports (progress, summary, JSON)."""

from __future__ import annotations

from nasmlcn.parallel import reports_here

TORCHRUN = {
    "LOCAL_RANK": "0",
    "WORLD_SIZE": "2",
    "MASTER_ADDR": "127.0.0.1",
    "MASTER_PORT": "29500",
    "TORCHELASTIC_RUN_ID": "x",
}


def test_outside_torchrun_this_process_reports() -> None:
    assert reports_here({})
    assert reports_here({"RANK": "3"})  # RANK alone is not a torchrun job


def test_under_torchrun_only_rank_zero_reports() -> None:
    assert reports_here({**TORCHRUN, "RANK": "0"})
    assert not reports_here({**TORCHRUN, "RANK": "1"})


def test_a_one_rank_torchrun_job_reports() -> None:
    assert reports_here({**TORCHRUN, "WORLD_SIZE": "1", "RANK": "0"})
