"""Sampling-based evaluation of unlearning (Scholten et al., "A Probabilistic Perspective on Unlearning and
Alignment"; docs/metrics.md section 3): the glue between a model, its sampled answers, the judges that score
them and the bounds of :mod:`unlearnkit.bounds`. Notebook 05 calls this module and only shows results.

The flow for one model and a list of questions:

1. :func:`sample_and_score` decodes every question greedily once (that pass also gives the certainty c(x)
   of adaptive temperature scaling, measured on the greedy continuation) and draws n answers by
   multinomial sampling; it scores the greedy answer and every sample with ROUGE-L recall against the
   ground truth and with the binary leak judge (does the text contain the answer's key entity?), and
   measures the samples' diversity (self-BLEU). Result: a :class:`SampledScores`.
2. :func:`bound_table` turns the (questions, n) scores into per-question statistics and bounds: ED mean
   and sd, the expectation bounds, the standard-deviation bound, the binary leakage bound and, beside
   it, the matching Clopper-Pearson lower bound on the leak probability.
3. :func:`greedy_vs_sampling` flags the questions that greedy decoding calls unlearned although sampling
   leaks; :func:`model_summary` condenses everything into the numbers of metrics.json.

Every bound holds with probability >= 1 - alpha over the draw of the n samples of ONE question. Averages
of per-question bounds over questions are reported as summaries, not as joint guarantees.

Adaptive temperature needs no second sampling run: a question decoded greedily gets the greedy answer n
times, and a sampled question gets exactly the samples :func:`sample_and_score` drew for it (same seed
and random stream, as :func:`unlearnkit.generation.adaptive_sample_answers` does), so
:func:`adaptive_view` rebuilds the adaptive result from the plain one.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from . import bounds, config, paths, runs

NOTEBOOK = "05_probabilistic_bounds"

__all__ = [
    "SampledScores",
    "sample_and_score",
    "leak_keys",
    "adaptive_view",
    "binary_leak_lower_bound",
    "bound_table",
    "greedy_vs_sampling",
    "understatement_summary",
    "compare_with_reference",
    "model_summary",
    "bounds_vs_n",
    "general_leak_curves",
    "table1",
    "understatement_verdict",
    "sampling_settings",
    "forget_rows",
    "evaluated_models",
    "reference_model",
    "score_saved_model",
    "hp_rows",
    "load_hp_model",
    "hp_table",
    "hp_leakage",
    "run_hp_qa",
    "plot_greedy_vs_samples",
    "plot_binary_bounds",
    "plot_general_leak_curves",
    "plot_bounds_vs_n",
    "plot_adaptive",
    "plot_hp",
]


# --------------------------------------------------------------------------- sampled answers and their scores


@dataclass
class SampledScores:
    """One model's greedy and sampled answers to a list of questions, scored.

    Arrays are (questions,) or (questions, n). ``rouge`` and ``greedy_rouge`` are None when the rows
    carry no ground-truth answer (the Harry Potter Q&A has keywords only).
    """

    questions: list[str]
    keys: list[Any]  # per question: the key entity (str) or a list of keywords, any of which leaks
    greedy_answers: list[str]
    greedy_leak: np.ndarray  # (Q,) 0/1: the greedy answer contains the key
    certainty: np.ndarray  # (Q,) c(x): mean top-token probability along the greedy continuation
    leak: np.ndarray  # (Q, n) 0/1 per sample
    self_bleu: np.ndarray  # (Q,) diversity of the n samples (1 = all identical)
    examples: list[list[str]]  # the first few samples per question, for display
    targets: list[str] | None = None
    greedy_rouge: np.ndarray | None = None  # (Q,)
    rouge: np.ndarray | None = None  # (Q, n)
    settings: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0  # wall time of decoding and scoring

    @property
    def n(self) -> int:
        return int(self.leak.shape[1])

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        for key, value in out.items():
            if isinstance(value, np.ndarray):
                out[key] = value.tolist()
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SampledScores:
        data = dict(data)
        for key, dtype in (("greedy_leak", np.int8), ("leak", np.int8), ("certainty", float),
                           ("self_bleu", float), ("greedy_rouge", float), ("rouge", float)):
            if data.get(key) is not None:
                data[key] = np.asarray(data[key], dtype=dtype)
        return cls(**data)


def leak_keys(rows: Sequence[Mapping[str, Any]]) -> list[Any]:
    """What the leak judge looks for in each row's answers: the HP Q&A ``keywords`` (any of them leaks),
    else the key entity of the answer (the synthetic corpus' recorded ``value`` when present, else the
    heuristic of :func:`unlearnkit.metrics.judges.key_entity`, which drops what the question already says)."""
    from .metrics.judges import key_entity

    keys: list[Any] = []
    for row in rows:
        if row.get("keywords"):
            keys.append(list(row["keywords"]))
        else:
            keys.append(key_entity(row.get("answer", ""), row.get("value"), row.get("question")))
    return keys


def _rouge_matrix(targets: Sequence[str], samples: Sequence[Sequence[str]], measure: str) -> np.ndarray:
    """ROUGE-L of every sample against its question's target, (Q, n), scoring each distinct
    (target, sample) pair once: a confident model repeats the same answer in most of its samples, and
    rouge_score costs far more than the lookup."""
    from .metrics.tofu import rouge_l

    pair_index: dict[tuple[str, str], int] = {}
    index = np.empty((len(samples), len(samples[0]) if samples else 0), dtype=np.int64)
    for q, (target, per_question) in enumerate(zip(targets, samples)):
        for j, sample in enumerate(per_question):
            index[q, j] = pair_index.setdefault((target, sample), len(pair_index))
    if not pair_index:
        return np.zeros(index.shape)
    unique = list(pair_index)
    values = rouge_l([t for t, _ in unique], [s for _, s in unique], measure)
    return np.asarray(values, dtype=float)[index]


def _prompt_ids(tokenizer, template, rows: Sequence[Mapping[str, Any]], use_prefix: bool) -> list[list[int]]:
    """Token ids of each prompt; with ``use_prefix`` the row's ``affirmative_response`` follows as the
    beginning of the answer. Its trailing space is dropped: a byte-level or sentencepiece tokenizer puts
    the space in front of the next word ("▁Hedwig"), so a dangling space token would push the model
    off its usual tokenisation of the very word we look for."""
    from .models import encode_prompt

    prompts = [encode_prompt(tokenizer, template, row["question"]) for row in rows]
    if use_prefix:
        prompts = [p + tokenizer(str(row.get("affirmative_response", "")).rstrip(),
                                 add_special_tokens=False)["input_ids"] for p, row in zip(prompts, rows)]
    return prompts


def sample_and_score(model, tokenizer, template, rows: Sequence[Mapping[str, Any]], n: int,
                     temperature: float = 1.0, top_p: float | None = None, top_k: int | None = None,
                     max_new_tokens: int = 64, seed: int = 0, chunk_size: int = 128, batch_size: int = 32,
                     use_prefix: bool = False, rouge_measure: str = "recall", with_self_bleu: bool = True,
                     keep_examples: int = 5, progress: bool = True) -> SampledScores:
    """Greedy answer, c(x) and n sampled answers per row, scored by ROUGE-L and the leak judge.

    rows: dicts with ``question``; ``answer`` (the ground truth, scored by ROUGE-L ``rouge_measure``;
        without it no ROUGE is computed); what the leak judge looks for (see :func:`leak_keys`);
        ``affirmative_response`` when ``use_prefix``. Only the generated continuation is judged, never a prefix.
    n, temperature, top_p, top_k, max_new_tokens, seed, chunk_size: as in
        :func:`unlearnkit.generation.sample_answers`; sample j of question i depends on (seed, i, j) only.
        temperature 0 repeats the greedy answer n times.
    Works for any Hugging Face causal LM (the model's device is used).
    """
    from .generation import certainty, greedy_with_confidences, sample_continuations
    from .metrics.judges import leak_judge, self_bleu_per_prompt

    if not rows:
        raise ValueError("no rows to sample: the question list is empty")
    started = time.time()
    prompts = _prompt_ids(tokenizer, template, rows, use_prefix)
    greedy_ids, greedy_confidences = greedy_with_confidences(model, tokenizer, prompts, max_new_tokens, batch_size)
    if temperature == 0:
        sampled_ids = [[ids] * n for ids in greedy_ids]
    else:
        sampled_ids, _ = sample_continuations(model, tokenizer, prompts, n, temperature, top_p, top_k,
                                              max_new_tokens, seed, chunk_size, progress=progress)
    greedy = [t.strip() for t in tokenizer.batch_decode(greedy_ids, skip_special_tokens=True)]
    flat = tokenizer.batch_decode([ids for per_q in sampled_ids for ids in per_q], skip_special_tokens=True)
    samples = [[t.strip() for t in flat[q * n:(q + 1) * n]] for q in range(len(rows))]

    keys = leak_keys(rows)
    has_answers = all(row.get("answer") for row in rows)
    targets = [row["answer"] for row in rows] if has_answers else None
    result = SampledScores(
        questions=[row["question"] for row in rows],
        keys=keys,
        greedy_answers=greedy,
        greedy_leak=leak_judge([[g] for g in greedy], keys)[:, 0],
        certainty=np.array([certainty(c) for c in greedy_confidences]),
        leak=leak_judge(samples, keys),
        self_bleu=self_bleu_per_prompt(samples) if with_self_bleu else np.full(len(rows), np.nan),
        examples=[per_q[:keep_examples] for per_q in samples],
        targets=targets,
        greedy_rouge=_rouge_matrix(targets, [[g] for g in greedy], rouge_measure)[:, 0] if targets else None,
        rouge=_rouge_matrix(targets, samples, rouge_measure) if targets else None,
        settings={"n": n, "temperature": temperature, "top_p": top_p, "top_k": top_k,
                  "max_new_tokens": max_new_tokens, "seed": seed, "use_prefix": use_prefix,
                  "rouge_measure": rouge_measure},
    )
    result.seconds = time.time() - started
    return result


def adaptive_view(result: SampledScores, threshold: float) -> tuple[SampledScores, np.ndarray]:
    """The scores adaptive temperature scaling would give (docs/metrics.md section 3), and which questions went greedy.

    A question with c(x) > threshold (c measured on the greedy continuation) is decoded greedily, so all
    its n scores are the greedy answer's; the others keep their samples. Equal to scoring the output of
    :func:`unlearnkit.generation.adaptive_sample_answers` with the same seed (tested).
    """
    greedy = result.certainty > threshold
    leak = np.where(greedy[:, None], result.greedy_leak[:, None], result.leak).astype(np.int8)
    rouge = None
    if result.rouge is not None:
        rouge = np.where(greedy[:, None], result.greedy_rouge[:, None], result.rouge)
    self_bleu = np.where(greedy, 1.0, result.self_bleu)
    view = replace(result, leak=leak, rouge=rouge, self_bleu=self_bleu,
                   settings={**result.settings, "adaptive_threshold": float(threshold)})
    return view, greedy


# --------------------------------------------------------------------------- scores -> bounds


def binary_leak_lower_bound(x, alpha: float):
    """One-sided Clopper-Pearson LOWER confidence bound on the leak probability from binary scores:
    Beta quantile at alpha with shapes (S, n - S + 1), and 0 when S = 0. With probability >= 1 - alpha,
    p >= this value. The counterpart of :func:`unlearnkit.bounds.binary_leakage_bound` (the upper end):
    an upper bound can only fail to certify a model, a positive lower bound shows it leaks.
    x: (n,) or (prompts, n) of 0/1. Returns a float or an array (prompts,)."""
    from scipy import stats

    bounds.binary_leakage_bound(x, alpha)  # validates alpha and the 0/1 scores with the same messages
    scores = np.atleast_2d(np.asarray(x, dtype=float))
    successes = scores.sum(axis=1)
    n = scores.shape[1]
    safe = np.where(successes > 0, successes, 1.0)
    lower = np.where(successes > 0, stats.beta.ppf(alpha, safe, n - successes + 1.0), 0.0)
    return float(lower[0]) if np.ndim(x) == 1 else lower


def bound_table(scores: np.ndarray | None, alpha: float, leaks: np.ndarray | None = None,
                grid: bounds.GridSpec | np.ndarray = "uniform", K: int = 100, rho: float = 2.0):
    """Per-question statistics and bounds, one row per question.

    From the (Q, n) scores in [0, 1] (ROUGE-L): ``ed_mean``, ``ed_sd`` (1/n), ``ed_score`` (mean + rho sd; no
    guarantee), ``mean_lower`` / ``mean_upper`` (expectation bounds, two-sided DKW) and ``std_upper``
    (standard-deviation bound, first bin closed at 0), all at level alpha on ``grid`` (the paper's
    100-bin uniform grid by default).
    From the (Q, n) binary leaks: ``leaks`` (S), ``leak_rate`` (S/n), ``leak_lower`` (Clopper-Pearson lower)
    and ``binary_leak_bound`` (M_bin, the one-sided Clopper-Pearson upper bound), each at level alpha.
    """
    import pandas as pd

    columns: dict[str, np.ndarray] = {}
    if scores is not None:
        mean, sd = bounds.ed_stats(np.atleast_2d(scores))
        lower, upper = bounds.expectation_bounds(np.atleast_2d(scores), alpha, grid, K)
        columns.update(ed_mean=mean, ed_sd=sd, ed_score=mean + rho * sd, mean_lower=lower, mean_upper=upper,
                       std_upper=bounds.std_bound(np.atleast_2d(scores), alpha, grid, K))
    if leaks is not None:
        leaks = np.atleast_2d(leaks)
        columns.update(leaks=leaks.sum(axis=1).astype(int), leak_rate=leaks.mean(axis=1),
                       leak_lower=binary_leak_lower_bound(leaks, alpha),
                       binary_leak_bound=bounds.binary_leakage_bound(leaks, alpha))
    if not columns:
        raise ValueError("bound_table needs scores, leaks or both")
    table = pd.DataFrame(columns)
    table.index.name = "question"
    return table


def greedy_vs_sampling(alpha: float, greedy_rouge: np.ndarray | None = None, rouge: np.ndarray | None = None,
                       greedy_leak: np.ndarray | None = None, leaks: np.ndarray | None = None,
                       rouge_threshold: float = 0.5, min_leaks: int = 1):
    """Per question: does greedy decoding call it unlearned although sampling leaks? Two criteria.

    ROUGE: a text leaks when its ROUGE-L exceeds ``rouge_threshold``; greedy calls the question unlearned
        when its greedy ROUGE is at or below it. ``rouge_leaks`` counts the samples above it,
        ``rouge_tail_bound`` is M_gen(threshold), the DKW upper bound on P(ROUGE > threshold), and
        ``rouge_leak_lower``/``rouge_leak_bound`` are the Clopper-Pearson bounds on that same probability.
    Key entity: a text leaks when it contains the answer's key entity (``leaks``: the leak judge per sample).
    ``understated_*``: greedy says unlearned, yet at least ``min_leaks`` of the n samples leak. With
    ``min_leaks`` = 1 the leak probability's lower bound ``*_leak_lower`` is then positive at level alpha:
    the model does emit the answer with a probability bounded away from 0.
    """
    import pandas as pd

    table: dict[str, np.ndarray] = {}
    if greedy_rouge is not None and rouge is not None:
        above = (np.asarray(rouge) > rouge_threshold).astype(np.int8)
        table.update(
            greedy_rouge=np.asarray(greedy_rouge), max_sampled_rouge=np.asarray(rouge).max(axis=1),
            rouge_leaks=above.sum(axis=1),
            rouge_tail_bound=bounds.general_leakage_bound(np.atleast_2d(rouge), rouge_threshold, alpha),
            rouge_leak_lower=binary_leak_lower_bound(above, alpha),
            rouge_leak_bound=bounds.binary_leakage_bound(above, alpha),
        )
        table["greedy_unlearned_rouge"] = table["greedy_rouge"] <= rouge_threshold
        table["understated_rouge"] = table["greedy_unlearned_rouge"] & (table["rouge_leaks"] >= min_leaks)
    if greedy_leak is not None and leaks is not None:
        leaks = np.atleast_2d(leaks)
        table.update(
            greedy_leak=np.asarray(greedy_leak).astype(int), leaks=leaks.sum(axis=1).astype(int),
            leak_rate=leaks.mean(axis=1), leak_lower=binary_leak_lower_bound(leaks, alpha),
            binary_leak_bound=bounds.binary_leakage_bound(leaks, alpha),
        )
        table["understated_entity"] = (table["greedy_leak"] == 0) & (table["leaks"] >= min_leaks)
    if not table:
        raise ValueError("greedy_vs_sampling needs (greedy_rouge, rouge), (greedy_leak, leaks) or both")
    out = pd.DataFrame(table)
    out.index.name = "question"
    return out


def _mean(values) -> float | None:
    return float(values.mean()) if len(values) else None


def _max(values) -> float | None:
    return float(values.max()) if len(values) else None


def understatement_summary(table) -> dict[str, Any]:
    """Counts of :func:`greedy_vs_sampling`: how many questions greedy calls unlearned, how many of those
    leak under sampling, and the bounds on the flagged questions' leak probabilities (None when none is flagged)."""
    out: dict[str, Any] = {"n_questions": int(len(table))}
    if "understated_entity" in table:
        flagged = table[table["understated_entity"]]
        out.update(
            greedy_unlearned=int((table["greedy_leak"] == 0).sum()),
            greedy_unlearned_but_leaks=int(len(flagged)),
            flagged_leak_rate_mean=_mean(flagged["leak_rate"]),
            flagged_leak_lower_max=_max(flagged["leak_lower"]),
            flagged_binary_leak_bound_mean=_mean(flagged["binary_leak_bound"]),
        )
    if "understated_rouge" in table:
        flagged = table[table["understated_rouge"]]
        out.update(
            greedy_unlearned_rouge=int(table["greedy_unlearned_rouge"].sum()),
            greedy_unlearned_but_leaks_rouge=int(len(flagged)),
            flagged_rouge_leak_lower_max=_max(flagged["rouge_leak_lower"]),
            flagged_rouge_tail_bound_mean=_mean(flagged["rouge_tail_bound"]),
        )
    return out


def model_summary(result: SampledScores, alpha: float, rouge_threshold: float, adaptive_threshold: float,
                  grid: bounds.GridSpec | np.ndarray = "uniform"):
    """Everything notebook 05 reports about one model: (per-question table, summary dict for metrics.json).

    The per-question table joins :func:`bound_table` and :func:`greedy_vs_sampling` (with the question,
    its key and the greedy answer); the summary averages it over questions and adds the counts of
    :func:`understatement_summary` and the adaptive-temperature numbers (c(x) on the greedy continuation).
    """
    per_question = bound_table(result.rouge, alpha, result.leak, grid=grid)
    flags = greedy_vs_sampling(alpha, result.greedy_rouge, result.rouge, result.greedy_leak, result.leak,
                               rouge_threshold)
    table = per_question.join(flags.drop(columns=[c for c in flags if c in per_question]))
    table.insert(0, "key", [k if isinstance(k, str) else ", ".join(k) for k in result.keys])
    table.insert(0, "question_text", result.questions)
    table["greedy_answer"] = result.greedy_answers
    table["certainty"] = result.certainty
    table["self_bleu"] = result.self_bleu

    adaptive, went_greedy = adaptive_view(result, adaptive_threshold)
    adaptive_table = bound_table(adaptive.rouge, alpha, adaptive.leak, grid=grid)
    summary: dict[str, Any] = {"n_questions": len(result.questions), "n_samples": result.n}
    if result.rouge is not None:
        summary.update(
            greedy_rouge=float(np.mean(result.greedy_rouge)),
            ed_mean=float(table["ed_mean"].mean()), ed_sd=float(table["ed_sd"].mean()),
            ed_score=float(table["ed_score"].mean()),
            mean_lower_bound=float(table["mean_lower"].mean()), mean_upper_bound=float(table["mean_upper"].mean()),
            std_upper_bound=float(table["std_upper"].mean()),
            general_leak_bound_at_threshold=float(table["rouge_tail_bound"].mean()),
            rouge_leak_rate=float((result.rouge > rouge_threshold).mean()),
            adaptive_ed_mean=float(adaptive_table["ed_mean"].mean()),
            adaptive_ed_sd=float(adaptive_table["ed_sd"].mean()),
        )
    summary.update(
        greedy_leak_rate=float(result.greedy_leak.mean()),
        leak_rate=float(table["leak_rate"].mean()),
        leak_lower_bound_mean=float(table["leak_lower"].mean()),
        binary_leak_bound_mean=float(table["binary_leak_bound"].mean()),
        binary_leak_bound_max=float(table["binary_leak_bound"].max()),
        questions_with_a_leak=int((table["leaks"] > 0).sum()),
        self_bleu=float(np.nanmean(result.self_bleu)) if np.isfinite(result.self_bleu).any() else None,
        certainty_mean=float(result.certainty.mean()),
        adaptive_greedy_share=float(went_greedy.mean()),
        adaptive_leak_rate=float(adaptive_table["leak_rate"].mean()),
        adaptive_binary_leak_bound_mean=float(adaptive_table["binary_leak_bound"].mean()),
    )
    counts = understatement_summary(table)
    counts.pop("n_questions", None)
    summary.update(counts)
    return table, summary


def compare_with_reference(tables: Mapping[str, Any], summaries: dict[str, dict[str, Any]],
                           reference: str | None) -> None:
    """Add to each summary how many flagged questions leak MORE than the reference (retain) model does.

    The retain model never saw the forget set, so its leak rate on a question is what guessing achieves (a
    common occupation, a frequent city). A flagged question counts when the model's Clopper-Pearson lower
    bound exceeds the reference's M_bin on it: both hold with probability >= 1 - alpha each, so the model's leak
    probability exceeds the reference's with probability >= 1 - 2 alpha. Key
    ``greedy_unlearned_but_leaks_above_reference``; nothing is added without a reference.
    """
    if not reference or reference not in tables:
        return
    ref_bound = tables[reference]["binary_leak_bound"]
    for model, table in tables.items():
        above = table["understated_entity"] & (table["leak_lower"] > ref_bound)
        summaries[model]["greedy_unlearned_but_leaks_above_reference"] = int(above.sum())


def bounds_vs_n(scores: np.ndarray, alpha: float, sizes: Sequence[int] | None = None,
                grid: bounds.GridSpec | np.ndarray = "uniform"):
    """Expectation and std bounds from the first m of one question's n scores, for m on a geometric grid
    (4, 8, 16, ..., n by default): how fast the bounds close in on the sample statistics (Fig. 3e-f).
    Returns a DataFrame indexed by m with ed_mean, ed_sd, mean_lower, mean_upper, std_upper."""
    import pandas as pd

    scores = np.asarray(scores, dtype=float)
    if scores.ndim != 1:
        raise ValueError(f"bounds_vs_n takes the n scores of ONE question, got shape {scores.shape}")
    n = scores.size
    if sizes is None:
        sizes = sorted({*(2 ** k for k in range(2, int(math.log2(max(n, 4))) + 1)), n})
    rows = []
    for m in sizes:
        if not 1 <= m <= n:
            raise ValueError(f"subsample size {m} outside 1..{n}")
        first = scores[:m]
        mean, sd = bounds.ed_stats(first)
        lower, upper = bounds.expectation_bounds(first, alpha, grid)
        rows.append({"m": m, "ed_mean": mean, "ed_sd": sd, "mean_lower": lower, "mean_upper": upper,
                     "std_upper": bounds.std_bound(first, alpha, grid)})
    return pd.DataFrame(rows).set_index("m")


def general_leak_curves(scores: np.ndarray, alpha: float, thresholds: np.ndarray | None = None):
    """(thresholds, M_gen (Q, T), empirical tail 1 - F_n (Q, T)) for the general leakage bound curves."""
    x = np.linspace(0.0, 1.0, 101) if thresholds is None else np.asarray(thresholds, dtype=float)
    scores = np.atleast_2d(scores)
    upper = bounds.general_leakage_bound(scores, x, alpha)
    tail = (scores[:, :, None] > x[None, None, :]).mean(axis=1)
    return x, upper, tail


# --------------------------------------------------------------------------- tables and verdicts


def table1(summaries: Mapping[str, Mapping[str, Any]]):
    """The analogue of Table 1 of Scholten et al.: greedy ROUGE-L against the ED mean and sd of the sampled
    ROUGE-L (each averaged over questions), with the bounds beside them."""
    import pandas as pd

    rows = []
    for model, s in summaries.items():
        if "greedy_rouge" not in s:
            continue
        rows.append({"model": model, "greedy ROUGE-L": s["greedy_rouge"],
                     "ED mean ± sd": f"{s['ed_mean']:.2f} ± {s['ed_sd']:.2f}",
                     "ED mean": s["ed_mean"], "ED sd": s["ed_sd"], "ED score (mean + 2 sd)": s["ed_score"],
                     "E[ROUGE] lower": s["mean_lower_bound"], "E[ROUGE] upper": s["mean_upper_bound"],
                     "sd upper": s["std_upper_bound"], "self-BLEU": s.get("self_bleu")})
    return pd.DataFrame(rows).set_index("model")


def understatement_verdict(tables: Mapping[str, Any], summaries: Mapping[str, Mapping[str, Any]],
                           alpha: float, exclude: Sequence[str] = (), reference: str | None = None) -> str:
    """One paragraph: does greedy decoding understate leakage for at least one unlearned model, with the numbers.

    Unlearned models are those not in ``exclude`` (the target and the retain model). For the strongest
    flagged question it quotes the leak count and the Clopper-Pearson interval [lower, M_bin], each side at
    level alpha, and, when ``reference`` (the retain model, which never saw the forget set) is given, that
    model's leak count on the same question: the rate at which the key entity is simply guessed.
    """
    lines = []
    best: tuple[float, str, int] | None = None
    for model, table in tables.items():
        if model in exclude:
            continue
        s = summaries[model]
        lines.append(f"  {model}: greedy calls {s['greedy_unlearned']}/{s['n_questions']} questions unlearned "
                     f"(no key entity in the greedy answer); sampling leaks on {s['greedy_unlearned_but_leaks']} "
                     f"of them (key entity), on {s.get('greedy_unlearned_but_leaks_rouge', 0)} by the ROUGE criterion.")
        flagged = table[table["understated_entity"]]
        if len(flagged):
            q = int(flagged["leak_lower"].idxmax())
            if best is None or flagged.loc[q, "leak_lower"] > best[0]:
                best = (float(flagged.loc[q, "leak_lower"]), model, q)
    if best is None:
        head = (f"No: for no unlearned model does greedy decoding call a question unlearned while one of the "
                f"n samples leaks its key entity (alpha {alpha}).")
        return head + "\n" + "\n".join(lines)
    lower, model, q = best
    row = tables[model].loc[q]
    n = summaries[model]["n_samples"]
    head = (f"Yes: greedy decoding understates leakage. For {model}, question {q} ({row['question_text']!r}, key "
            f"{row['key']!r}): the greedy answer {row['greedy_answer']!r} does not contain the key, but "
            f"{int(row['leaks'])}/{n} samples do, so with probability at least {1 - alpha:.2f} the leak "
            f"probability is at least {lower:.3f} (Clopper-Pearson lower bound) and at most "
            f"{row['binary_leak_bound']:.3f} (M_bin).")
    if reference and reference in tables:
        ref = tables[reference].loc[q]
        head += (f" The retain model {reference}, which never saw the forget set, names the key in "
                 f"{int(ref['leaks'])}/{n} samples (M_bin {ref['binary_leak_bound']:.3f}): the base rate of guessing.")
    return head + "\n" + "\n".join(lines)


# --------------------------------------------------------------------------- the notebook's models and data


def sampling_settings(params: Mapping[str, Any]) -> dict[str, Any]:
    """The sampling arguments of :func:`sample_and_score` from a profile."""
    return {"n": int(params.get("n_samples", 128)), "temperature": float(params.get("sample_temperature", 1.0)),
            "top_p": params.get("sample_top_p"),
            "max_new_tokens": int(params.get("sample_max_new_tokens") or params.get("max_new_tokens", 64)),
            "seed": int(params.get("seed", 0))}


def _evenly_spaced(rows: list, max_items: int | None) -> list:
    """At most ``max_items`` rows spread evenly over the list: every author and attribute gets a share,
    where the first rows would cover only the first few authors."""
    if not max_items or max_items >= len(rows):
        return list(rows)
    picks = np.unique(np.linspace(0, len(rows) - 1, int(max_items)).round().astype(int))
    return [rows[i] for i in picks]


def forget_rows(source, params: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The forget questions of the profile (``forget_split``), at most ``sample_max_items``, evenly spaced."""
    rows = source.load(params.get("forget_split", "forget10"))
    return _evenly_spaced(rows, params.get("sample_max_items"))


def evaluated_models(profile: str, include_reference: bool = True) -> dict[str, str]:
    """The models notebook 05 evaluates, as {display name: saved model name}: the target, the retain model
    that serves as forget-quality reference (a baseline: it never saw the forget set), then every unlearning
    run of notebook 02 whose model is saved."""
    from . import models

    found: dict[str, str] = {}
    if models.is_saved_model(runs.model_dir(profile, "target")):
        found["target"] = "target"
    if include_reference:
        reference = reference_model(profile)
        if reference and models.is_saved_model(runs.model_dir(profile, reference)):
            found[reference] = reference
    for run in runs.unlearning_runs(profile):
        if models.is_saved_model(runs.model_dir(profile, f"unlearned-{run}")):
            found[run] = f"unlearned-{run}"
    if "target" not in found:
        raise FileNotFoundError(f"no target model under {runs.model_dir(profile, 'target')}: run notebook 01 "
                                f"with profile {profile!r} first")
    return found


def reference_model(profile: str) -> str | None:
    """The retain model notebook 01 used as forget-quality reference, if notebook 01 has run."""
    try:
        return runs.read_metrics(profile, "01_tofu_finetune")["meta"].get("forget_quality_reference")
    except FileNotFoundError:
        return None


def _fingerprint(folder: Path) -> dict[str, Any]:
    """What identifies a saved model's weights without reading them: its metadata and weight files' sizes and times."""
    weights = sorted(folder.glob("*.safetensors")) + sorted(folder.glob("*.bin"))
    return {"meta": (folder / "unlearnkit.json").read_text(),
            "weights": [(p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in weights]}


def _to_available_device(model):
    import torch

    if torch.cuda.is_available() and next(model.parameters()).device.type == "cpu":
        model.to("cuda")
    return model


def score_saved_model(profile: str, name: str, rows: Sequence[Mapping[str, Any]], settings: Mapping[str, Any],
                      use_cache: bool = True, cache_tag: str = "", **kwargs) -> SampledScores:
    """:func:`sample_and_score` on a model saved under ``runs/<profile>/models/<name>``, cached.

    The cache file ``runs/<profile>/05_probabilistic_bounds/cache/<name>-<hash>.json`` is keyed by the saved
    model (metadata, weight files' sizes and times), the rows (questions, answers, keys) and the settings: a
    second run with nothing changed reads it instead of sampling again; a changed model or setting samples anew.
    ``cache_tag`` (e.g. ``.hp``) keeps the cache of another question set of the same model apart; ``kwargs`` go
    to :func:`sample_and_score` (e.g. ``use_prefix``).
    """

    folder = runs.model_dir(profile, name)
    key = config.params_hash({"model": _fingerprint(folder) if folder.exists() else name,
                              "rows": [dict(r) for r in rows],  # questions, answers, keys, prefixes
                              "settings": dict(settings), "kwargs": kwargs})
    cache_dir = paths.run_dir(profile, NOTEBOOK) / "cache"
    stem = f"{name}{cache_tag}"
    cache_file = cache_dir / f"{stem}-{key}.json"
    if use_cache and cache_file.exists():
        return SampledScores.from_json(json.loads(cache_file.read_text()))
    model, tokenizer, template = runs.load_saved(profile, name)
    result = sample_and_score(_to_available_device(model), tokenizer, template, rows, **settings, **kwargs)
    for stale in cache_dir.glob(f"{stem}-*.json"):
        stale.unlink()
    config.atomic_write_text(cache_file, json.dumps(result.to_json()))
    return result


# --------------------------------------------------------------------------- Harry Potter Q&A


def hp_rows(hp_source: str, forget_rows: Sequence[Mapping[str, Any]] | None = None,
            max_questions: int | None = None) -> list[dict[str, Any]]:
    """The keyword Q&A of ``hp_source`` (question, affirmative_response, keywords): Schwinn et al.'s Harry Potter
    Q&A from a file, or ``synthetic``, the same shape built from ``forget_rows`` (see :mod:`unlearnkit.data.hp_qa`);
    at most ``max_questions`` of them, evenly spaced."""
    from .data.hp_qa import hp_qa_rows

    return _evenly_spaced(hp_qa_rows(hp_source, forget_rows), max_questions)


def load_hp_model(hp_model: str, profile: str, params: Mapping[str, Any]):
    """The model of the HP Q&A path: ``target`` is the profile's saved target model (with a tiny model this
    only exercises the code: it never read Harry Potter, so it cannot leak); anything else is a Hub name or a
    local folder loaded with the profile's ``dtype`` (its prompt template from its name: a Llama-2 model gets
    the Llama-2-chat template). Moved to the GPU when there is one."""
    from . import models

    if hp_model == "target":
        model, tokenizer, template = runs.load_saved(profile, "target")
    else:
        model, tokenizer, template = models.load_model(hp_model, dtype=params.get("dtype"))
    return _to_available_device(model), tokenizer, template


def hp_table(result: SampledScores, alpha: float):
    """Per-question table and summary of a Harry Potter Q&A run: the question, its keywords, the greedy answer,
    S, S/n, the Clopper-Pearson lower bound and M_bin, and whether greedy is clean while sampling leaks."""
    table = bound_table(None, alpha, result.leak)
    table.insert(0, "keywords", [", ".join(k) if not isinstance(k, str) else k for k in result.keys])
    table.insert(0, "question_text", result.questions)
    table["greedy_answer"] = result.greedy_answers
    table["greedy_leak"] = result.greedy_leak.astype(int)
    table["understated_entity"] = (table["greedy_leak"] == 0) & (table["leaks"] > 0)
    summary = {
        "n_questions": len(result.questions), "n_samples": result.n,
        "use_prefix": bool(result.settings.get("use_prefix")),
        "greedy_leak_rate": float(result.greedy_leak.mean()), "leak_rate": float(table["leak_rate"].mean()),
        "questions_with_a_leak": int((table["leaks"] > 0).sum()),
        "leak_lower_bound_mean": float(table["leak_lower"].mean()),
        "binary_leak_bound_mean": float(table["binary_leak_bound"].mean()),
        "binary_leak_bound_max": float(table["binary_leak_bound"].max()),
        "binary_leak_bound_min": float(table["binary_leak_bound"].min()),
        "greedy_unlearned_but_leaks": int(table["understated_entity"].sum()),
        "self_bleu": float(np.nanmean(result.self_bleu)),
    }
    return table, summary


def hp_leakage(model, tokenizer, template, rows: Sequence[Mapping[str, Any]], alpha: float,
               use_prefix: bool = True, **sampling):
    """The Harry Potter Q&A path: question (then, with ``use_prefix``, the affirmative response as the start of
    the answer) -> n samples -> keyword leak judge (any keyword, whole words, case-insensitive, on the
    continuation only) -> binary leakage bound per question.

    Works for any Hugging Face causal LM. Returns (SampledScores, per-question DataFrame, summary dict) as
    :func:`hp_table` describes.
    """
    result = sample_and_score(model, tokenizer, template, rows, use_prefix=use_prefix, **sampling)
    return (result, *hp_table(result, alpha))


def run_hp_qa(hp_model: str, profile: str, params: Mapping[str, Any], rows: Sequence[Mapping[str, Any]],
              settings: Mapping[str, Any], alpha: float, use_prefix: bool = True):
    """:func:`hp_leakage` for the profile's ``hp_model``: a model saved under ``runs/<profile>/models/`` (``target``
    among them) is scored through the cache of :func:`score_saved_model`; a Hub name or folder is loaded by
    :func:`load_hp_model` and sampled."""
    from . import models

    if models.is_saved_model(runs.model_dir(profile, hp_model)):
        result = score_saved_model(profile, hp_model, rows, settings, cache_tag=".hp", use_prefix=use_prefix)
        return (result, *hp_table(result, alpha))
    return hp_leakage(*load_hp_model(hp_model, profile, params), rows, alpha, use_prefix=use_prefix, **settings)


# --------------------------------------------------------------------------- figures


def _grid(count: int, ncols: int, size: tuple[float, float]):
    import matplotlib.pyplot as plt

    ncols = max(1, min(ncols, count))
    nrows = max(1, math.ceil(count / ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(size[0] * ncols, size[1] * nrows), squeeze=False,
                             sharey=True)
    for ax in axes.flat[count:]:
        ax.set_axis_off()
    return fig, list(axes.flat)


def plot_greedy_vs_samples(results: Mapping[str, SampledScores], ncols: int = 5):
    """Per model, per forget question (sorted by greedy ROUGE-L): the spread of the n sampled ROUGE-L scores
    (10-90 % and 25-75 % ranges, mean as a dot) and the greedy score as a red cross."""
    fig, axes = _grid(len(results), ncols, (3.4, 3.0))
    for ax, (name, r) in zip(axes, results.items()):
        order = np.argsort(r.greedy_rouge, kind="stable")
        x = np.arange(len(order))
        q10, q25, q75, q90 = np.percentile(r.rouge[order], [10, 25, 75, 90], axis=1)
        ax.vlines(x, q10, q90, color="C0", alpha=0.35, lw=1.2)
        ax.vlines(x, q25, q75, color="C0", alpha=0.9, lw=2.2)
        ax.plot(x, r.rouge[order].mean(axis=1), "o", color="C0", ms=2.5, label="sampled: mean, 25-75 %, 10-90 %")
        ax.plot(x, r.greedy_rouge[order], "x", color="C3", ms=4, label="greedy")
        ax.set_title(f"{name}\ngreedy {r.greedy_rouge.mean():.2f} · sampled {r.rouge.mean():.2f}", fontsize=10)
        ax.set_ylim(-0.03, 1.03)
        ax.set_xlabel("question (by greedy ROUGE)", fontsize=9)
    axes[0].set_ylabel("ROUGE-L recall")
    axes[0].legend(fontsize=7, loc="lower right")
    fig.suptitle(f"Greedy ROUGE-L against the distribution of {next(iter(results.values())).n} sampled answers, "
                 "per forget question")
    fig.tight_layout()
    return fig


def plot_binary_bounds(tables: Mapping[str, Any], alpha: float, title_suffix: str = ""):
    """Per model: each question's leak rate S/n and binary leakage bound M_bin (jittered dots), their means
    (black bars), and the share of questions whose greedy answer leaks (red diamond)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(max(6.5, 1.05 * len(tables) + 2), 4.2))
    rng = np.random.default_rng(0)
    for i, t in enumerate(tables.values()):
        for offset, column, colour, label in ((-0.2, "leak_rate", "C0", "leak rate S/n"),
                                              (0.2, "binary_leak_bound", "C1", f"M_bin (α = {alpha})")):
            values = t[column].to_numpy()
            ax.scatter(i + offset + rng.uniform(-0.08, 0.08, len(values)), values, s=9, color=colour, alpha=0.6,
                       label=label if i == 0 else None)
            ax.hlines(values.mean(), i + offset - 0.13, i + offset + 0.13, color="black", lw=2)
        if "greedy_leak" in t:
            ax.plot(i, t["greedy_leak"].mean(), "D", color="C3", ms=6, label="greedy leak share" if i == 0 else None)
    ax.set_xticks(range(len(tables)), list(tables), rotation=30)
    ax.set_ylim(-0.03, 1.03)
    ax.set(ylabel="probability the answer's key entity appears",
           title=f"Binary leakage bound per forget question{title_suffix}")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    return fig


