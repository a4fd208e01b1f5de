"""Why a trial failed, in one line a table can show."""

from __future__ import annotations

from nasmlcn.errors import DivergedError, TrainingError


def failure_reason(err: BaseException) -> str:
    """``diverged: ...``, ``out of memory: ...``, or the exception's type and first line."""
    if isinstance(err, DivergedError):
        return f"diverged: {err}"
    if isinstance(err, TrainingError):
        return str(err)
    name = type(err).__name__
    first = str(err).splitlines()[0] if str(err) else ""
    # torch.OutOfMemoryError on GPUs (a RuntimeError in older torch); the CPU
    # allocator raises a RuntimeError saying it "can't allocate memory".
    oom = ("out of memory", "can't allocate memory")
    if isinstance(err, MemoryError) or "OutOfMemory" in name or any(m in first for m in oom):
        return f"out of memory: {first or name}"
    return f"{name}: {first}" if first else name
