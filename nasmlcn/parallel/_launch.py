"""Starting ranks: N local processes (spawn), or one rank of a ``torchrun`` job.

:func:`launch` starts ``world_size`` processes on this machine, each with an
initialised process group (gloo on CPU, NCCL with one GPU per process), runs
``fn(ctx, *args)`` in every one, and returns the ranks' results in rank order.
Rank 0 can :meth:`RankContext.emit` events (progress) that the parent hands to
``on_event`` while the ranks run. The parent owns the rendezvous store (a
``TCPStore`` on a free port), so there are no port races.

Failure handling, so that nothing hangs:

- a rank that raises reports its exception; the parent re-raises a
  :class:`~nasmlcn.errors.NasmlcnError` as it is, anything else as a
  :class:`DistributedError` naming the rank;
- a rank that dies (killed, ``os._exit``) closes its connections: its peers'
  next collective fails at once and the parent reports which rank died;
- a rank that stops answering makes its peers' collectives time out after
  ``timeout_s`` (gloo's per-operation timeout, set by ``init_process_group``);
- when any rank fails, the parent terminates the others.

:func:`init_from_env` is the ``torchrun`` side: it reads ``RANK``,
``WORLD_SIZE``, ``LOCAL_RANK`` and ``MASTER_ADDR``/``MASTER_PORT`` as torchrun
sets them, for one or many nodes.
"""

from __future__ import annotations

import datetime
import logging
import os
import pickle
import queue as queue_module
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from nasmlcn._exit import before_exit
from nasmlcn.errors import DistributedError, NasmlcnError, option

logger = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 300.0
"""Seconds a collective (or the rendezvous) may wait for a peer."""

_TORCHRUN_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")


@dataclass
class RankContext:
    """What a rank knows about itself.

    Attributes:
        rank: Global rank.
        world_size: Number of ranks.
        local_rank: Rank on this node (picks the GPU).
        device: Where this rank computes (``cpu`` or ``cuda:LOCAL_RANK``).
        backend: ``gloo`` or ``nccl``.
        launcher: ``spawn`` (:func:`launch`) or ``torchrun``.
    """

    rank: int
    world_size: int
    local_rank: int
    device: str
    backend: str
    launcher: str = "spawn"
    _queue: Any = field(default=None, repr=False)
    _answers: Any = field(default=None, repr=False)
    _timeout_s: float = field(default=DEFAULT_TIMEOUT_S, repr=False)

    def emit(self, event: Any) -> None:
        """Sends ``event`` to the parent's ``on_event`` (ignored under torchrun)."""
        if self._queue is not None:
            self._queue.put(("event", self.rank, _dumps(event), None))

    def ask(self, event: Any) -> Any:
        """Sends ``event`` to the parent's ``on_event`` and returns what it returned
        (rank 0 of a :func:`launch`; None elsewhere, and under torchrun).

        Raises:
            DistributedError: No answer within the job's collective timeout.
        """
        if self._queue is None or self._answers is None:
            return None
        self._queue.put(("ask", self.rank, _dumps(event), None))
        try:
            return pickle.loads(self._answers.get(timeout=self._timeout_s))
        except queue_module.Empty:
            raise DistributedError(
                f"the launching process did not answer rank {self.rank} "
                f"within {self._timeout_s:g} s"
            ) from None


def under_torchrun(environ: Mapping[str, str] | None = None) -> bool:
    """True in a process torchrun started for a job of more than one rank."""
    env = os.environ if environ is None else environ
    return all(v in env for v in _TORCHRUN_VARS) and int(env.get("WORLD_SIZE", "1")) > 1


def reports_here(environ: Mapping[str, str] | None = None) -> bool:
    """False in a torchrun rank other than 0: rank 0 reports for the whole job
    (progress, summary, JSON); every other rank trains quietly."""
    env = os.environ if environ is None else environ
    return not under_torchrun(env) or env.get("RANK") == "0"


def _pick_device(prefer: str, local_rank: int) -> tuple[str, str]:
    """(device, backend) of a rank: NCCL on its own GPU, or gloo on the CPU."""
    import torch

    if prefer == "cpu":
        return "cpu", "gloo"
    if prefer in ("auto", "cuda") and torch.cuda.is_available():
        count = torch.cuda.device_count()
        if local_rank < count:
            return f"cuda:{local_rank}", "nccl"
        if prefer == "cuda":
            raise DistributedError(
                f"local rank {local_rank} has no GPU of its own: this node has {count}; "
                f"start at most that many processes per node, or use {option('device')} cpu"
            )
    elif prefer == "cuda":
        raise DistributedError(f"{option('device')} cuda: no CUDA device is available here")
    return "cpu", "gloo"