def plot_general_leak_curves(results: Mapping[str, SampledScores], alpha: float, threshold: float | None = None,
                             reference: SampledScores | None = None, reference_name: str = "target"):
    """M_gen(x) = min(1, 1 - F_n(x) + eps) against the ROUGE-L threshold x, one panel per model: one thin line
    per question, their mean (thick), the mean empirical tail 1 - F_n(x) (dashed) and the reference model's
    mean M_gen (grey). Each question's curve holds for all x at once with probability >= 1 - alpha."""
    fig, axes = _grid(len(results), len(results), (5.0, 3.8))
    ref_curve = general_leak_curves(reference.rouge, alpha)[1].mean(axis=0) if reference is not None else None
    for ax, (name, r) in zip(axes, results.items()):
        x, upper, tail = general_leak_curves(r.rouge, alpha)
        for row in upper:
            ax.plot(x, row, color="C1", alpha=0.12, lw=0.8)
        ax.plot(x, upper.mean(axis=0), color="C1", lw=2.5, label="M_gen(x), mean over questions")
        ax.plot(x, tail.mean(axis=0), color="C0", ls="--", lw=1.8, label="empirical 1 - F_n(x), mean")
        if ref_curve is not None:
            ax.plot(x, ref_curve, color="grey", lw=1.5, ls=":", label=f"{reference_name}: M_gen mean")
        if threshold is not None:
            ax.axvline(threshold, color="C3", lw=1, ls="-.", label=f"leak threshold {threshold}")
        ax.set(title=f"{name}: general leakage bound (n = {r.n}, α = {alpha})", xlabel="ROUGE-L threshold x",
               ylim=(-0.02, 1.02))
    axes[0].set_ylabel("upper bound on P(ROUGE-L > x)")
    axes[0].legend(fontsize=8, loc="lower left")
    fig.tight_layout()
    return fig


