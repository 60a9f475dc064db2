"""Data parallel training under torchrun: one model, N processes, each drawing its share of an
epoch's samples (``models.train``; docs/training.md, "Several processes").

torchrun sets ``RANK``, ``WORLD_SIZE`` and ``LOCAL_RANK`` in each process it starts; without
them (``python -m models.train``) nothing here opens a process group, and the world is one
process of rank 0. The process group is torch.distributed's own state: this module keeps none.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
from torch.utils.data import Sampler

# Ranks other than 0 wait while rank 0 validates, tests and writes plots: long on a large
# validation split, so longer than torch's default (10 minutes for NCCL).
WAIT = timedelta(hours=2)


def start(gpu: bool) -> None:
    """Join torchrun's process group (NCCL when training on GPUs, gloo on CPU) if this process
    was started by torchrun with more than one process; else nothing."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1 or dist.is_initialized():
        return
    if gpu:
        torch.cuda.set_device(local_rank())
    dist.init_process_group("nccl" if gpu else "gloo", timeout=WAIT)


def stop() -> None:
    if dist.is_initialized():
        dist.destroy_process_group()


def rank() -> int:
    return dist.get_rank() if dist.is_initialized() else 0


def size() -> int:
    return dist.get_world_size() if dist.is_initialized() else 1


def local_rank() -> int:
    """This process's place on its machine (its GPU's index); 0 without torchrun."""
    return int(os.environ.get("LOCAL_RANK", "0"))


def wrap(net: torch.nn.Module, device: torch.device) -> torch.nn.Module:
    """``net`` for training: in DistributedDataParallel when there are several ranks (the
    gradients averaged over them at every step), else ``net`` itself. Evaluate and save ``net``,
    never the wrapper (its forward talks to the other ranks, and its keys say ``module.``)."""
    if not dist.is_initialized():
        return net
    ids = [device.index] if device.type == "cuda" else None
    return torch.nn.parallel.DistributedDataParallel(net, device_ids=ids)


def barrier() -> None:
    if dist.is_initialized():
        dist.barrier()


def share(value: Any) -> Any:
    """Rank 0's ``value`` on every rank (a stop decision: all ranks leave the loop together)."""
    if not dist.is_initialized():
        return value
    box = [value]
    dist.broadcast_object_list(box, src=0)
    return box[0]


@contextlib.contextmanager
def rank_zero_first() -> Iterator[None]:
    """Rank 0 runs the block, then the others: rank 0 decodes the frame cache alone, the
    others find it written."""
    if rank() != 0:
        barrier()
    yield
    if rank() == 0:
        barrier()


def epoch_sums(loss: float, correct: float, seen: int, seconds: float) -> tuple[float, ...]:
    """The epoch's training sums over all ranks (``seconds``: the slowest rank's)."""
    if not dist.is_initialized():
        return loss, correct, seen, seconds
    t = torch.tensor([loss, correct, float(seen)], dtype=torch.float64)
    slowest = torch.tensor([seconds], dtype=torch.float64)
    dist.all_reduce(t)
    dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
    return float(t[0]), float(t[1]), int(t[2]), float(slowest[0])


class EpochSampler(Sampler[int]):
    """This rank's share of an epoch's sample indices: a permutation seeded by (seed, epoch),
    every ``ranks``-th index from ``rank`` on. The ranks together draw every index of the epoch
    once (the last few twice when the epoch does not divide evenly, as DistributedSampler
    pads), and one process (``ranks`` 1) draws them all; an epoch's order depends on nothing
    but its number, so a resumed run draws what an uninterrupted one would."""

    def __init__(self, n: int, seed: int, rank: int = 0, ranks: int = 1) -> None:
        self.n, self.seed, self.rank, self.ranks = n, seed, rank, ranks
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return -(-self.n // self.ranks)

    def __iter__(self) -> Iterator[int]:
        g = torch.Generator().manual_seed(self.seed * 1_000_003 + self.epoch)
        order = torch.randperm(self.n, generator=g).tolist()
        order += order[: len(self) * self.ranks - self.n]  # pad to an equal share each
        return iter(order[self.rank :: self.ranks])
