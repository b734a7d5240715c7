"""Parameterisation strength (PS) of Wang et al., "Unlearning with Control" (docs/metrics.md §5).

For a string s = [x, y] (x the prompt, y the answer) let k be the length of the shortest answer prefix
y^{<k} such that greedy decoding from x + y^{<k} reproduces the rest y^{>=k}. Then PS = 1 - k/|y|: 1 when
the question alone brings back the whole answer, near 0 when almost all of it must be given, and 0 when
no prefix works.

Choices made here, all in tokens of the model's own tokenizer:

- x is ``models.encode_prompt`` (BOS + templated question) and y is the answer tokenised on its own
  *without* EOS, exactly the tokens ``encode_qa`` puts after the prompt in training, minus its EOS. The
  EOS is left out because PS asks whether the *content* comes back; whether the model stops right after
  it is a different question (and counting it would make every PS depend on one stop token).
- Only k = 0 .. |y|-1 are tried. k = |y| would leave an empty rest that any model "reproduces", so it
  counts as failure: PS is 0 then, never 1 - |y|/|y| by a vacuous success. An empty answer has PS 0.
- ``exact``: the first |y|-k generated tokens equal y^{>=k} token for token (a different tokenisation of
  the same text fails; that is what "exact" means at the token level). Generation ends at EOS, so
  stopping early fails.
- ``similar``: ROUGE-L recall of the generation (|y|-k tokens, cut at EOS, decoded) against the true
  suffix y^{>=k} (decoded) is at least ``rouge_threshold``. The target is the true suffix; the reference
  code passed the two in the other order (docs/metrics.md). A generation whose text equals the suffix's also
  succeeds: ROUGE scores a suffix without any word (say a final ".") as 0 even against itself, and
  an exact reproduction must never count as dissimilar. So every exact success is a similar success,
  and PS-similar >= PS-exact item by item under either search (for binary search because it is
  monotone in its oracle: where two oracles first disagree at a probe m, the one that succeeds ends at
  k <= m and the other at k > m). Only batch composition, which differs between the two runs, could
  flip a near-tie argmax and break this; it has not been seen.

Search over k: ``linear`` tries k = 0, 1, 2, ... and is exact. ``binary`` assumes success is monotone in
k (a longer prefix only makes the rest easier) and needs about log2|y| probes per item; it is the
default, as in the paper. Both are batched across items: each round collects one probe (item, k) per
item still searching and decodes all of them together, left-padded, in chunks of ``batch_size``.

PS profiles by teacher forcing (:func:`ps_profile`, :class:`PSEvaluator`). A *PS profile* holds the PS means of a
model on the held-out retain set and the forget set, the layout of metrics.json. Its PS-exact is computed by
teacher forcing, one forward pass per item, instead of a search of greedy decodings: greedy decoding from
x + y^{<k} reproduces y^{≥k} exactly if and only if the argmax of the next-token distribution equals y_j at
every position j ≥ k, given the true prefix x + y^{<j} (decoding never leaves the true path while it matches).
So the shortest successful k is one past the last position whose argmax is wrong, the same k that the linear
scan finds (and the binary search, since exact success is then monotone in k), up to float near-ties between
the two kinds of forward pass. PS-similar still needs generation; its search is confined to k < k_exact,
because every exact success is a similar success. ``teacher_forced=False`` runs :func:`evaluate_ps` itself
(the reference).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import torch

from ..generation import greedy_continuations, left_pad
from ..models import PromptTemplate, encode_prompt, in_eval_mode, pad_token_id
from ..stations import timed
from .tofu import answer_nll, rouge_l

CRITERIA = ("exact", "similar")
STRATEGIES = ("binary", "linear")

#: ``succeeds_batch(probes)`` answers, for each probe (item index, prefix length k), whether decoding
#: from the question plus the first k answer tokens reproduces the rest of that item's answer.
SuccessOracle = Callable[[list[tuple[int, int]]], list[bool]]


# --------------------------------------------------------------------------- the search, model-free


def search_shortest_prefix(lengths: Sequence[int], succeeds_batch: SuccessOracle, strategy: str = "binary",
                           on_settled: Callable[[int], None] | None = None) -> list[int | None]:
    """The shortest successful prefix length k in 0 .. lengths[i]-1 of each item, or None if none is found.

    Every call of ``succeeds_batch`` holds at most one probe per item: one round of the search for all
    items still searching. ``linear`` probes k = 0, 1, ... and drops an item at its first success, so it
    finds the true shortest k whatever the oracle. ``binary`` keeps per item an interval [lo, hi] with
    every k < lo failing and hi a known success (or lengths[i], meaning none found yet), and probes the
    midpoint; its answer is the true shortest k when success is monotone in k, and some success
    otherwise. ``on_settled(n)`` is told how many items finished in each round (for a progress bar).
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown search strategy {strategy!r}; use {' or '.join(STRATEGIES)}")
    lengths = [int(n) for n in lengths]
    if any(n < 0 for n in lengths):
        raise ValueError("answer lengths must be >= 0")
    result: list[int | None] = [None] * len(lengths)
    # lo/hi per item; an empty answer has nothing to probe and stays None.
    lo = [0] * len(lengths)
    hi = list(lengths)
    searching = [i for i, n in enumerate(lengths) if n > 0]
    if on_settled is not None and len(searching) < len(lengths):
        on_settled(len(lengths) - len(searching))

    while searching:
        if strategy == "linear":
            probes = [(i, lo[i]) for i in searching]
        else:
            probes = [(i, (lo[i] + hi[i]) // 2) for i in searching]
        outcomes = list(succeeds_batch(probes))
        if len(outcomes) != len(probes):
            raise ValueError(f"the success oracle answered {len(outcomes)} of {len(probes)} probes")
        still: list[int] = []
        for (i, k), ok in zip(probes, outcomes):
            if strategy == "linear":
                if ok:
                    result[i] = k
                    continue
                lo[i] = k + 1
                if lo[i] < lengths[i]:
                    still.append(i)
            else:
                if ok:
                    hi[i] = k
                else:
                    lo[i] = k + 1
                if lo[i] < hi[i]:
                    still.append(i)
                elif hi[i] < lengths[i]:  # converged on a success; hi == length means none ever succeeded
                    result[i] = hi[i]
        if on_settled is not None and len(still) < len(searching):
            on_settled(len(searching) - len(still))
        searching = still
    return result


def ps_from_prefix_lengths(prefix_lengths: Sequence[int | None], lengths: Sequence[int]) -> np.ndarray:
    """PS = 1 - k/|y| per item; 0 where no prefix works (k None) or the answer is empty."""
    return np.array([0.0 if k is None or n <= 0 else 1.0 - k / n for k, n in zip(prefix_lengths, lengths)],
                    dtype=float)


# --------------------------------------------------------------------------- the model as oracle


def answer_token_ids(tokenizer, answer: str) -> list[int]:
    """The answer's tokens as ``encode_qa`` places them after the prompt, without the EOS."""
    return tokenizer(answer, add_special_tokens=False)["input_ids"]


def prefix_success_oracle(model, tokenizer, template: PromptTemplate, questions: Sequence[str],
                          answers: Sequence[str], criterion: str = "exact", rouge_threshold: float = 0.5,
                          batch_size: int = 32) -> tuple[SuccessOracle, list[int]]:
    """The model as a success oracle for :func:`search_shortest_prefix`, and the answer lengths |y|.

    Calling the oracle on probes [(item, k), ...] greedily decodes every x + y^{<k} in batches and
    judges the generations with ``criterion``; it can also be called directly to see an item's whole
    success profile over k.
    """
    if criterion not in CRITERIA:
        raise ValueError(f"unknown PS criterion {criterion!r}; use {' or '.join(CRITERIA)}")
    if len(questions) != len(answers):
        raise ValueError(f"{len(questions)} questions but {len(answers)} answers")
    prompts = [encode_prompt(tokenizer, template, q) for q in questions]
    answer_ids = [answer_token_ids(tokenizer, a) for a in answers]

    def succeeds_batch(probes: list[tuple[int, int]]) -> list[bool]:
        # Decode probes needing similar numbers of new tokens together, so no chunk generates far
        # more tokens than its rows need (generation takes one max_new_tokens per call).
        order = sorted(range(len(probes)), key=lambda j: (len(answer_ids[probes[j][0]]) - probes[j][1],
                                                          len(prompts[probes[j][0]]) + probes[j][1]))
        outcomes = [False] * len(probes)
        for start in range(0, len(order), batch_size):
            chunk = [probes[j] for j in order[start:start + batch_size]]
            if any(not 0 <= k < len(answer_ids[i]) for i, k in chunk):
                raise ValueError("a probe's prefix length k must be in 0 .. |y|-1")
            inputs = [prompts[i] + answer_ids[i][:k] for i, k in chunk]
            suffixes = [answer_ids[i][k:] for i, k in chunk]
            generated = greedy_continuations(model, tokenizer, inputs, max_new_tokens=max(map(len, suffixes)),
                                             batch_size=len(chunk))
            # the chunk may have generated more tokens than this row needs: keep only |y| - k of them
            generated = [g[:len(s)] for g, s in zip(generated, suffixes)]
            if criterion == "exact":
                ok = [g == s for g, s in zip(generated, suffixes)]
            else:
                targets = [tokenizer.decode(s, skip_special_tokens=True).strip() for s in suffixes]
                predictions = [tokenizer.decode(g, skip_special_tokens=True).strip() for g in generated]
                recall = rouge_l(targets, predictions, "recall")
                ok = [p == t or r >= rouge_threshold for t, p, r in zip(targets, predictions, recall)]
            for j, success in zip(order[start:start + batch_size], ok):
                outcomes[j] = bool(success)
        return outcomes

    return succeeds_batch, [len(a) for a in answer_ids]


def shortest_prefixes(model, tokenizer, template: PromptTemplate, questions: Sequence[str], answers: Sequence[str],
                      criterion: str = "exact", search: str = "binary", rouge_threshold: float = 0.5,
                      batch_size: int = 32, progress: bool = True) -> tuple[list[int | None], list[int]]:
    """Per item: the shortest answer prefix length k that lets the model reproduce the rest (None if
    none does), and the answer length |y| in tokens."""
    from tqdm.auto import tqdm

    from ..stations import show_progress

    oracle, lengths = prefix_success_oracle(model, tokenizer, template, questions, answers, criterion,
                                            rouge_threshold, batch_size)
    with tqdm(total=len(lengths), desc=f"PS-{criterion} ({search})", disable=not show_progress(progress)) as bar:
        ks = search_shortest_prefix(lengths, oracle, search, on_settled=bar.update)
    return ks, lengths


def ps_scores(model, tokenizer, template: PromptTemplate, questions: Sequence[str], answers: Sequence[str],
              criterion: str = "exact", search: str = "binary", rouge_threshold: float = 0.5,
              batch_size: int = 32, progress: bool = True) -> np.ndarray:
    """Per-item PS = 1 - k/|y| (0 when no prefix works) under the ``exact`` or ``similar`` criterion."""
    ks, lengths = shortest_prefixes(model, tokenizer, template, questions, answers, criterion, search,
                                    rouge_threshold, batch_size, progress)
    return ps_from_prefix_lengths(ks, lengths)


@timed("scoring")
def evaluate_ps(model, tokenizer, template: PromptTemplate, rows: Sequence[Mapping[str, Any]],
                search: str = "binary", batch_size: int = 32, max_items: int | None = None,
                rouge_threshold: float = 0.5, progress: bool = True) -> tuple[dict[str, float], dict[str, np.ndarray]]:
    """PS-exact, PS-perturb and PS-similar of a split (means), and the per-item values.

    PS-perturb uses each row's ``paraphrased_question`` with the original answer. It is computed on the
    rows that have one and left out when none does; its per-item array holds NaN for rows without one,
    and ``n_items_perturb`` says how many it averages.
    """
    rows = list(rows)  # a datasets.Dataset sliced would give columns, not rows
    if max_items:
        rows = rows[:max_items]
    if not rows:
        raise ValueError("no rows to evaluate")
    questions = [r["question"] for r in rows]
    answers = [r["answer"] for r in rows]
    common = dict(search=search, rouge_threshold=rouge_threshold, batch_size=batch_size, progress=progress)

    per_item: dict[str, np.ndarray] = {
        "ps_exact": ps_scores(model, tokenizer, template, questions, answers, criterion="exact", **common),
    }
    with_paraphrase = [i for i, r in enumerate(rows) if r.get("paraphrased_question")]
    if with_paraphrase:
        perturb = np.full(len(rows), np.nan)
        perturb[with_paraphrase] = ps_scores(model, tokenizer, template,
                                             [rows[i]["paraphrased_question"] for i in with_paraphrase],
                                             [answers[i] for i in with_paraphrase], criterion="exact", **common)
        per_item["ps_perturb"] = perturb
    per_item["ps_similar"] = ps_scores(model, tokenizer, template, questions, answers, criterion="similar", **common)

    metrics: dict[str, float] = {"ps_exact": float(per_item["ps_exact"].mean())}
    if with_paraphrase:
        metrics["ps_perturb"] = float(np.nanmean(per_item["ps_perturb"]))
        metrics["n_items_perturb"] = len(with_paraphrase)
    metrics["ps_similar"] = float(per_item["ps_similar"].mean())
    metrics["n_items"] = len(rows)
    return metrics, per_item


# --------------------------------------------------------------------------- PS profiles, teacher-forced

#: A PS profile: ``{"heldout_retain": {"ps_exact": ..., ...}, "forget": {...}}``, the layout of metrics.json.
#: Each set may also hold its per-item values under :data:`ITEMS` (``{"items": {"ps_exact": (1.0, 0.8, ...)}}``), for
#: intervals over items; :func:`means` drops them before a profile is written or tabled.
PSProfile = dict[str, dict[str, Any]]
ITEMS = "items"

HELDOUT, FORGET = "heldout_retain", "forget"
PS_METRICS = ("ps_exact", "ps_perturb", "ps_similar")
#: Every PS metric on both sets.
ALL_METRICS: dict[str, tuple[str, ...]] = {HELDOUT: PS_METRICS, FORGET: PS_METRICS}


@torch.no_grad()
@in_eval_mode
def exact_prefix_lengths(model, prompts_ids: Sequence[Sequence[int]], answers_ids: Sequence[Sequence[int]],
                         pad_token_id: int, batch_size: int = 32) -> list[int | None]:
    """Per item, the shortest k (0 .. |y|-1) such that greedy decoding from prompt + y^{<k} reproduces
    y^{≥k} exactly, by teacher forcing (see the module docstring); None when no k works or y is empty."""
    if len(prompts_ids) != len(answers_ids):
        raise ValueError(f"{len(prompts_ids)} prompts but {len(answers_ids)} answers")
    device = next(model.parameters()).device
    result: list[int | None] = [None] * len(prompts_ids)
    order = sorted(range(len(prompts_ids)), key=lambda i: len(prompts_ids[i]) + len(answers_ids[i]))
    order = [i for i in order if len(answers_ids[i]) > 0]
    for start in range(0, len(order), batch_size):
        idx = order[start:start + batch_size]
        # Left padding, with positions as in an unpadded pass: every row ends with its answer, so the output head runs
        # on the last positions alone (those predicting the longest answer of the batch), not on the prompts.
        ids, mask = left_pad([list(prompts_ids[i]) + list(answers_ids[i]) for i in idx], pad_token_id)
        keep = max(len(answers_ids[i]) for i in idx) + 1
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        predicted = model(input_ids=ids.to(device), attention_mask=mask.to(device), position_ids=positions.to(device),
                          logits_to_keep=min(keep, ids.shape[1])).logits.argmax(-1).cpu()
        for r, i in enumerate(idx):
            answer = list(answers_ids[i])
            # the prediction at position p is the token p + 1: answer token j (of n) comes from the kept column
            # keep - 1 - n + j (the last column predicts what would follow the answer)
            first = predicted.shape[1] - 1 - len(answer)
            hits = (predicted[r, first:first + len(answer)] == torch.tensor(answer)).tolist()
            misses = [j for j, ok in enumerate(hits) if not ok]
            k = misses[-1] + 1 if misses else 0
            result[i] = k if k < len(answer) else None  # k = |y| leaves nothing to reproduce: a failure
    return result


@timed("scoring")
def split_ps(model, tokenizer, template: PromptTemplate, rows: Sequence[Mapping[str, Any]], metrics: Iterable[str],
             batch_size: int = 32, search: str = "binary", rouge_threshold: float = 0.5) -> dict[str, float]:
    """The PS means in ``metrics`` of one set of rows, PS-exact and PS-perturb by teacher forcing, with
    ``n_items`` (and ``n_items_perturb``: PS-perturb asks the ``paraphrased_question`` of the rows that have one)."""
    metrics = set(metrics)
    unknown = metrics - set(PS_METRICS)
    if unknown:
        raise ValueError(f"unknown PS metrics {sorted(unknown)}; use {', '.join(PS_METRICS)}")
    questions = [r["question"] for r in rows]
    answers = [answer_token_ids(tokenizer, r["answer"]) for r in rows]
    lengths = [len(a) for a in answers]
    pad = pad_token_id(tokenizer)
    out: dict[str, Any] = {}
    items: dict[str, tuple[float, ...]] = {}
    k_exact = None
    if metrics & {"ps_exact", "ps_similar"}:
        prompts = [encode_prompt(tokenizer, template, q) for q in questions]
        k_exact = exact_prefix_lengths(model, prompts, answers, pad, batch_size)
    if "ps_exact" in metrics:
        items["ps_exact"] = tuple(ps_from_prefix_lengths(k_exact, lengths).tolist())
    if "ps_perturb" in metrics:
        with_paraphrase = [i for i, r in enumerate(rows) if r.get("paraphrased_question")]
        if with_paraphrase:
            prompts = [encode_prompt(tokenizer, template, rows[i]["paraphrased_question"]) for i in with_paraphrase]
            ks = exact_prefix_lengths(model, prompts, [answers[i] for i in with_paraphrase], pad, batch_size)
            items["ps_perturb"] = tuple(ps_from_prefix_lengths(ks, [lengths[i] for i in with_paraphrase]).tolist())
            out["n_items_perturb"] = len(with_paraphrase)
    if "ps_similar" in metrics:
        oracle, oracle_lengths = prefix_success_oracle(model, tokenizer, template, questions,
                                                       [r["answer"] for r in rows], "similar", rouge_threshold,
                                                       batch_size)
        assert oracle_lengths == lengths  # the same answer tokens on both paths
        # search only below the exact solution, a known similar success; where none, the whole answer
        bounds = [n if k is None else k for k, n in zip(k_exact, lengths)]
        found = search_shortest_prefix(bounds, oracle, search)
        ks = [f if f is not None else k for f, k in zip(found, k_exact)]
        items["ps_similar"] = tuple(ps_from_prefix_lengths(ks, lengths).tolist())
    out.update({metric: float(np.mean(values)) for metric, values in items.items()})
    out["n_items"] = len(rows)
    out[ITEMS] = items
    return out


def _first(rows: Sequence[Mapping[str, Any]], max_items: int | None) -> list[Mapping[str, Any]]:
    return list(rows)[:max_items] if max_items else list(rows)


def ps_profile(model, tokenizer, template: PromptTemplate, forget_rows: Sequence[Mapping[str, Any]],
               heldout_rows: Sequence[Mapping[str, Any]], max_items: int | None = None, batch_size: int = 32,
               metrics: Mapping[str, Sequence[str]] = ALL_METRICS, search: str = "binary",
               rouge_threshold: float = 0.5, teacher_forced: bool = True) -> PSProfile:
    """The PS metrics that ``metrics`` asks per set (held-out retain, forget), over the first ``max_items``
    rows of each (:func:`split_ps`). ``teacher_forced=False`` calls :func:`evaluate_ps` (all three metrics,
    generation only) and keeps the requested ones."""
    splits = {HELDOUT: list(heldout_rows), FORGET: list(forget_rows)}
    unknown = set(metrics) - set(splits)
    if unknown:
        raise ValueError(f"unknown splits {sorted(unknown)} in a PS profile; use {HELDOUT!r} and {FORGET!r}")
    profile: PSProfile = {}
    for split, wanted in metrics.items():
        rows = _first(splits[split], max_items)
        if not rows:
            raise ValueError(f"no {split} rows to evaluate")
        if teacher_forced:
            profile[split] = split_ps(model, tokenizer, template, rows, wanted, batch_size, search, rouge_threshold)
        else:
            means, per_item = evaluate_ps(model, tokenizer, template, rows, search=search, batch_size=batch_size,
                                          rouge_threshold=rouge_threshold, progress=False)
            profile[split] = {k: v for k, v in means.items() if k in wanted or k.startswith("n_items")}
            profile[split][ITEMS] = {k: tuple(v[~np.isnan(v)].tolist()) for k, v in per_item.items() if k in wanted}
    return profile


@timed("scoring")
def risks(model, tokenizer, template: PromptTemplate, forget_rows: Sequence[Mapping[str, Any]],
          heldout_rows: Sequence[Mapping[str, Any]], max_items: int | None = None, batch_size: int = 32) -> PSProfile:
    """Unlearning risk (mean answer NLL on forget) and retain risk (on held-out retain), Wang et al.'s Fig. 1."""
    out: PSProfile = {}
    for split, rows in ((HELDOUT, heldout_rows), (FORGET, forget_rows)):
        rows = _first(rows, max_items)
        # every answer token and EOS, whatever the profile's answer_tokens (Wang et al.'s risks)
        nll = answer_nll(model, tokenizer, template, [r["question"] for r in rows], [r["answer"] for r in rows],
                         batch_size, answer_tokens="separate")
        out[split] = {"nll": float(nll.mean())}
    return out


def merge_profiles(*profiles: Mapping[str, Mapping[str, float]]) -> PSProfile:
    """One profile with every split's metrics of all ``profiles`` (later ones win on a clash)."""
    out: PSProfile = {}
    for p in profiles:
        for split, metrics in p.items():
            merged = out.setdefault(split, {})
            items = {**merged.get(ITEMS, {}), **metrics.get(ITEMS, {})}
            merged.update(metrics)
            if items:
                merged[ITEMS] = items
    return out


def means(profile: Mapping[str, Mapping[str, Any]]) -> PSProfile:
    """``profile`` without its per-item values: what metrics.json keeps."""
    return {split: {k: v for k, v in metrics.items() if k != ITEMS} for split, metrics in profile.items()}


def item_values(profile: Mapping[str, Mapping[str, Any]], split: str, metric: str) -> np.ndarray | None:
    """The per-item values behind one mean of ``profile`` (None when the profile holds the mean alone)."""
    values = profile.get(split, {}).get(ITEMS, {}).get(metric)
    return None if values is None else np.asarray(values, dtype=float)


def flatten(profile: Mapping[str, Mapping[str, float]]) -> dict[str, float]:
    """``{"heldout_retain_ps_exact": ..., "forget_ps_similar": ...}``: one table row (item counts left out)."""
    return {f"{split}_{metric}": value for split, metrics in profile.items() for metric, value in metrics.items()
            if not metric.startswith("n_items") and metric != ITEMS}


def _present(value: float | None) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


@dataclass
class PSEvaluator:
    """``evaluator(model) -> PSProfile`` with the tokenizer, template, rows and sizes fixed once: the first
    ``max_items`` rows of each set, the ``metrics`` asked by default (:func:`ps_profile`). With ``with_risks``
    the profile also holds the NLL of each split (:func:`risks`)."""

    tokenizer: Any
    template: PromptTemplate
    forget_rows: Sequence[Mapping[str, Any]]
    heldout_rows: Sequence[Mapping[str, Any]]
    max_items: int | None = None
    batch_size: int = 32
    metrics: Mapping[str, Sequence[str]] = field(default_factory=lambda: dict(ALL_METRICS))
    search: str = "binary"
    with_risks: bool = False

    def __post_init__(self):
        self.forget_rows = _first(self.forget_rows, self.max_items)
        self.heldout_rows = _first(self.heldout_rows, self.max_items)
        self.batch_size = int(self.batch_size)
        self.metrics = dict(self.metrics)

    def __call__(self, model, metrics: Mapping[str, Sequence[str]] | None = None) -> PSProfile:
        profile = self.ps(model, self.metrics if metrics is None else metrics)
        if self.with_risks:
            profile = merge_profiles(profile, self.risks(model))
        return profile

    def ps(self, model, metrics: Mapping[str, Sequence[str]]) -> PSProfile:
        """The PS metrics of ``metrics`` alone (no risks)."""
        return ps_profile(model, self.tokenizer, self.template, self.forget_rows, self.heldout_rows,
                          batch_size=self.batch_size, metrics=metrics, search=self.search)

    def complete(self, model, profile: PSProfile, metrics: Mapping[str, Sequence[str]] = ALL_METRICS) -> PSProfile:
        """``profile`` of ``model`` with the metrics of ``metrics`` it lacks (or holds as NaN) computed."""
        missing = {split: tuple(m for m in wanted if not _present(profile.get(split, {}).get(m)))
                   for split, wanted in metrics.items()}
        missing = {split: wanted for split, wanted in missing.items() if wanted}
        return merge_profiles(profile, self.ps(model, missing)) if missing else profile

    def risks(self, model) -> PSProfile:
        return risks(model, self.tokenizer, self.template, self.forget_rows, self.heldout_rows,
                     batch_size=self.batch_size)

    def plus_risks(self) -> PSEvaluator:
        """The same evaluator adding the risks of each split to every profile."""
        return replace(self, with_risks=True)