def _init_group(
    ctx: RankContext, timeout_s: float, store: Any = None, init_method: str | None = None
) -> None:
    import torch
    import torch.distributed as dist

    if ctx.device.startswith("cuda"):
        torch.cuda.set_device(torch.device(ctx.device))
    try:
        dist.init_process_group(
            ctx.backend,
            init_method=init_method,
            store=store,
            rank=ctx.rank,
            world_size=ctx.world_size,
            timeout=datetime.timedelta(seconds=timeout_s),
        )
    except RuntimeError as err:  # rendezvous timeout, unreachable master
        raise DistributedError(
            f"rank {ctx.rank}: the process group did not form within {timeout_s:g} s "
            f"({str(err).strip().splitlines()[0]})"
        ) from err


def init_from_env(prefer: str = "auto", timeout_s: float = DEFAULT_TIMEOUT_S) -> RankContext:
    """Joins the ``torchrun`` job this process belongs to.

    Args:
        prefer: ``auto`` (this rank's GPU ``cuda:LOCAL_RANK`` with NCCL when there
            is one, else the CPU with gloo), ``cpu`` or ``cuda``.
        timeout_s: Rendezvous and collective timeout.

    Raises:
        DistributedError: Not under torchrun, or the group did not form.
    """
    env = os.environ
    missing = [v for v in _TORCHRUN_VARS if v not in env]
    if missing:
        raise DistributedError(
            f"not started by torchrun ({', '.join(missing)} unset); "
            "run e.g. torchrun --nproc-per-node 2 -m nasmlcn train ..."
        )
    local_rank = int(env["LOCAL_RANK"])
    device, backend = _pick_device(prefer, local_rank)
    ctx = RankContext(
        int(env["RANK"]), int(env["WORLD_SIZE"]), local_rank, device, backend, "torchrun"
    )
    _init_group(ctx, timeout_s, init_method="env://")
    return ctx


def finish_group() -> None:
    """Leaves the process group once every rank is done.

    The barrier keeps a rank that finished early (rank 0 still writes files) from
    tearing down its connections under a peer that still uses them.
    """
    import torch.distributed as dist

    if not dist.is_initialized():
        return
    try:
        dist.barrier()
    except RuntimeError as err:  # a peer already gone: nothing left to wait for
        logger.debug("final barrier failed: %s", err)
    dist.destroy_process_group()


def _dumps(obj: Any) -> bytes:
    # Plain pickle, not the queue's: torch's reductions would pass tensors as
    # shared-memory handles that die with the rank that sent them.
    return pickle.dumps(obj)


def _portable(exc: BaseException) -> BaseException | None:
    """``exc`` if it survives pickling (it crosses a process boundary), else None."""
    try:
        clone = pickle.loads(pickle.dumps(exc))
    except Exception:
        return None
    return clone if isinstance(clone, BaseException) else None


@dataclass(frozen=True)
class _Spawn:
    """What every spawned rank is given: the function, its arguments and the job's
    rendezvous (picklable: spawn sends it to each process)."""

    fn: Callable[..., Any]
    args: tuple[Any, ...]
    port: int
    world_size: int
    prefer: str  # the device asked for (_pick_device)
    timeout_s: float
    threads: int | None


def _entry(local_rank: int, spawn: _Spawn, result_queue: Any, answers: Any) -> None:
    """Body of a spawned rank (module level so that spawn can import it)."""
    import torch
    import torch.distributed as dist

    if spawn.threads is not None:
        torch.set_num_threads(spawn.threads)
    try:
        device, backend = _pick_device(spawn.prefer, local_rank)
        ctx = RankContext(
            local_rank,
            spawn.world_size,
            local_rank,
            device,
            backend,
            "spawn",
            result_queue,
            answers if local_rank == 0 else None,  # only rank 0 asks the launcher
            spawn.timeout_s,
        )
        store = dist.TCPStore(
            "127.0.0.1",
            spawn.port,
            spawn.world_size,
            is_master=False,
            timeout=datetime.timedelta(seconds=spawn.timeout_s),
        )
        _init_group(ctx, spawn.timeout_s, store=store)
        result = spawn.fn(ctx, *spawn.args)
    except BaseException as exc:
        report = (_portable(exc), traceback.format_exc())
        result_queue.put(("error", local_rank, _dumps(report), None))
        raise
    result_queue.put(("result", local_rank, _dumps(result), None))
    finish_group()
    before_exit()  # the rank ends here


