"""What ``runner eval`` costs (:mod:`unlearnkit.ownmodel.suites`): each suite's seconds on a CPU estimated from the
FLOPs it needs before any work, calibrated on the rates earlier evaluations measured on this machine, and the
measurement each evaluation records for that."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from .. import config, models, paths

#: Floating-point operations per second a 2-core CPU sustains in each kind of work, with the batches the suites use:
#: about what notebook 05's sampling reaches on the default profile's model (40 questions x 128 samples x 48 tokens
#: in about 25 s per model on one core); the closing numbers of runner eval are printed beside the estimate.
CPU_FLOPS = {"score": 3e10, "generate": 2e10, "train": 1.5e10}
#: Above this many estimated seconds on a CPU a suite is refused unless asked (--allow-long).
CPU_LIMIT_S = 3600.0


def parameter_count(location: str) -> int:
    """The model's parameters, from its safetensors headers (no weights read); an adapter folder counts its base."""
    from safetensors import safe_open

    folder = paths.resolve(location)
    if not folder.is_dir():
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(location, "config.json")
        folder = Path(found).parent if isinstance(found, str) else folder
    if (folder / models.ADAPTER_CONFIG).exists():
        return parameter_count(models.adapter_base(folder))
    total = 0
    for file in sorted(folder.glob("*.safetensors")):
        try:
            with safe_open(str(file), "pt") as f:
                for key in f.keys():
                    total += int(np.prod(f.get_slice(key).get_shape()))
        except Exception as exc:  # safetensors' own error (a Hub cache's file): one line, no traceback
            raise ValueError(f"{paths.shown(file)}: not a readable safetensors file ({str(exc)[:120]})") from None
    return total


def estimate_seconds(params: config.Params, n_parameters: int, suites: Sequence[str], with_reference: bool,
                     n_forget: int) -> dict[str, float]:
    """Seconds each suite would take on a 2-core CPU, from the forward and training tokens it needs (2 N FLOPs per
    token forward, 6 N trained) at :data:`CPU_FLOPS`, for the model and, where given, the retain model. ``n_forget``:
    the forget split's questions (what relearning trains on)."""
    length = 48  # tokens of a question and its answer, about
    items = min(params.eval_max_items or n_forget, 300)
    relearning = (1 + params.rtt_held_out * len(params.rtt_lr_grid)) * params.relearn_epochs * n_forget * length
    work = {
        "tofu": {"score": 4 * items * length * 7 + 2 * items * length * 2, "generate": 4 * items * params.max_new_tokens},
        "leakage": {"generate": min(params.sample_max_items or n_forget, n_forget) * params.n_samples
                    * params.sample_max_new_tokens},
        "formats": {"score": 2 * 6 * min(params.format_max_items or n_forget, n_forget) * params.format_options
                    * length * 2},
        "attacks": {"train": relearning,
                    "generate": (3 + len(params.quant_schemes) + 6) * params.attack_items * params.max_new_tokens},
    }
    factor = {"score": 2.0, "generate": 2.0, "train": 6.0}
    return {suite: (2 if with_reference else 1) * sum(tokens * factor[kind] * n_parameters / CPU_FLOPS[kind]
                                                       for kind, tokens in work[suite].items())
            for suite in suites}


def machine() -> str:
    """This machine, as the estimate's calibration tells machines apart: its name, cores and GPU (if any)."""
    import platform

    import torch

    from .. import workers

    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    return f"{platform.node()}, {workers.machine_cores()} cores" + (f", {gpu}" if gpu else "")


@contextmanager
def measured(seconds: dict[str, Any], suite: str) -> Iterator[None]:
    """Time the block as ``suite`` in ``seconds`` (wall seconds), and in ``seconds["computed"]`` the seconds the
    block spent in the stations (training, generation, scoring, workers): near the wall time where the suite
    computed, near 0 where its results came from the cache (such a suite calibrates nothing)."""
    from .. import stations

    started, before = time.time(), sum(stations.station_seconds().values())
    yield
    seconds[suite] = time.time() - started
    seconds.setdefault("computed", {})[suite] = sum(stations.station_seconds().values()) - before


#: A suite calibrates the estimate only where at least this share of its wall time was computing (not cached).
COMPUTED_SHARE = 0.5