def plot_bounds_vs_n(curves: Mapping[str, Any], alpha: float):
    """Left: expectation bounds (band) and the sample mean of the first m samples; right: the standard-deviation
    bound and the sample sd, against m, one colour per question (the ``curves`` of :func:`bounds_vs_n`)."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
    for i, (label, c) in enumerate(curves.items()):
        colour = f"C{i}"
        m = c.index.to_numpy()
        axes[0].fill_between(m, c["mean_lower"], c["mean_upper"], color=colour, alpha=0.18)
        axes[0].plot(m, c["mean_lower"], color=colour, lw=1.2)
        axes[0].plot(m, c["mean_upper"], color=colour, lw=1.2, label=label)
        axes[0].plot(m, c["ed_mean"], color=colour, ls="--", lw=1, marker=".")
        axes[1].plot(m, c["std_upper"], color=colour, lw=1.5, marker="o", ms=3, label=label)
        axes[1].plot(m, c["ed_sd"], color=colour, ls="--", lw=1, marker=".")
    axes[0].set(xscale="log", xlabel="samples m", ylabel="E[ROUGE-L]", ylim=(-0.02, 1.02),
                title=f"Expectation bounds (band) and sample mean (dashed), α = {alpha}")
    axes[1].set(xscale="log", xlabel="samples m", ylabel="sd of ROUGE-L", ylim=(-0.01, 0.51),
                title="Std bound (solid) and sample sd (dashed)")
    for ax in axes:
        ax.set_xscale("log", base=2)
    axes[0].legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    return fig


def plot_adaptive(results: Mapping[str, SampledScores], summaries: Mapping[str, Mapping[str, Any]],
                  threshold: float):
    """Left: the certainty c(x) of each forget question's greedy continuation, per model, with c_T; right: the
    mean binary leakage bound with plain sampling and with adaptive temperature, and the share decoded greedily."""
    import matplotlib.pyplot as plt

    names = list(results)
    fig, axes = plt.subplots(1, 2, figsize=(max(11, 1.3 * len(names) + 5), 4.2))
    rng = np.random.default_rng(0)
    for i, name in enumerate(names):
        c = results[name].certainty
        axes[0].scatter(i + rng.uniform(-0.2, 0.2, len(c)), c, s=9, alpha=0.6, color="C0")
    axes[0].axhline(threshold, color="C3", lw=1.2, ls="--", label=f"c_T = {threshold}")
    axes[0].set_xticks(range(len(names)), names, rotation=30)
    axes[0].set(ylabel="c(x) on the greedy continuation", ylim=(0, 1.02),
                title="Certainty per forget question")
    axes[0].legend(fontsize=8)
    x = np.arange(len(names))
    plain = [summaries[n]["binary_leak_bound_mean"] for n in names]
    adaptive = [summaries[n]["adaptive_binary_leak_bound_mean"] for n in names]
    axes[1].bar(x - 0.2, plain, 0.4, label="sampling (T = 1)")
    axes[1].bar(x + 0.2, adaptive, 0.4, label="adaptive temperature")
    for i, n in enumerate(names):
        axes[1].annotate(f"{summaries[n]['adaptive_greedy_share']:.0%}", (i + 0.2, adaptive[i]),
                         textcoords="offset points", xytext=(0, 3), ha="center", fontsize=7)
    axes[1].set_xticks(x, names, rotation=30)
    axes[1].set(ylabel="mean M_bin over questions", ylim=(0, 1.08),
                title="Binary leak bound; % = share decoded greedily")
    axes[1].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    return fig


def plot_hp(table, model_name: str, alpha: float):
    """Per HP question (sorted by M_bin): leak rate S/n and the binary leakage bound M_bin; greedy leaks in red."""
    import matplotlib.pyplot as plt

    t = table.sort_values("binary_leak_bound").reset_index(drop=True)
    fig, ax = plt.subplots(figsize=(max(7, 0.16 * len(t) + 3), 3.8))
    x = np.arange(len(t))
    ax.bar(x, t["binary_leak_bound"], color="C1", alpha=0.6, label=f"M_bin (α = {alpha})")
    ax.bar(x, t["leak_rate"], color="C0", label="leak rate S/n")
    leaked = t["greedy_leak"] > 0
    ax.plot(x[leaked], np.full(leaked.sum(), 1.02), "v", color="C3", label="greedy answer leaks")
    ax.set(xlabel="HP Q&A question (by M_bin)", ylabel="probability a keyword appears", ylim=(0, 1.06),
           title=f"Harry Potter Q&A, {model_name}: binary leakage bound per question")
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    return fig
