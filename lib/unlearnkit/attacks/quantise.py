"""Fake quantisation in pure torch, as a deployed model would be quantised, and the bucket-crossing diagnostic.

Three schemes (``QUANT_SCHEMES``), each applied to every linear layer (``nn.Linear``, and transformers' ``Conv1D`` of
GPT-2 style models with its output channels as rows) but the output head (as bitsandbytes leaves ``lm_head`` in full
precision):

- ``nf4``: QLoRA's 4-bit NormalFloat (Dettmers et al. 2023): the flattened weight in blocks of 64, each block scaled
  by its absolute maximum, each value rounded to the nearest of the 16 NF4 levels (:func:`nf4_levels`);
- ``int4`` and ``int8``: symmetric round-to-nearest per output channel, the scale the row's absolute maximum over
  7 (int4) or 127 (int8).

Each returns the dequantised weight, the integer codes and, per weight, the width of the bucket it fell in (in
weight units), from which :func:`bucket_crossing` tells whether unlearning moved a weight out of the target's bucket.
"""

from __future__ import annotations

import copy
from typing import NamedTuple

import numpy as np
import torch

QUANT_SCHEMES = ("nf4", "int4", "int8")
NF4_BLOCK = 64
#: bitsandbytes' offset of its normal map: the largest level is the normal quantile at this probability, scaled to 1.
NF4_OFFSET = 0.9677083
_SYMMETRIC_MAX = {"int4": 7, "int8": 127}


def nf4_levels() -> torch.Tensor:
    """The 16 NF4 levels in [-1, 1]: 8 positive quantiles of N(0, 1) from 1/2 to ``NF4_OFFSET``, 7 negative ones, and
    an exact 0, normalised by the largest (QLoRA's construction, asymmetric so that 0 is a level)."""
    from scipy import stats

    positive = stats.norm.ppf(np.linspace(NF4_OFFSET, 0.5, 9)[:-1])
    negative = -stats.norm.ppf(np.linspace(NF4_OFFSET, 0.5, 8)[:-1])
    levels = np.sort(np.concatenate([positive, [0.0], negative]))
    return torch.tensor(levels / np.abs(levels).max(), dtype=torch.float32)


class Quantised(NamedTuple):
    weight: torch.Tensor  # dequantised, the original's shape and dtype
    codes: torch.Tensor  # integer code of each weight (NF4: level index 0-15; intN: the signed integer)
    bin_width: torch.Tensor  # width of each weight's bucket, in weight units


def _nf4(w: torch.Tensor) -> Quantised:
    flat = w.detach().float().reshape(-1)
    pad = (-flat.numel()) % NF4_BLOCK
    blocks = torch.cat([flat, flat.new_zeros(pad)]).reshape(-1, NF4_BLOCK)
    absmax = blocks.abs().amax(dim=1, keepdim=True)
    scale = torch.where(absmax > 0, absmax, torch.ones_like(absmax))
    levels = nf4_levels()
    codes = (blocks / scale).unsqueeze(-1).sub(levels).abs().argmin(dim=-1)
    edges = torch.cat([torch.tensor([-1.0]), (levels[1:] + levels[:-1]) / 2, torch.tensor([1.0])])
    widths = (edges[1:] - edges[:-1])[codes] * scale
    n = flat.numel()
    return Quantised((levels[codes] * scale).reshape(-1)[:n].reshape(w.shape).to(w.dtype),
                     codes.reshape(-1)[:n].reshape(w.shape), widths.reshape(-1)[:n].reshape(w.shape))


def _symmetric(w: torch.Tensor, qmax: int) -> Quantised:
    rows = w.detach().float().reshape(w.shape[0], -1)
    absmax = rows.abs().amax(dim=1, keepdim=True)
    scale = torch.where(absmax > 0, absmax / qmax, torch.ones_like(absmax))
    codes = torch.clamp(torch.round(rows / scale), -qmax, qmax)
    return Quantised((codes * scale).reshape(w.shape).to(w.dtype), codes.to(torch.int64).reshape(w.shape),
                     scale.expand_as(rows).reshape(w.shape).clone())


