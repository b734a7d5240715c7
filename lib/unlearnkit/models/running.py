"""Where a model runs: its device, the eval-mode switch every scorer uses, and the CPU thread policy of small
models."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch


def to_available_device(model):
    """The model on the GPU when there is one (and it is still on the CPU); returned for chaining."""
    if torch.cuda.is_available() and next(model.parameters()).device.type == "cpu":
        model.to("cuda")
    return model


def device_of(model) -> torch.device:
    return next(model.parameters()).device


def card_bytes(device: torch.device) -> int:
    """The total memory of the CUDA card ``device`` (never the free memory of the moment): what the GPU rules of
    training's micro-batches and the sampler's chunks size by."""
    return int(torch.cuda.get_device_properties(device).total_memory)


@contextmanager
def eval_mode(model) -> Iterator[Any]:
    """The model in eval mode for the block (no dropout), restored to its former mode afterwards, also when
    the block raises."""
    was_training = model.training
    model.eval()
    try:
        yield model
    finally:
        model.train(was_training)


def in_eval_mode(function):
    """Decorator: the function's first argument, a model, is in :func:`eval_mode` for the call."""
    import functools

    @functools.wraps(function)
    def wrapper(model, *args, **kwargs):
        with eval_mode(model):
            return function(model, *args, **kwargs)

    return wrapper


#: Models below this size run on one intra-op thread on a CPU (see :func:`cpu_threads`).
ONE_THREAD_BELOW_PARAMETERS = 100_000_000


def threads_for(module=None, n_parameters: int | None = None) -> int | None:
    """The CPU thread policy: one torch thread for a small model on a CPU, else None (leave torch's choice).
    ``module`` is the loaded model (a torch module); without it, ``n_parameters`` gives its size.

    A tiny model's matrices are too small for a second thread to pay, and when the cores are shared with
    another job the threads spin-wait for each other: on the default profile one format evaluation took
    ~185 s with two threads and ~40 s with one while another notebook ran."""
    if module is not None:
        if device_of(module).type != "cpu":
            return None
        n_parameters = sum(p.numel() for p in module.parameters())
    return 1 if n_parameters is not None and n_parameters < ONE_THREAD_BELOW_PARAMETERS else None


@contextmanager
def cpu_threads(module=None, n_parameters: int | None = None, threads: int | None = None) -> Iterator[None]:
    """Torch's intra-op threads set by :func:`threads_for` (or to ``threads``) for the block, then restored."""
    wanted = threads if threads is not None else threads_for(module, n_parameters)
    before = torch.get_num_threads()
    if wanted:
        torch.set_num_threads(wanted)
    try:
        yield
    finally:
        torch.set_num_threads(before)