def launch(
    fn: Callable[..., Any],
    world_size: int,
    *args: Any,
    device: str = "cpu",
    timeout_s: float = DEFAULT_TIMEOUT_S,
    threads: int | None = None,
    on_event: Callable[[Any], Any] | None = None,
) -> list[Any]:
    """Runs ``fn(ctx, *args)`` in ``world_size`` new local processes.

    Args:
        fn: A module-level function (spawned processes import it by name).
        world_size: Number of processes.
        *args: Picklable arguments.
        device: ``cpu`` (gloo), ``cuda`` (NCCL, one GPU per rank) or ``auto``
            (``cuda`` when there are enough GPUs).
        timeout_s: Rendezvous and per-collective timeout.
        threads: ``torch.set_num_threads`` in every rank (None: torch's default).
        on_event: Receives what rank 0 emits, in this process, as it arrives;
            what it returns for an event rank 0 asks with
            :meth:`RankContext.ask` is sent back to rank 0.

    Returns:
        Each rank's return value, in rank order.

    Raises:
        NasmlcnError: A rank raised one (re-raised as it is).
        DistributedError: A rank failed otherwise, died or timed out.
    """
    import torch.distributed as dist
    import torch.multiprocessing as mp

    if world_size < 1:
        raise DistributedError(f"need at least one process, got {world_size}")
    spawn = mp.get_context("spawn")
    result_queue = spawn.Queue()
    answers = spawn.Queue()  # this process's answers to rank 0's questions
    # This process serves the rendezvous on a free port, so ranks never race for one.
    store = dist.TCPStore(
        "127.0.0.1",
        0,
        world_size,
        is_master=True,
        timeout=datetime.timedelta(seconds=timeout_s),
        wait_for_workers=False,
    )
    given = _Spawn(fn, args, store.port, world_size, device, timeout_s, threads)
    context = mp.start_processes(
        _entry,
        args=(given, result_queue, answers),
        nprocs=world_size,
        join=False,
        start_method="spawn",
    )
    collected = _Collected(result_queue, answers, on_event)
    try:
        _wait_for_ranks(context, collected, world_size)
    finally:
        for process in context.processes:
            if process.is_alive():
                process.terminate()
        for process in context.processes:
            process.join(5)
        result_queue.close()
        answers.close()
        del store  # stops the rendezvous server
    results = collected.results
    missing = [r for r in range(world_size) if r not in results]
    if missing:
        raise DistributedError(f"rank {missing[0]} ended without a result")
    return [results[r] for r in range(world_size)]


class _Collected:
    """What the ranks put on the result queue: their results and errors; rank 0's
    events go to ``on_event`` as they arrive, and its questions' answers back to it."""

    def __init__(
        self, result_queue: Any, answers: Any, on_event: Callable[[Any], Any] | None
    ) -> None:
        self.queue = result_queue
        self.answers = answers
        self.on_event = on_event
        self.results: dict[int, Any] = {}
        self.errors: dict[int, tuple[BaseException | None, str]] = {}

    def drain(self, wait: float) -> None:
        """Takes everything on the queue, waiting up to ``wait`` s for the first."""
        while True:
            try:
                kind, rank, data, _ = self.queue.get(timeout=wait)
            except queue_module.Empty:
                return
            wait = 0.0
            payload = pickle.loads(data)
            if kind in ("event", "ask"):
                answer = None
                if self.on_event is not None and rank == 0:
                    answer = self.on_event(payload)
                if kind == "ask":  # rank 0 waits for it
                    self.answers.put(_dumps(answer))
            elif kind == "result":
                self.results[rank] = payload
            else:
                self.errors[rank] = payload


def _wait_for_ranks(context: Any, collected: _Collected, world_size: int) -> None:
    """Drains the queue until every rank has ended.

    Raises:
        NasmlcnError: A rank failed (see :func:`_failure`).
    """
    while True:
        collected.drain(0.05)
        try:
            finished = context.join(timeout=0)
        except Exception:
            collected.drain(0.5)  # a failing rank's report may still be in the pipe
            raise _failure(context.processes, collected.errors) from None
        if finished:
            # a result may still be in the pipe; none is missing: no wait
            done = len(collected.results) + len(collected.errors)
            collected.drain(0.5 if done < world_size else 0.0)
            return


def _failure(
    processes: list[Any], errors: Mapping[int, tuple[BaseException | None, str]]
) -> NasmlcnError:
    """The error that best explains why a launched job failed."""
    # A rank's own failure (bad data, NaN loss) explains more than its peers'
    # "connection closed" that follows from it.
    for rank in sorted(errors):
        exc, text = errors[rank]
        if isinstance(exc, NasmlcnError) and not isinstance(exc, DistributedError):
            return exc
    for rank in sorted(errors):
        exc, text = errors[rank]
        if not isinstance(exc, DistributedError):
            logger.debug("rank %d failed:\n%s", rank, text)
            last = text.strip().splitlines()[-1] if text.strip() else repr(exc)
            return DistributedError(f"rank {rank} failed: {last}")
    for rank, process in enumerate(processes):
        code = process.exitcode
        if rank not in errors and code not in (0, None) and code != -15:
            how = f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"
            peers = "; ".join(str(errors[r][0]) for r in sorted(errors))
            return DistributedError(
                f"rank {rank} {how} before finishing" + (f" ({peers})" if peers else "")
            )
    for rank in sorted(errors):
        exc, _ = errors[rank]
        if exc is not None:
            return exc if isinstance(exc, NasmlcnError) else DistributedError(str(exc))
    return DistributedError("a rank failed without reporting why")