def quantise_weight(w: torch.Tensor, scheme: str) -> Quantised:
    """One weight matrix quantised by ``scheme`` (rows are output channels)."""
    if scheme == "nf4":
        return _nf4(w)
    if scheme in _SYMMETRIC_MAX:
        return _symmetric(w, _SYMMETRIC_MAX[scheme])
    raise ValueError(f"unknown quantisation scheme {scheme!r}; one of {', '.join(QUANT_SCHEMES)}")


def _is_conv1d(module) -> bool:
    """transformers' ``Conv1D`` (GPT-2 style models): a linear layer whose weight is stored (in, out)."""
    return type(module).__name__ == "Conv1D" and type(module).__module__.startswith("transformers")


def quantised_layers(model, skip: tuple[str, ...] = ("lm_head",)) -> list[tuple[str, torch.nn.Module]]:
    """The linear layers a quantiser touches: every ``nn.Linear`` and transformers ``Conv1D`` (as bitsandbytes
    converts GPT-2's) but the output head (and any whose name ends with ``skip``)."""
    return [(name, m) for name, m in model.named_modules()
            if (isinstance(m, torch.nn.Linear) or _is_conv1d(m)) and not name.endswith(skip)]


def _rows_out(layer) -> torch.Tensor:
    """A layer's weight with output channels as rows (a Conv1D's transposed)."""
    return layer.weight.t() if _is_conv1d(layer) else layer.weight


def _layers_or_raise(model, skip: tuple[str, ...]) -> list[tuple[str, torch.nn.Module]]:
    layers = quantised_layers(model, skip)
    if not layers:
        kinds = sorted({type(m).__name__ for m in model.modules() if getattr(m, "weight", None) is not None})
        raise ValueError(f"no linear layer to quantise (layers with weights: {', '.join(kinds) or 'none'}): the attack "
                         "would leave the model as it is")
    return layers


@torch.no_grad()
def fake_quantise(model, scheme: str, skip: tuple[str, ...] = ("lm_head",)):
    """A copy of ``model`` with every linear layer's weight but the output head's replaced by its quantised value
    (the model then computes in full precision on quantised weights: what a quantised deployment computes, up to
    the kernels' rounding). A model with no such layer raises, naming the layer types it has: never a silent
    no-op that would make every model "hold" under the attack."""
    quantised = copy.deepcopy(model)
    for _, layer in _layers_or_raise(quantised, skip):
        _rows_out(layer).copy_(quantise_weight(_rows_out(layer), scheme).weight)
    return quantised


class Crossing(NamedTuple):
    share_crossed: float  # share of weights whose code differs between the two models
    median_update_over_bin: float  # median |Δw| / the width of the target's bucket
    weights: int


@torch.no_grad()
def bucket_crossing(before, after, scheme: str, skip: tuple[str, ...] = ("lm_head",)) -> Crossing:
    """Did unlearning move the weights across the quantiser's buckets? Over every quantised layer of two models of one
    architecture (``before`` the target, ``after`` an unlearned model): the share of weights whose code differs (each
    model quantised with its own scales, as each would be deployed) and the median of |Δw| over the width of the
    target's bucket. Below about 1 % of a bin, quantising the unlearned model mostly lands it in the target's
    buckets: quantisation can undo the unlearning (Zhang et al., ICLR 2025)."""
    crossed, ratios, total = 0, [], 0
    layers_after = dict(quantised_layers(after, skip))
    for name, layer in _layers_or_raise(before, skip):
        a, b = _rows_out(layer), _rows_out(layers_after[name])
        qa, qb = quantise_weight(a, scheme), quantise_weight(b, scheme)
        crossed += int((qa.codes != qb.codes).sum())
        total += a.numel()
        ratios.append(((b.float() - a.float()).abs() / qa.bin_width).reshape(-1))
    if not total:
        raise ValueError("no linear layer to quantise")
    return Crossing(crossed / total, float(torch.cat(ratios).median()), total)


def weight_crossing(before: torch.Tensor, after: torch.Tensor, scheme: str) -> Crossing:
    """:func:`bucket_crossing` of two weight matrices."""
    qa, qb = quantise_weight(before, scheme), quantise_weight(after, scheme)
    ratio = ((after.float() - before.float()).abs() / qa.bin_width).reshape(-1)
    return Crossing(float((qa.codes != qb.codes).float().mean()), float(ratio.median()), before.numel())