#: Models within this factor of each other's size calibrate each other's estimate (a small model's time is mostly
#: per-call overhead, a large one's FLOPs: one factor does not carry from one to the other).
SIZE_FACTOR = 2.0


def calibration(n_parameters: int, root: Path | None = None) -> tuple[dict[str, float], int]:
    """Each suite's factor from the FLOP estimate (:func:`unlearnkit.ownmodel.suites.request_estimate`) to the
    seconds measured here: the median, over the evaluations of the run store (``root``: every profile and seed) made
    on this machine (:func:`machine`) on a CPU, of a model within :data:`SIZE_FACTOR` of ``n_parameters``, of measured
    over estimated seconds, where the suite computed (not read from the cache: :data:`COMPUTED_SHARE`); and how many
    evaluations gave one. Files that do not parse are passed over (a received store is data)."""
    import json

    here, ratios, used = machine(), {}, 0
    root = paths.RUNS if root is None else root
    for path in sorted(root.glob("*/seed-*/eval/*/metrics.json")):
        if any(p.is_symlink() for p in (path, *path.parents) if p.is_relative_to(root) and p != root):
            continue
        try:
            meta = json.loads(path.read_text())["meta"]
            if meta.get("machine") != here or not isinstance(meta.get("estimated_seconds"), dict) \
                    or not 1 / SIZE_FACTOR <= meta["model_parameters"] / n_parameters <= SIZE_FACTOR:
                continue
            found = False
            for suite, took in meta["suite_seconds"].items():
                estimate, computed = meta["estimated_seconds"].get(suite), meta.get("computed_seconds", {}).get(suite)
                if all(isinstance(v, (int, float)) and v > 0 for v in (took, estimate, computed)) \
                        and computed >= COMPUTED_SHARE * took:
                    ratios.setdefault(suite, []).append(took / estimate)
                    found = True
            used += found
        except (OSError, ValueError, KeyError, TypeError, AttributeError, ZeroDivisionError):
            continue
    return {suite: float(np.median(values)) for suite, values in ratios.items()}, used


# --------------------------------------------------------------------------- --batch-size auto

#: Where ``--batch-size auto`` starts from: lm-evaluation-harness's default ``--max_batch_size``.
AUTO_BATCH_START = 64


def largest_batch(model, length: int, start: int = AUTO_BATCH_START) -> int:
    """The largest batch, from ``start`` taking 0.9 of it on each out-of-memory error (accelerate's
    ``find_executable_batch_size``, as lm-evaluation-harness's ``--batch-size auto``), with which one forward pass of
    ``length`` tokens per row runs on the model's device. Memory rarely runs out on a CPU: there it is ``start``."""
    import torch
    from accelerate.utils import find_executable_batch_size

    device = next(model.parameters()).device

    @find_executable_batch_size(starting_batch_size=start)
    def probe(batch_size: int) -> int:
        with torch.no_grad():
            model(input_ids=torch.zeros((batch_size, length), dtype=torch.long, device=device))
        return batch_size

    return probe()


def longest_sequence(params: config.Params, source, tokenizer, limit: int | None) -> int:
    """The tokens of the longest sequence a scoring or generating pass holds: the longest forget or retain question
    with its answer, plus the most new tokens any suite generates; at most ``limit`` (the model's positions)."""
    rows = [r for split in (params.forget_split, *params.retain_splits) for r in source.load(split)]
    longest = max((len(tokenizer(f"{r['question']} {r['answer']}")["input_ids"]) for r in rows), default=1)
    longest += max(params.max_new_tokens, params.sample_max_new_tokens)
    return min(longest, limit) if limit else longest


def auto_batch(params: config.Params, location: str, source, positions: int | None = None,
               start: int = AUTO_BATCH_START) -> config.Params:
    """``params`` with ``eval_batch_size`` found by ``--batch-size auto`` (:func:`largest_batch`) on the model at
    ``location`` (loaded where the evaluation runs: the GPU when there is one) over its longest sequence (at most
    ``positions``, the model's learned positions where it has a table of them)."""
    import torch

    model, tokenizer, _ = models.load_model(location, dtype=params.dtype, device="auto", template=None)
    length = longest_sequence(params, source, tokenizer, positions)
    found = largest_batch(model, length, start)
    del model
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    print(f"--batch-size auto: {found} (from {start}, 0.9 of it on each out-of-memory; sequences of {length} tokens)")
    return params.replace(eval_batch_size=found)
