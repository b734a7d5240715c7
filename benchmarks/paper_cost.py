"""What the paper profile costs, as a plan: tokens per second measured here on a small Phi, and an ESTIMATE of the
GPU-hours of notebooks 01-08 on ``notebooks/params/paper.yaml`` from token counts and FLOPs. Not a test.

    python benchmarks/paper_cost.py [--json out.json] [--skip-measure] [--threads 1] [--profile paper]
                                    [--gpu-tflops 312] [--mfu-train 0.40] [--mfu-generate 0.10] [--decode-step-ms 20]
                                    [--chars-per-token 4] [--decode-fraction 1.0] [--data ../shared/data]

Part 1 measures, on this CPU, a randomly initialised Phi (``PhiForCausalLM``, hidden 256, 4 layers, 4 heads,
intermediate 1024, float32, the vocabulary of a BPE tokenizer trained on the synthetic corpus) through the
workbook's own code: fine-tuning and NPO unlearning through ``training.train``, sampling through
``generation.sample_answers`` and teacher-forced scoring through ``metrics.tofu.encoded_nll``. Trained tokens are the
non-padding input tokens of every forward pass that gets a backward (forget and retain in unlearning), counted by a
hook on the model; the frozen reference's forward is counted apart, as forward-only tokens.

Part 2 counts, for every notebook, the tokens the paper profile sends through each model (one function per
notebook, each returning a :class:`Cost` whose line items say what is counted), turns them into FLOPs, 6·N per
trained token (forward and backward) and 2·N per forward-only or generated token, and divides by a GPU's sustained
rate: peak × model-FLOPs utilisation, one utilisation for batched passes (training, teacher-forced scoring, prompt
prefill) and a lower one for token-by-token decoding with HF ``generate``, whose steps also take at least
``--decode-step-ms`` each (a greedy batch of 16 rows is bound by that latency, not by its FLOPs). The same token counts
at the CPU rates of part 1, scaled by N_paper / N_here, give the CPU projection printed beside it.

An unlearning step sends through the trained model and the frozen reference the sub-batches the method registry says
(``unlearning.step_parts``), so a method added to the registry is counted without a table here; AltPO's alternates
are sampled from the target where the data ships none (real TOFU). Every model notebooks 01 and 02 evaluate also gets
open-unlearning's memorisation and privacy metrics where the data has a holdout split: one teacher-forced pass over the
forget and holdout items and, with ``mia_gradnorm``, a forward and backward per item for GradNorm.

Token lengths: mean characters of the real files (TOFU, JailbreakBench's behaviours, Schwinn et al.'s HP Q&A; read
from ``--data``, by default ``$UNLEARNKIT_SHARED_DATA`` or ``../shared/data`` beside the project) divided by
``--chars-per-token`` (4: the usual rule for English under GPT-2-style BPE, Phi-1.5's; Phi's tokenizer cannot be
downloaded here). Without those files the built-in figures of :data:`BUILT_IN`, measured from the same files, stand in.
Every decoded sequence is taken to run ``--decode-fraction`` (1: all) of its ``max_new_tokens``, as a batch in HF
``generate`` decodes until its longest row stops.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("TQDM_DISABLE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never a download: every model here is built from a config

import torch  # noqa: E402
from unlearnkit import config, generation, models, paths, pipeline, runs, training, unlearning  # noqa: E402
from unlearnkit.data import behaviours as behaviour_data  # noqa: E402
from unlearnkit.data import formats as format_data  # noqa: E402
from unlearnkit.data.hp_qa import load_hp_qa  # noqa: E402
from unlearnkit.data.synthetic import generate_synthetic_tofu  # noqa: E402
from unlearnkit.data.tofu import (  # noqa: E402
    QUESTIONS_PER_AUTHOR,
    TofuSource,
    alternates_split_for,
    holdout_split_for,
    retain_split_for,
)
from unlearnkit.metrics.safety import HARMBENCH_PROMPT  # noqa: E402
from unlearnkit.metrics.tofu import encoded_nll, tofu_eval_splits  # noqa: E402
from unlearnkit.studies import alignment, calibration, entropy, leakage  # noqa: E402

# =============================================================================================
# Assumptions (each printed with the estimate)
# =============================================================================================

#: Parameters of the models the paper profile names (embeddings included): Phi-1.5's model card; Llama-2-7B (the
#: Who's Harry Potter model and Vicuna-7B-v1.5 are fine-tunes of it) and Llama-2-13B (HarmBench's classifier is one);
#: Mistral-7B. A saved model of the profile (target, unlearned-*) has the size of the profile's ``model``.
MODEL_PARAMETERS = {
    "microsoft/phi-1_5": 1.42e9,
    "microsoft/Llama2-7b-WhoIsHarryPotter": 6.74e9,
    "lmsys/vicuna-7b-v1.5": 6.74e9,
    "mistralai/Mistral-7B-Instruct-v0.3": 7.24e9,
    "cais/HarmBench-Llama-2-13b-cls": 13.0e9,
}
#: An A100's dense bf16 peak, and the model-FLOPs utilisations assumed for it.
GPU_PEAK_TFLOPS = 312.0
MFU_TRAIN = 0.40  # batched passes: training, teacher-forced scoring, prompt prefill
MFU_GENERATE = 0.10  # HF generate: one token per step per row, Python overhead and memory-bound steps
#: HF generate's latency per decoding step when the batch is too small for the FLOPs to dominate (eager mode, a
#: 24-32-layer model: tens of ms); a decoding batch of r rows never runs faster than r tokens per step time.
DECODE_STEP_S = 0.02
CHARS_PER_TOKEN = 4.0
#: The small Phi measured here (vocabulary: a BPE tokenizer trained on the synthetic corpus).
SMALL_PHI = {"hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 4, "intermediate_size": 1024}
#: Chunk sizes of the two sampling paths (``sample_and_score`` for notebooks 05-06, ``sample_answers`` for 07): a
#: prompt's prefix is prefilled once per chunk of its samples.
SCORE_CHUNK, SAMPLE_CHUNK = 128, 256

TRAINED, FORWARD, GENERATED = "trained", "forward", "generated"
KINDS = (TRAINED, FORWARD, GENERATED)
#: FLOPs per token and parameter of each kind.
FLOPS_PER_TOKEN = {TRAINED: 6.0, FORWARD: 2.0, GENERATED: 2.0}


# =============================================================================================
# The reference data: how long the texts are that each notebook feeds a model
# =============================================================================================


@dataclass(frozen=True)
class SplitText:
    """One TOFU file: its rows and the mean characters of its fields (0 where it has no such field)."""

    rows: int
    question: float
    answer: float
    paraphrased_question: float = 0.0
    paraphrased_answer: float = 0.0
    perturbed_answer: float = 0.0
    perturbed: int = 0


@dataclass(frozen=True)
class FormatText:
    """One format and set of notebook 04 (``build_all_formats`` on forget10, 4 options, every item): its items, the
    mean characters of the prompt the scorer reads, and the mean and longest masked span (cloze only)."""

    items: int
    prompt: float
    target: float = 0.0
    longest_target: float = 0.0


@dataclass(frozen=True)
class ReferenceData:
    origin: str
    tofu: dict[str, SplitText]
    formats: dict[str, dict[str, FormatText]]
    behaviours: dict[str, tuple[int, float]]  # JBB category -> (requests, mean characters of the goal)
    hp_qa: tuple[int, float, float]  # (questions, mean characters of the question, of the affirmative response)


#: The TOFU files the notebooks read on forget10, forget05 and forget01.
TOFU_FILES = ("full", "forget01", "forget05", "forget10", "retain99", "retain95", "retain90", "forget01_perturbed",
              "forget05_perturbed", "forget10_perturbed", "retain_perturbed", "real_authors_perturbed",
              "world_facts_perturbed")


def _mean(values: Iterable[float]) -> float:
    values = list(values)
    return round(statistics.fmean(values), 1) if values else 0.0


def measure_reference(folder: Path, forget_split: str = "forget10", n_options: int = 4, seed: int = 0,
                      format_max_items: int | None = None) -> ReferenceData:
    """Row counts and mean field lengths of the real files under ``folder`` (``tofu/``, ``jbb/harmful-behaviors.csv``,
    ``hp_qa/hp_qa_en.csv``), read by the workbook's own readers; notebook 04's items built by its own builders."""
    source = TofuSource(folder / "tofu")
    tofu = {}
    for name in TOFU_FILES:
        rows = source.load(name)
        wrong = [w for r in rows for w in r.get("perturbed_answer", [])]
        tofu[name] = SplitText(len(rows), _mean(len(r["question"]) for r in rows), _mean(len(r["answer"]) for r in rows),
                               _mean(len(r["paraphrased_question"]) for r in rows if "paraphrased_question" in r),
                               _mean(len(r["paraphrased_answer"]) for r in rows if "paraphrased_answer" in r),
                               _mean(len(w) for w in wrong), len(rows[0].get("perturbed_answer", [])))
    built = format_data.build_all_formats(source, forget_split, n_options, seed, format_max_items)
    formats: dict[str, dict[str, FormatText]] = {}
    for fmt, sets in built.items():
        for set_name, items in sets.items():
            if fmt == "cloze":  # the scorer's prompt: the templated question and the answer's words before the span
                text = FormatText(len(items), _mean(len(i["question"]) + len(i["answer_prefix"]) for i in items),
                                  _mean(len(i["target"]) for i in items),
                                  float(max((len(i["target"]) for i in items), default=0)))
            else:
                text = FormatText(len(items), _mean(len(i["prompt"]) for i in items))
            formats.setdefault(fmt, {})[set_name] = text
    requests = behaviour_data.load_behaviours(str(folder / "jbb" / "harmful-behaviors.csv"), seed=0)  # no draw
    by_category = {c: [r for r in requests if r["category"] == c] for c in dict.fromkeys(r["category"] for r in requests)}
    hp = load_hp_qa(folder / "hp_qa" / "hp_qa_en.csv")
    return ReferenceData(
        f"measured from {folder}", tofu, formats,
        {c: (len(rows), _mean(len(r["goal"]) for r in rows)) for c, rows in by_category.items()},
        (len(hp), _mean(len(r["question"]) for r in hp), _mean(len(r["affirmative_response"]) for r in hp)))


#: ``measure_reference`` of the reference files (TOFU from locuslab/TOFU, JailbreakBench's harmful-behaviors.csv,
#: Schwinn et al.'s hp_qa_en.csv), for machines without them; a test checks it against the files where they are.
BUILT_IN = ReferenceData(
    "built-in figures (measured from TOFU, JBB-Behaviors and the HP Q&A; --data DIR measures them again)",
    tofu={
        "full": SplitText(4000, 70.1, 169.2),
        "forget01": SplitText(40, 79.0, 183.2),
        "forget05": SplitText(200, 76.7, 176.5),
        "forget10": SplitText(400, 76.6, 181.5),
        "retain99": SplitText(3960, 70.0, 169.1),
        "retain95": SplitText(3800, 69.8, 168.8),
        "retain90": SplitText(3600, 69.4, 167.8),
        "forget01_perturbed": SplitText(40, 79.0, 183.2, 94.2, 217.2, 215.2, 5),
        "forget05_perturbed": SplitText(200, 76.7, 176.5, 93.5, 203.6, 200.9, 5),
        "forget10_perturbed": SplitText(400, 76.6, 181.5, 93.9, 206.7, 202.4, 5),
        "retain_perturbed": SplitText(400, 63.0, 166.3, 83.3, 197.0, 194.8, 5),
        "real_authors_perturbed": SplitText(100, 58.4, 13.8, 0.0, 0.0, 13.4, 3),
        "world_facts_perturbed": SplitText(117, 56.0, 10.1, 0.0, 0.0, 10.1, 3),
    },
    formats={
        "mcqa": {"forget": FormatText(400, 899.9), "retain": FormatText(400, 847.3)},
        "cloze": {"forget": FormatText(390, 203.2, 19.9, 76.0), "retain": FormatText(382, 174.5, 16.6, 55.0)},
        "analogy": {"forget": FormatText(52, 266.0), "retain": FormatText(59, 243.1)},
        "odd_one_out": {"forget": FormatText(400, 741.4), "retain": FormatText(400, 757.3)},
        "comprehension_qa": {"forget": FormatText(400, 1011.4), "retain": FormatText(400, 922.3)},
        "comprehension_mcqa": {"forget": FormatText(400, 1815.9), "retain": FormatText(400, 1689.4)},
    },
    behaviours={"Harassment/Discrimination": (10, 95.1), "Malware/Hacking": (10, 75.2), "Physical harm": (10, 82.4),
                "Economic harm": (10, 86.4), "Fraud/Deception": (10, 86.7), "Disinformation": (10, 80.7),
                "Sexual/Adult content": (10, 77.9), "Privacy": (10, 83.3), "Expert advice": (10, 96.1),
                "Government decision-making": (10, 96.2)},
    hp_qa=(55, 44.5, 30.7),
)


def reference_data(folder: Path | None, params: config.Params) -> ReferenceData:
    """The figures measured from ``folder`` when it holds the three data sets, else :data:`BUILT_IN`."""
    if folder is not None and all((folder / p).exists() for p in ("tofu", "jbb/harmful-behaviors.csv",
                                                                    "hp_qa/hp_qa_en.csv")):
        return measure_reference(folder, params.forget_split, params.format_options, params.format_seed,
                                 params.format_max_items)
    return BUILT_IN


class Lengths:
    """Mean tokens of what the notebooks put to a model: characters of :class:`ReferenceData` over
    ``chars_per_token``, a prompt with its template around it, an answer with its EOS (as ``models.encode_qa``), and
    ``decode_fraction`` of ``max_new_tokens`` for every decoded sequence."""

    def __init__(self, data: ReferenceData, chars_per_token: float = CHARS_PER_TOKEN, decode_fraction: float = 1.0,
                 template: models.PromptTemplate = models.TEMPLATES["phi"]):
        if chars_per_token <= 0 or not 0 < decode_fraction <= 1:
            raise ValueError(f"chars_per_token must be > 0 and decode_fraction in (0, 1]; got {chars_per_token}, "
                             f"{decode_fraction}")
        self.data, self.chars_per_token, self.decode_fraction = data, chars_per_token, decode_fraction
        self.template_chars = len(template.prompt(""))

    def tokens(self, chars: float) -> float:
        return chars / self.chars_per_token

    def split(self, file: str) -> SplitText:
        try:
            return self.data.tofu[file]
        except KeyError:
            raise KeyError(f"no figures for the TOFU file {file!r}; known: {sorted(self.data.tofu)}") from None

    def rows(self, file: str) -> int:
        return self.split(file).rows

    def prompt(self, file: str, paraphrased: bool = False) -> float:
        s = self.split(file)
        return self.tokens(self.template_chars + (s.paraphrased_question if paraphrased else s.question))

    def answer(self, file: str, eos: bool = True) -> float:
        return self.tokens(self.split(file).answer) + (1 if eos else 0)

    def qa(self, file: str) -> float:
        return self.prompt(file) + self.answer(file)

    def decoded(self, max_new_tokens: int) -> float:
        return self.decode_fraction * max_new_tokens


# =============================================================================================
# Costs: token counts by kind and model size, as line items a reader can check
# =============================================================================================


@dataclass
class Cost:
    """What one notebook sends through the models: line items (label, kind, parameters of the model, decoding batch
    rows for generated tokens, else 0) -> tokens, with ``what`` saying in one line what is counted, ``simplified``
    where the count departs from the code, and the unlearning runs it trains (a run trained by an earlier notebook is
    read from the run store, not counted again)."""

    notebook: str
    what: str = ""
    items: dict[tuple[str, str, float, int], float] = field(default_factory=dict)
    simplified: list[str] = field(default_factory=list)
    runs_trained: list[str] = field(default_factory=list)

    def add(self, label: str, kind: str, parameters: float, tokens: float, rows: int = 0) -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown kind {kind!r}; use {', '.join(KINDS)}")
        if kind == GENERATED and rows < 1:
            raise ValueError(f"{label}: generated tokens need the decoding batch's rows")
        if tokens:
            key = (label, kind, float(parameters), int(rows) if kind == GENERATED else 0)
            self.items[key] = self.items.get(key, 0.0) + float(tokens)

    def tokens(self, kind: str, label: str | None = None) -> float:
        """Tokens of one kind, summed over model sizes (and over labels, unless ``label`` names one)."""
        return sum(t for (lab, k, _, _), t in self.items.items() if k == kind and (label is None or lab == label))

    def by_size(self) -> dict[float, dict[str, float]]:
        out: dict[float, dict[str, float]] = {}
        for (_, kind, size, _), tokens in self.items.items():
            out.setdefault(size, dict.fromkeys(KINDS, 0.0))[kind] += tokens
        return dict(sorted(out.items()))

    def flops(self) -> dict[str, float]:
        """FLOPs by kind: 6·N per trained token, 2·N per forward-only or generated token."""
        out = dict.fromkeys(KINDS, 0.0)
        for (_, kind, size, _), tokens in self.items.items():
            out[kind] += FLOPS_PER_TOKEN[kind] * size * tokens
        return out


@dataclass(frozen=True)
class Gpu:
    """A GPU's sustained rates: ``peak`` FLOP/s times the model-FLOPs utilisation of batched passes (training,
    scoring, prefill) or of token-by-token decoding, and no faster than ``decode_step_s`` per decoding step."""

    name: str
    peak: float
    mfu_train: float
    mfu_generate: float
    decode_step_s: float = 0.0

    def seconds(self, kind: str, parameters: float, tokens: float, rows: int = 0) -> float:
        flops = FLOPS_PER_TOKEN[kind] * parameters * tokens
        if kind != GENERATED:
            return flops / (self.peak * self.mfu_train)
        return max(flops / (self.peak * self.mfu_generate), tokens / rows * self.decode_step_s)

    def hours(self, cost: Cost) -> float:
        return sum(self.seconds(kind, size, tokens, rows)
                   for (_, kind, size, rows), tokens in cost.items.items()) / 3600


@dataclass(frozen=True)
class CpuRates:
    """Tokens per second measured here on a model of ``parameters``; a model of size M runs at parameters / M of them
    (compute-bound: time per token grows with the parameters)."""

    parameters: float
    trained: float
    forward: float
    generated: float

    def hours(self, cost: Cost) -> float:
        rate = {TRAINED: self.trained, FORWARD: self.forward, GENERATED: self.generated}
        return sum(tokens / (rate[kind] * self.parameters / size)
                   for (_, kind, size, _), tokens in cost.items.items()) / 3600


def model_parameters(name: str, params: config.Params) -> float:
    """Parameters of a model the profile names: a Hub name of :data:`MODEL_PARAMETERS`, or a model of the run store
    (``target``, ``unlearned-npo``, ...), which has the size of the profile's ``model``."""
    if name in MODEL_PARAMETERS:
        return MODEL_PARAMETERS[name]
    if params.model in MODEL_PARAMETERS and (name in ("base", "target") or name.startswith(runs.UNLEARNED_PREFIX)
                                             or name in params.retain_splits):
        return MODEL_PARAMETERS[params.model]
    raise KeyError(f"no parameter count for {name!r}: add it to MODEL_PARAMETERS (known: {sorted(MODEL_PARAMETERS)})")


# --------------------------------------------------------------------------- shared pieces of the notebooks


def step_parts(settings: Mapping[str, Any]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The sub-batches (``forget``, ``retain``, ``forget_idk``, ``forget_alt``, ``forget_sampled``) one step of
    ``unlearning.UnlearningLoss`` with these settings sends through the trained model (each then gets a backward) and
    through the frozen reference: the method registry's own account (``unlearning.step_parts``, from each method's
    ``forget_reads``, ``retain_reads`` and reference parts), each sub-batch at most once through each (tests check
    this against the loss)."""
    return unlearning.step_parts(settings)


def part_tokens(params: config.Params, forget: str, lengths: Lengths) -> dict[str, float]:
    """Mean tokens of one row of each sub-batch :func:`step_parts` may name, on forget split ``forget``: the Q&A pairs,
    the question with a refusal (IDK, DPO), with an alternate answer (AltPO: wrong but plausible, about as long as the
    true answer) and with the model's own sampled answer (entropy on sampled positions: ``sample_max_new_tokens``)."""
    return {"forget": lengths.qa(forget), "retain": lengths.qa(retain_split_for(forget)),
            "forget_idk": lengths.prompt(forget) + idk_tokens(lengths),
            "forget_alt": lengths.prompt(forget) + lengths.answer(forget),
            unlearning.SAMPLED: lengths.prompt(forget) + lengths.decoded(params.sample_max_new_tokens)}


def has_split(params: config.Params, split: str) -> bool:
    """Whether the profile's data source has ``split`` (``pipeline.data_splits``: known without reading the data)."""
    try:
        return split in pipeline.data_splits(params)
    except (OSError, ValueError):
        return False


def alternate_prompt_tokens(lengths: Lengths, forget: str) -> float:
    """Mean tokens of the prompt AltPO's alternates are sampled from: the template around the question, its true
    answer and the instruction (``unlearning.alternate_prompt``)."""
    s = lengths.split(forget)
    return lengths.tokens(lengths.template_chars + len(unlearning.alternate_prompt("", "")) + s.question + s.answer)


def sample_alternates(cost: Cost, params: config.Params, run: str, lengths: Lengths) -> None:
    """``pipeline.altpo_alternates`` of one run on data without ``<forget split>_alternates`` (real TOFU):
    ``altpo_n_alternates`` answers per forget question sampled from the target at ``max_new_tokens`` each, decoded in
    chunks of :data:`SAMPLE_CHUNK` rows, the prompt prefilled once per chunk. Nothing where the corpus ships them."""
    rp = pipeline.run_params(params, run)
    settings = pipeline.unlearning_settings(params, run)
    if "forget_alt" not in unlearning.method_spec(settings["method"]).batch_parts:
        return
    if has_split(rp, alternates_split_for(rp.forget_split)):
        return
    n = int(settings.get("altpo_n_alternates", unlearning.OPTIONS["altpo_n_alternates"].default))
    rows = lengths.rows(rp.forget_split)
    size = model_parameters("target", params)
    label = "AltPO alternates sampled from the target"
    cost.add(label, FORWARD, size, rows * math.ceil(n / SAMPLE_CHUNK) * alternate_prompt_tokens(lengths, rp.forget_split))
    cost.add(label, GENERATED, size, rows * n * lengths.decoded(rp.max_new_tokens), rows=min(SAMPLE_CHUNK, rows * n))


def idk_tokens(lengths: Lengths) -> float:
    """Mean tokens of a refusal answer of IDK and DPO (``unlearning.IDK_ANSWERS``), with its EOS."""
    return lengths.tokens(statistics.fmean(len(a) for a in unlearning.IDK_ANSWERS)) + 1


@dataclass(frozen=True)
class Schedule:
    """An unlearning run's schedule as ``training.train`` and ``pipeline.unlearned_model`` compute it."""

    examples: int
    epochs: float
    steps_per_epoch: int  # optimizer steps: the training loop's count
    total_steps: int
    kept: tuple[int, ...]  # the steps whose weights are kept (every unlearn_save_every and each epoch's end)
    per_epoch_kept: int  # pipeline's steps per epoch, which decides an epoch's end when keeping weights


def schedule(params: config.Params, run: str, lengths: Lengths) -> Schedule:
    rp = pipeline.run_params(params, run)
    n = lengths.rows(rp.forget_split)  # one example per forget row
    per_epoch = max(1, math.ceil(math.ceil(n / rp.unlearn_batch_size) / rp.unlearn_grad_accum))
    total = max(1, math.ceil(per_epoch * rp.unlearn_epochs))
    per_epoch_kept = max(1, math.ceil(n / (rp.unlearn_batch_size * rp.unlearn_grad_accum)))
    save = rp.unlearn_save_every
    kept = tuple(s for s in range(1, total + 1) if (save and s % save == 0) or s % per_epoch_kept == 0)
    return Schedule(n, float(rp.unlearn_epochs), per_epoch, total, kept, per_epoch_kept)


def sparse_steps(plan: Schedule, every: int | None) -> list[int]:
    """``runs.sparse_steps``: every ``every``-th kept step, each epoch's end and the last."""
    if not every or not plan.kept:
        return list(plan.kept)
    return [s for s in plan.kept if s % every == 0 or s % plan.per_epoch_kept == 0 or s == plan.kept[-1]]


def train_unlearning(cost: Cost, params: config.Params, run: str, lengths: Lengths, trained: set[str]) -> Schedule:
    """One unlearning run (``pipeline.unlearned_model``): per epoch, every forget row with its paired retain row
    through the parts of :func:`step_parts`, and AltPO's alternates sampled first where the data ships none
    (:func:`sample_alternates`); nothing when an earlier step trained it (``trained``, updated)."""
    plan = schedule(params, run, lengths)
    if run in trained:
        return plan
    trained.add(run)
    cost.runs_trained.append(run)
    settings = pipeline.unlearning_settings(params, run)
    forget = pipeline.run_params(params, run).forget_split
    part = part_tokens(params, forget, lengths)
    on_model, on_reference = step_parts(settings)
    unknown = sorted(set(on_model + on_reference) - set(part))
    if unknown:
        raise KeyError(f"run {run!r}: no token estimate for the sub-batch(es) {unknown} of method "
                       f"{settings['method']!r}; add them to part_tokens")
    sample_alternates(cost, params, run, lengths)
    size = model_parameters(params.model, params)
    pairs = plan.examples * plan.epochs
    cost.add("unlearning runs", TRAINED, size, pairs * sum(part[p] for p in on_model))
    cost.add("unlearning runs, reference forward", FORWARD, size, pairs * sum(part[p] for p in on_reference))
    return plan


def greedy(cost: Cost, label: str, size: float, prompts: float, prompt_tokens: float, max_new_tokens: float,
           lengths: Lengths, batch: int) -> None:
    """Greedy decoding of ``prompts`` prompts in batches of ``batch``: their prefill, then the decoded tokens."""
    cost.add(label, FORWARD, size, prompts * prompt_tokens)
    cost.add(label, GENERATED, size, prompts * lengths.decoded(max_new_tokens), rows=batch)


def sample_and_score(cost: Cost, label: str, size: float, prompts: float, prompt_tokens: float, n: int,
                     max_new_tokens: int, lengths: Lengths, chunk: int = SCORE_CHUNK, batch: int = 32) -> None:
    """``metrics.sampling.sample_and_score``: one greedy answer per prompt (batches of ``batch``) and n sampled
    answers, decoded in chunks of ``chunk`` rows, the prompt prefilled once per chunk (the shared prompt cache)."""
    greedy(cost, f"{label}, greedy", size, prompts, prompt_tokens, max_new_tokens, lengths, batch)
    cost.add(f"{label}, sampled answers", FORWARD, size, prompts * math.ceil(n / chunk) * prompt_tokens)
    cost.add(f"{label}, sampled answers", GENERATED, size, prompts * n * lengths.decoded(max_new_tokens), rows=chunk)


def tofu_evaluation(cost: Cost, label: str, size: float, params: config.Params, lengths: Lengths,
                    forget_split: str, roles: Sequence[str] | None = None, max_items: int | None = None,
                    models_evaluated: float = 1) -> None:
    """``metrics.tofu.evaluate_tofu`` of ``models_evaluated`` models: per split, the answer, the paraphrased answer
    (forget and retain) and each perturbed answer scored by one teacher-forced pass, and the greedy answers."""
    for role, (kind, file) in tofu_eval_splits(forget_split).items():
        if roles is not None and role not in roles:
            continue
        s = lengths.split(file)
        n = models_evaluated * (min(s.rows, max_items) if max_items else s.rows)
        prompt = lengths.prompt(file)
        scored = lengths.qa(file) + s.perturbed * (prompt + lengths.tokens(s.perturbed_answer) + 1)
        if kind != "knowledge":
            scored += prompt + lengths.tokens(s.paraphrased_answer) + 1
        cost.add(label, FORWARD, size, n * scored)
        greedy(cost, label, size, n, prompt, params.max_new_tokens, lengths, params.eval_batch_size)


def holdout_file(lengths: Lengths, forget_split: str) -> tuple[str, bool]:
    """The holdout split matched to ``forget_split`` in the reference figures, or the forget split standing in for
    it (same authors' count and generator; TOFU's holdout10 has forget10's 400 rows) when the figures lack it;
    the flag says which."""
    holdout = holdout_split_for(forget_split)
    return (holdout, False) if holdout in lengths.data.tofu else (forget_split, True)


def privacy_evaluation(cost: Cost, label: str, size: float, params: config.Params, lengths: Lengths,
                       models_evaluated: float = 1) -> None:
    """``pipeline.evaluate_privacy`` of ``models_evaluated`` models: per model, at most ``eval_max_items`` forget and
    as many holdout items, each scored by one teacher-forced pass (LOSS, ZLib, MinK, MinK++, exact memorisation and
    extraction strength from the same logits) and, with ``mia_gradnorm``, by a forward and a backward of its own for
    GradNorm (batch 1), counted as a trained token (6·N) though no step is taken. Nothing when the data has no holdout
    split: the notebooks skip the metrics and say what to download."""
    holdout = holdout_split_for(params.forget_split)
    if not has_split(params, holdout):
        cost.simplified.append(f"privacy metrics not counted: the data source has no {holdout} (the notebooks skip them)")
        return
    file, stand_in = holdout_file(lengths, params.forget_split)
    if stand_in:
        note = f"{holdout} counted with {file}'s rows and lengths (no figures for it)"
        if note not in cost.simplified:
            cost.simplified.append(note)
    items = sum(min(lengths.rows(f), params.eval_max_items or lengths.rows(f)) * lengths.qa(f)
                for f in (params.forget_split, file))
    cost.add(f"{label}, teacher-forced", FORWARD, size, models_evaluated * items)
    if params.mia_gradnorm:
        cost.add(f"{label}, GradNorm (forward and backward per item)", TRAINED, size, models_evaluated * items)


# --------------------------------------------------------------------------- PS (notebook 03)

HELDOUT_FILE = "retain_perturbed"
#: What notebook 03 asks of a setting (``calibration.CALIBRATION_METRICS``), all six metrics (``TABLE_METRICS``), and
#: what completing a RetainFirst profile adds (PS-similar on both sets).
CM = {"heldout": ("ps_exact", "ps_perturb"), "forget": ("ps_exact", "ps_perturb", "ps_similar")}
ALL_PS = {"heldout": ("ps_exact", "ps_perturb", "ps_similar"), "forget": ("ps_exact", "ps_perturb", "ps_similar")}
COMPLETE = {"heldout": ("ps_similar",), "forget": ("ps_similar",)}


def ps_tokens(lengths: Lengths, file: str, items: int, metrics: Iterable[str], with_risks: bool = False
              ) -> tuple[float, float]:
    """(forward, generated) tokens of ``metrics.ps.split_ps`` on ``items`` rows of ``file``: PS-exact and PS-perturb
    by one teacher-forced pass each (question or paraphrased question, then the answer without EOS); PS-similar by
    its binary search, about log2(|y| + 1) probes per item, each prefilling the prompt and about half the answer and
    decoding the other half (searched up to |y|: an upper bound, the code stops at the exact solution)."""
    metrics = set(metrics)
    answer = lengths.answer(file, eos=False)
    forward = generated = 0.0
    if metrics & {"ps_exact", "ps_similar"}:
        forward += items * (lengths.prompt(file) + answer)
    if "ps_perturb" in metrics:
        forward += items * (lengths.prompt(file, paraphrased=True) + answer)
    if "ps_similar" in metrics:
        probes = math.ceil(math.log2(answer + 1))
        forward += items * probes * (lengths.prompt(file) + answer / 2)
        generated += items * probes * answer / 2
    if with_risks:
        forward += items * lengths.qa(file)
    return forward, generated


def ps_settings(cost: Cost, label: str, size: float, count: float, lengths: Lengths, metrics: Mapping[str, Sequence[str]],
                heldout: tuple[str, int], forget: tuple[str, int], batch: int, with_risks: bool = False) -> None:
    """``count`` settings evaluated on the held-out retain and forget sets, ``metrics`` asked on each; PS-similar
    decodes its probes in chunks of ``batch``."""
    for name, (file, items) in (("heldout", heldout), ("forget", forget)):
        forward, generated = ps_tokens(lengths, file, items, metrics.get(name, ()), with_risks)
        cost.add(label, FORWARD, size, count * forward)
        cost.add(label, GENERATED, size, count * generated, rows=batch)


def calibrated_settings(coarse: Sequence[float], fine_points: int, allowed: Sequence[float] | None = None,
                        known: Sequence[float] = ()) -> int:
    """Settings ``calibration.calibrate`` evaluates at most: every coarse value but the ``known`` ones (a = 0 and t = 0
    are the model before), then ``fine_points`` values inside one region between neighbouring coarse values (for a
    discrete control, the allowed values inside it, at most ``fine_points``): the widest region, an upper bound."""
    coarse = sorted(set(coarse))
    evaluated = len([c for c in coarse if c not in known])
    if len(coarse) < 2:
        return evaluated
    if allowed is None:
        return evaluated + fine_points
    inside = [sum(1 for v in allowed if lo < v < hi) for lo, hi in zip(coarse, coarse[1:])]
    return evaluated + min(fine_points, max(inside))


# =============================================================================================
# One function per notebook: what it sends through each model on the profile
# =============================================================================================


def notebook_01(params: config.Params, lengths: Lengths, trained: set[str] | None = None) -> Cost:
    size = model_parameters(params.model, params)
    splits = ["full", *params.retain_splits]
    cost = Cost("01", f"fine-tune the target on full and the retain model(s) on {', '.join(params.retain_splits)} for "
                      f"{params.finetune_epochs:g} epochs; TOFU evaluation and privacy metrics of base, target and "
                      "retain model(s)")
    for split in splits:
        cost.add(f"fine-tune on {split}", TRAINED, size, params.finetune_epochs * lengths.rows(split) * lengths.qa(split))
    tofu_evaluation(cost, "TOFU evaluation", size, params, lengths, params.forget_split,
                    max_items=params.eval_max_items, models_evaluated=1 + len(splits))
    privacy_evaluation(cost, "privacy metrics", size, params, lengths, models_evaluated=1 + len(splits))
    if params.lora_rank:
        cost.simplified.append("LoRA: trained tokens counted at 6N, as full fine-tuning (an upper bound)")
    return cost


def notebook_02(params: config.Params, lengths: Lengths, trained: set[str] | None = None) -> Cost:
    trained = set() if trained is None else trained
    size = model_parameters(params.model, params)
    with_reference = [m for m in unlearning.METHODS if unlearning.method_spec(m).needs_reference]
    cost = Cost("02", f"{len(params.methods)} unlearning runs ({', '.join(params.methods)}) of "
                      f"{params.forget_split} paired with retain, reference forward for {'/'.join(with_reference)}; "
                      "TOFU evaluation and privacy metrics of each and greedy ROUGE at its kept steps")
    for run in params.methods:
        plan = train_unlearning(cost, params, run, lengths, trained)
        tofu_evaluation(cost, "TOFU evaluation of each run", size, params, lengths, params.forget_split,
                        max_items=params.eval_max_items)
        privacy_evaluation(cost, "privacy metrics of each run", size, params, lengths)
        steps = len(sparse_steps(plan, params.unlearn_save_every))
        files = tofu_eval_splits(pipeline.run_params(params, run).forget_split)
        limit = params.trajectory_max_items or params.eval_max_items
        for role in ("forget", "retain"):
            file = files[role][1]
            greedy(cost, "greedy ROUGE along each run", size, steps * min(lengths.rows(file), limit),
                   lengths.prompt(file), params.max_new_tokens, lengths, params.eval_batch_size)
    return cost


def notebook_03(params: config.Params, lengths: Lengths, trained: set[str] | None = None) -> Cost:
    trained = set() if trained is None else trained
    size = model_parameters(params.model, params)
    heldout_rows = lengths.rows(HELDOUT_FILE)
    if "retain_heldout" not in lengths.data.tofu:  # real TOFU: the last heldout_authors authors of retain_perturbed
        heldout_rows = min(heldout_rows, params.heldout_authors * QUESTIONS_PER_AUTHOR)
    heldout = (HELDOUT_FILE, min(heldout_rows, params.ps_heldout_items or heldout_rows))
    forget_file = f"{params.forget_split}_perturbed"
    forget = (forget_file, min(lengths.rows(forget_file), params.ps_max_items or lengths.rows(forget_file)))
    methods = list(params.calibration_methods)
    cost = Cost("03", f"PS (Wang et al.) on {heldout[1]} held-out retain + {forget[1]} forget items of every setting: "
                      f"GD's early stopping, capping and mixing; {len(methods)} calibration runs under all three controls "
                      f"and their capped reruns; interference runs; mixing on {', '.join(params.calibration_splits)}")
    cost.simplified += ["every setting computes every PS metric it may need and every fine grid is searched (the code "
                        "skips PS-similar where held-out retain already fails): an upper bound",
                        "PS-similar: log2(|y|+1) probes per item, each decoding half the answer (binary search up to |y|)"]

    def settings(label: str, count: float, metrics=CM, forget_set=forget, risks: bool = False) -> None:
        ps_settings(cost, label, size, count, lengths, metrics, heldout, forget_set, params.eval_batch_size, risks)

    settings("PS of the target before unlearning", 1, ALL_PS)
    # 1: GD's kept steps, coarse to fine, with the risks (and the target's risks once)
    gd = train_unlearning(cost, params, "gd", lengths, trained)
    settings("GD early stopping (with risks)", calibrated_settings(
        calibration.stopping_grid(gd.kept, params.stopping_every), params.calib_fine, gd.kept, known=(0,)), risks=True)
    settings("GD early stopping (with risks)", 1, {}, risks=True)
    greedy(cost, "answers at three steps", size, 3 * 6, lengths.prompt(forget_file), params.max_new_tokens, lengths,
           params.eval_batch_size)
    # what erodes the held-out memory: each interference run traced at its sparse steps
    for run in params.interference_runs:
        if run == "gd":
            continue  # section 1's trace is reused
        plan = train_unlearning(cost, params, run, lengths, trained)
        settings("interference traces", len(sparse_steps(plan, params.unlearn_save_every)))
    # 2: GD under capping (one run per cap) and model mixing
    for delta in params.cap_deltas:
        capped = calibration.capped_run(params, "gd", float(delta))
        train_unlearning(cost, capped.params, capped.run, lengths, trained)
    settings("GD capping and mixing sweeps", len(params.cap_deltas) + params.calib_coarse)
    # 3: model mixing calibrated per method, completed at the calibrated a and at a = 1
    grid = calibration.mixing_grid(params.calib_coarse)
    for run in methods:
        train_unlearning(cost, params, run, lengths, trained)
        # GD's coarse grid is section 2's sweep, reused; only its fine grid is new
        count = params.calib_fine if run == "gd" else calibrated_settings(grid, params.calib_fine, known=(0.0,))
        settings("mixing calibration per method", count)
        settings("mixing calibration per method", 2, COMPLETE)
    # 4: capping and early stopping of every calibrated run
    for run in methods:
        if run == "gd":
            continue  # sections 1-2 are reused
        if pipeline.unlearning_settings(params, run)["method"] in unlearning.CAPPABLE_METHODS:
            caps = sorted(float(d) for d in params.cap_deltas)
            coarse = sorted(set(caps[::2]) | {caps[-1]})  # as calibration.calibrate_capping
            count = calibrated_settings(coarse, len(caps), caps)
            # which fine δ gets trained depends on the results; any δ off the coarse grid stands for it
            for delta in (coarse + [d for d in caps if d not in coarse])[:count]:
                capped = calibration.capped_run(params, run, delta)
                train_unlearning(cost, capped.params, capped.run, lengths, trained)
            settings("capping and early stopping per method", count)
        plan = schedule(params, run, lengths)
        settings("capping and early stopping per method", calibrated_settings(
            calibration.stopping_grid(plan.kept, params.stopping_every), params.calib_fine, plan.kept, known=(0,)))
    # 5: Table 3, each run at its best control (one full profile where that is not mixing)
    settings("calibrated comparison", len(methods), ALL_PS)
    # 6: every run retrained on the other forget splits and calibrated by mixing there
    for split in params.calibration_splits:
        if split == params.forget_split:
            continue
        split_file = f"{split}_perturbed"
        split_forget = (split_file, min(lengths.rows(split_file), params.ps_max_items or lengths.rows(split_file)))
        settings(f"mixing on {split}", 1, forget_set=split_forget)
        split_params = params
        for run in methods:
            split_params, name = calibration.split_run(split_params, run, split)
            train_unlearning(cost, split_params, name, lengths, trained)
        settings(f"mixing on {split}", len(methods) * calibrated_settings(
            calibration.mixing_grid(params.split_calib_coarse), params.split_calib_fine, known=(0.0,)),
            forget_set=split_forget)
    return cost


def notebook_04(params: config.Params, lengths: Lengths, trained: set[str] | None = None) -> Cost:
    size = model_parameters(params.model, params)
    count = len(params.format_models) if params.format_models else 3 + len(params.methods)
    cost = Cost("04", f"{count} models (base, target, retain, every run of 02) scored on "
                      f"{len(lengths.data.formats)} formats: one forward per MCQA-style item, cloze span scored and "
                      "filled greedily, comprehension Q&A answered greedily")
    for fmt, sets in lengths.data.formats.items():
        for text in sets.values():
            prompt = lengths.tokens(text.prompt)
            if fmt == "cloze":
                prompt += lengths.tokens(lengths.template_chars)
                cost.add("cloze", FORWARD, size, count * text.items * (prompt + lengths.tokens(text.target)))
                greedy(cost, "cloze", size, count * text.items, prompt,
                       math.ceil(lengths.tokens(text.longest_target)) + 4, lengths, params.eval_batch_size)
            elif fmt == "comprehension_qa":
                greedy(cost, fmt, size, count * text.items, prompt, params.max_new_tokens, lengths,
                       params.eval_batch_size)
            else:
                cost.add("MCQA-style formats", FORWARD, size, count * text.items * prompt)
                if params.format_likelihood:
                    cost.add("option likelihood", FORWARD, size, count * text.items * params.format_options * prompt)
    if params.format_likelihood:
        cost.simplified.append("option likelihood: each option's pass taken as long as the lettered prompt")
    return cost


def notebook_05(params: config.Params, lengths: Lengths, trained: set[str] | None = None) -> Cost:
    trained = set() if trained is None else trained
    size = model_parameters(params.model, params)
    forget = params.forget_split
    questions = len(leakage.evenly_spaced(range(lengths.rows(forget)), params.sample_max_items))
    retain_file = tofu_eval_splits(forget)["retain"][1]
    retain = len(leakage.evenly_spaced(range(lengths.rows(retain_file)), params.sample_max_items))
    n, longest = params.n_samples, params.sample_max_new_tokens
    cost = Cost("05", f"{n} samples x {questions} forget questions x {2 + len(params.regime_runs)} models (target, "
                      f"retain, the regime step of {', '.join(params.regime_runs)}); greedy along each regime run; "
                      + (f"keyword Q&A on {params.hp_model} (plain and prefixed)" if params.hp_model else "no keyword Q&A"))
    sample_and_score(cost, "forget questions", size, 2 * questions, lengths.prompt(forget), n, longest, lengths)
    for run in params.regime_runs:
        plan = train_unlearning(cost, params, run, lengths, trained)
        count = len(plan.kept)
        coarse = sorted({*range(0, count, 5), count - 1})  # as leakage.coarse_then_fine, stride 5
        measured = len(coarse) + max([b - a - 1 for a, b in zip(coarse, coarse[1:])], default=0)
        for file, rows in ((forget, questions), (retain_file, retain)):
            greedy(cost, "greedy along the regime runs", size, measured * rows, lengths.prompt(file), longest, lengths,
                   params.eval_batch_size)
        sample_and_score(cost, "forget questions", size, questions, lengths.prompt(forget), n, longest, lengths)
    if params.regime_runs:
        cost.simplified.append("greedy along a run: the coarse steps and the widest fine gap (an upper bound)")
    if params.hp_model:
        hp_size = model_parameters(params.hp_model, params)
        count, question, prefix = lengths.data.hp_qa
        hp_questions = len(leakage.evenly_spaced(range(count), params.sample_max_items))
        plain = lengths.tokens(len(models.template_for(params.hp_model).prompt("")) + question)
        for prompt in (plain, plain + lengths.tokens(prefix)):
            sample_and_score(cost, "keyword Q&A", hp_size, hp_questions, prompt, n, longest, lengths)
        if params.hp_source == "synthetic":
            cost.simplified.append("keyword Q&A counted with the HP Q&A's questions, not the synthetic ones")
    return cost


def notebook_06(params: config.Params, lengths: Lengths, trained: set[str] | None = None) -> Cost:
    trained = set() if trained is None else trained
    size = model_parameters(params.model, params)
    swept, f_points = entropy.lambda_f_points(params)
    swept, r_points = entropy.lambda_r_points(swept)
    paper_point, alone_point = entropy.paper_points(f_points, swept)
    all_runs = list(dict.fromkeys([*swept.eo_table_runs, *(p.run for p in f_points), *(p.run for p in r_points)]))
    forget = swept.forget_split
    questions = len(leakage.evenly_spaced(range(lengths.rows(forget)), swept.eo_max_items))
    n, longest = swept.eo_n_samples, swept.sample_max_new_tokens
    others = [t for t in swept.eo_temperatures if float(t) != float(swept.sample_temperature)]
    cost = Cost("06", f"{len(all_runs)} runs (Table 1, {len(f_points)} lambda_f x lr points, {len(r_points)} lambda_r "
                      f"points) and EO on {', '.join(swept.eo_regime_runs)} in the regime ({len(swept.eo_regime_lambda_f_grid)}"
                      f" lambda_f x {len(swept.eo_positions)} placements), each sampled {n} x {questions} forget "
                      f"questions, TOFU utility; {len(others)} more "
                      "temperatures x 2 runs; diversity samples; entropy along 2 runs")
    for run in all_runs:
        train_unlearning(cost, swept, run, lengths, trained)
    # Table 1 and EO in the paper's regime: notebook 05's step of each regime run (here its last step: the paper
    # profile's runs are already in the regime at their end), EO added there at each weight and entropy placement
    regime = {f"{run}@{schedule(swept, run, lengths).total_steps}": (run, schedule(swept, run, lengths).total_steps)
              for run in swept.regime_runs}
    swept, regime_points = entropy.regime_eo_points(swept, regime)
    for point in regime_points:
        plan = train_unlearning(cost, swept, point.run, lengths, trained)
        if point.positions == "sampled":  # one answer sampled per forget example at every step
            cost.add("on-policy samples of EO", GENERATED, size, plan.examples * plan.epochs * lengths.decoded(longest),
                     rows=swept.unlearn_batch_size)
    stepped = len(regime) + len(regime_points) - len({p.base for p in regime_points})
    sample_and_score(cost, "forget questions", size, (len(all_runs) + stepped) * questions, lengths.prompt(forget), n,
                     longest, lengths)
    tofu_evaluation(cost, "model utility", size, swept, lengths, forget, roles=entropy.DIVERSITY_ROLES,
                    max_items=swept.eo_utility_items, models_evaluated=len(all_runs) + stepped)
    sample_and_score(cost, "other temperatures", size, 2 * len(others) * questions, lengths.prompt(forget), n, longest,
                     lengths)
    files = tofu_eval_splits(forget)
    for role in entropy.DIVERSITY_ROLES:
        file = files[role][1]
        rows = len(leakage.evenly_spaced(range(lengths.rows(file)), swept.eo_diversity_items))
        sample_and_score(cost, "diversity", size, len(r_points) * rows, lengths.prompt(file), n, longest, lengths)
    retain_file = files["retain"][1]
    retain = len(leakage.evenly_spaced(range(lengths.rows(retain_file)), swept.eo_max_items))
    for run in dict.fromkeys([alone_point.run, paper_point.run]):
        steps = 1 + len(schedule(swept, run, lengths).kept)  # the target, then every kept step
        cost.add("entropy along", FORWARD, size,
                 steps * (questions * lengths.qa(forget) + retain * lengths.qa(retain_file)))
    return cost


def notebook_07(params: config.Params, lengths: Lengths, trained: set[str] | None = None) -> Cost:
    rows = [{"goal": "", "target": "", "behavior": "", "category": category, "goal_chars": chars}
            for category, (count, chars) in lengths.data.behaviours.items() for _ in range(count)]
    evaluated = alignment.split_behaviours(rows, params).evaluation
    goal = statistics.fmean(r["goal_chars"] for r in evaluated)
    n, longest = params.alignment_n_samples, params.alignment_max_new_tokens
    names = list(params.alignment_models or [])
    cost = Cost("07", f"{n} samples x {len(evaluated)} evaluated JBB requests x {len(names)} aligned models"
                      + (f", each answer judged by {params.safety_judge}" if params.safety_judge != "classifier" else ""))
    if not names:
        cost.simplified.append("alignment_models null: tiny complying and aligned models, not counted")
    if params.behaviours_source == behaviour_data.SYNTHETIC:
        cost.simplified.append("synthetic requests counted as JailbreakBench's")
    for name in names:
        template = (models.template_for(name) if params.alignment_template == models.CHAT
                    else models.get_template(params.alignment_template))
        prompt = lengths.tokens(len(template.prompt("")) + goal)
        model_size = model_parameters(name, params)
        greedy(cost, "aligned models, greedy", model_size, len(evaluated), prompt, longest, lengths,
               params.eval_batch_size)
        cost.add("aligned models, sampled answers", FORWARD, model_size,
                 len(evaluated) * math.ceil(n / SAMPLE_CHUNK) * prompt)
        cost.add("aligned models, sampled answers", GENERATED, model_size, len(evaluated) * n * lengths.decoded(longest),
                 rows=SAMPLE_CHUNK)
        if params.safety_judge != "classifier":
            judge = lengths.tokens(len(HARMBENCH_PROMPT.format(behavior="", generation="")) + goal)
            cost.add("judge", FORWARD, model_parameters(params.safety_judge, params),
                     (n + 1) * len(evaluated) * (judge + lengths.decoded(longest)))
    if names:
        cost.simplified.append("chat templates taken as models.template_for gives them (Mistral as Llama-2's [INST])")
    return cost


def _forget_scores(cost: Cost, label: str, size: float, params: config.Params, lengths: Lengths, items: float,
                   models_scored: float) -> None:
    """``attacks.forget_scores`` of ``models_scored`` models on ``items`` forget items: the TOFU forget split's
    passes (answer, paraphrased, perturbed) and greedy answers, and one teacher-forced pass per forget and holdout
    item for extraction strength and MinK (no GradNorm)."""
    tofu_evaluation(cost, label, size, params, lengths, params.forget_split, roles=("forget",), max_items=int(items),
                    models_evaluated=models_scored)
    holdout, _ = holdout_file(lengths, params.forget_split)
    cost.add(label, FORWARD, size, models_scored * items * (lengths.qa(params.forget_split) + lengths.qa(holdout)))


def notebook_08(params: config.Params, lengths: Lengths, trained: set[str] | None = None) -> Cost:
    """The robustness attacks (``studies.recovery``) on every notebook-02 run, the retain model and the target, and
    the regime-matched NPO run (trained here)."""
    trained = set() if trained is None else trained
    size = model_parameters(params.model, params)
    forget = params.forget_split
    rows = lengths.rows(forget)
    items = min(rows, params.attack_items or rows)
    models_attacked = len(params.attack_runs or params.methods) + 2 + (1 if params.quant_regime_share else 0)
    cost = Cost("08", f"{models_attacked} models x (relearning 1 curve, RTT {params.rtt_held_out} folds x "
                      f"{len(params.rtt_lr_grid)} lrs, {len(params.quant_schemes)} quantisation schemes, "
                      f"{3 + 2 * len(params.probe_shots)} probes) on {items} forget items")
    if params.quant_regime_share and "npo" in params.methods:
        regime = pipeline.with_run(params, "npo_regime_matched", **pipeline.own_settings(params, "npo"))
        train_unlearning(cost, regime, "npo_regime_matched", lengths, trained)  # NPO's schedule, at another rate
        cost.simplified.append("the regime-matched run counted with NPO's schedule (only its learning rate differs)")
    qa = lengths.qa(forget)
    epochs = float(params.relearn_epochs)
    batch = (params.relearn_batch_size or params.finetune_batch_size) * params.finetune_grad_accum
    steps = math.ceil(epochs * rows / batch)
    points = steps // params.relearn_curve_every + 2
    cost.add("relearning", TRAINED, size, models_attacked * epochs * rows * qa)
    greedy(cost, "relearning curve", size, models_attacked * points * items, lengths.prompt(forget),
           params.max_new_tokens, lengths, params.eval_batch_size)
    _forget_scores(cost, "forget scores (before, relearned, quantised)", size, params, lengths, items,
                   models_attacked * (2 + len(params.quant_schemes)))
    held = params.rtt_held_out
    fold = rows * 0.9 / params.rtt_folds  # name questions left out (about a tenth)
    cost.add("held-out-fact relearning", TRAINED, size,
             models_attacked * held * len(params.rtt_lr_grid) * epochs * (params.rtt_folds - 1) * fold * qa)
    greedy(cost, "held-out-fact relearning", size, models_attacked * held * (1 + len(params.rtt_lr_grid)) * fold,
           lengths.prompt(forget), params.max_new_tokens, lengths, params.eval_batch_size)
    probes = 3 + 2 * len(params.probe_shots)
    shot_tokens = sum(2 * k * qa for k in params.probe_shots)  # retain and forget shots before each question
    prompts = models_attacked * items * (probes * lengths.prompt(forget) + shot_tokens)
    cost.add("input probes", FORWARD, size, prompts + models_attacked * items * probes * lengths.answer(forget))
    cost.add("input probes", GENERATED, size, models_attacked * items * probes * lengths.decoded(params.max_new_tokens),
             rows=params.eval_batch_size)
    cost.simplified.append("RTT folds taken as equal, a tenth of the forget questions (the name questions) left out")
    return cost


NOTEBOOKS = (notebook_01, notebook_02, notebook_03, notebook_04, notebook_05, notebook_06, notebook_07, notebook_08)


def estimate(params: config.Params, lengths: Lengths) -> list[Cost]:
    """Every notebook in order; a run trained by an earlier notebook is read from the run store by the later ones."""
    trained: set[str] = set()
    return [count(params, lengths, trained) for count in NOTEBOOKS]


# =============================================================================================
# Part 1: tokens per second of a small Phi on this CPU, through the workbook's own loops
# =============================================================================================


class TokenCounter:
    """Non-padding input tokens (the attention mask's sum) of every forward call of a module, from a pre-hook: so
    the count is what the loss actually sent through the model, whatever the loop and loss do around it."""

    def __init__(self, module: torch.nn.Module):
        self.tokens = 0
        self._handle = module.register_forward_pre_hook(self._count, with_kwargs=True)

    def _count(self, module, args, kwargs) -> None:
        mask = kwargs.get("attention_mask")
        self.tokens += int(mask.sum()) if mask is not None else int(kwargs.get("input_ids", args[0] if args else None).numel())

    def remove(self) -> None:
        self._handle.remove()


def build_small_phi(tokenizer, seed: int = 0, dims: Mapping[str, int] = SMALL_PHI):
    """A randomly initialised ``PhiForCausalLM`` of the paper's architecture, ``dims`` small, float32: the builder of
    paper-dry's Phi stand-in (:func:`unlearnkit.models.build_stand_in`)."""
    return models.build_stand_in("phi", tokenizer, dims, seed=seed, max_positions=256)


@dataclass
class Measurement:
    name: str
    how: str
    tokens: int  # trained, generated or forward tokens, as ``kind`` says
    kind: str
    seconds: float
    reference_tokens: int = 0  # forward-only tokens of the frozen reference (unlearning)

    @property
    def rate(self) -> float:
        return self.tokens / self.seconds


@dataclass
class Measured:
    parameters: int
    threads: int
    vocabulary: int
    runs: list[Measurement]
    seconds: float

    def rates(self) -> CpuRates:
        by_name = {m.name: m for m in self.runs}
        return CpuRates(self.parameters, by_name["fine-tuning"].rate, by_name["scoring"].rate,
                        by_name["sampling"].rate)


def _timed(fn, *args, **kwargs) -> tuple[Any, float]:
    start = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - start


def measure(threads: int = 1, seed: int = 0, train_steps: int = 16, unlearn_steps: int = 10, batch_size: int = 16,
            prompts: int = 4, samples: int = 32, max_new_tokens: int = 48, scored: int = 512) -> Measured:
    """Fine-tuning, NPO unlearning, sampling and scoring of a small Phi on the synthetic corpus, each after a short
    warm-up (first-call allocations and lazy imports are not what is measured)."""
    started = time.perf_counter()
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        with tempfile.TemporaryDirectory(prefix="paper-cost-") as tmp:
            source = TofuSource(generate_synthetic_tofu(Path(tmp) / "corpus", n_authors=40, seed=seed))
            tokenizer = models.train_bpe_tokenizer(pipeline.all_texts(source), vocab_size=1024)
            template = models.TEMPLATES["phi"]
            pad = models.pad_token_id(tokenizer)
            model = build_small_phi(tokenizer, seed)
            qa = [models.encode_qa(tokenizer, template, r["question"], r["answer"]) for r in source.load("full")]

            def train(examples, steps: int, out: str, collate, loss_fn=training.causal_lm_loss) -> float:
                cfg = training.TrainConfig(output_dir=Path(tmp) / out, max_steps=steps, batch_size=batch_size, lr=1e-4,
                                           seed=seed, progress=False, checkpoint_every=None)
                return _timed(training.train, model, examples, cfg, collate_fn=collate, loss_fn=loss_fn,
                              resume=False)[1]

            def collate_qa(batch):
                return models.collate(batch, pad)

            train(qa, 2, "warm-up", collate_qa)
            counter = TokenCounter(model)
            seconds = train(qa, train_steps, "fine-tune", collate_qa)
            counter.remove()
            runs_ = [Measurement("fine-tuning", f"training.train, causal LM loss, {train_steps} steps of {batch_size}",
                                 counter.tokens, TRAINED, seconds)]

            pairs = unlearning.encode_pairs(tokenizer, template, source.load("forget10"), source.load("retain90"),
                                            seed=seed)
            reference = unlearning.frozen_reference(model)  # before the hooks, so the copy carries none
            loss = unlearning.UnlearningLoss("npo", ref_model=reference, forget_weight=1.0, lambda_f=0.0,
                                             lambda_r=0.0)

            def collate_pairs(batch):
                return unlearning.collate_pairs(batch, pad)

            train(pairs, 2, "warm-up-npo", collate_pairs, loss)
            counter, ref_counter = TokenCounter(model), TokenCounter(reference)
            seconds = train(pairs, unlearn_steps, "unlearn", collate_pairs, loss)
            counter.remove()
            ref_counter.remove()
            runs_.append(Measurement("unlearning", f"training.train, NPO with frozen reference, {unlearn_steps} steps "
                                                   f"of {batch_size} pairs", counter.tokens, TRAINED, seconds,
                                     ref_counter.tokens))

            questions = [r["question"] for r in source.load("forget10")][:prompts]
            generation.sample_answers(model, tokenizer, template, questions[:1], 2, max_new_tokens=4, seed=0,
                                      progress=False)
            out, seconds = _timed(generation.sample_answers, model, tokenizer, template, questions, samples,
                                  max_new_tokens=max_new_tokens, seed=seed, return_confidences=True, progress=False)
            # one confidence per decoded step (answer tokens and the EOS step): the tokens generated
            generated = sum(len(c) for per_question in out.token_confidences for c in per_question)
            runs_.append(Measurement("sampling", f"generation.sample_answers, {len(questions)} questions x {samples} "
                                                 f"samples, up to {max_new_tokens} new tokens", generated, GENERATED,
                                     seconds))

            encoded_nll(model, qa[:batch_size], pad, batch_size)
            seconds = _timed(encoded_nll, model, qa[:scored], pad, batch_size)[1]
            runs_.append(Measurement("scoring", f"metrics.tofu.encoded_nll, {min(scored, len(qa))} Q&A pairs",
                                     sum(len(e["input_ids"]) for e in qa[:scored]), FORWARD, seconds))
            parameters = sum(p.numel() for p in model.parameters())
            return Measured(parameters, threads, len(tokenizer), runs_, time.perf_counter() - started)
    finally:
        torch.set_num_threads(before)


# =============================================================================================
# Output
# =============================================================================================


def si(value: float) -> str:
    """1.23 M, 4.5 G: token counts at a glance."""
    for factor, unit in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:.3g} {unit}"
    return f"{value:.3g}"


def size_label(parameters: float) -> str:
    return f"{parameters / 1e9:.3g} B" if parameters >= 1e9 else f"{parameters / 1e6:.3g} M"


def print_measured(measured: Measured) -> None:
    print(f"## Measured here: a random Phi {SMALL_PHI}, vocabulary {measured.vocabulary} (BPE on the synthetic "
          f"corpus), float32, N = {measured.parameters / 1e6:.2f} M parameters, {measured.threads} CPU thread(s)")
    print()
    print("| run | how | tokens | seconds | tokens/s | GFLOP/s |")
    print("|---|---|---|---|---|---|")
    for m in measured.runs:
        flops = (FLOPS_PER_TOKEN[m.kind] * m.tokens + 2 * m.reference_tokens) * measured.parameters / m.seconds
        extra = f" + {m.reference_tokens:,} reference forward" if m.reference_tokens else ""
        print(f"| {m.name} | {m.how} | {m.tokens:,} {m.kind}{extra} | {m.seconds:.2f} | {m.rate:,.0f} | "
              f"{flops / 1e9:.2f} |")
    print()


def assumptions(gpu: Gpu, lengths: Lengths, params: config.Params) -> list[str]:
    return [
        f"Model sizes: {', '.join(f'{name} {size_label(n)}' for name, n in MODEL_PARAMETERS.items())}; saved models "
        f"of the profile have the size of {params.model}.",
        "FLOPs: 6·N per trained token (forward and backward), 2·N per forward-only token (frozen reference, "
        "teacher-forced scoring, prompt prefill) and per generated token; attention's context term left out "
        "(about 1 % of 2·N for Phi-1.5 at 300 tokens).",
        f"GPU: {gpu.name}, {gpu.peak / 1e12:g} TFLOP/s peak; model-FLOPs utilisation {gpu.mfu_train:.0%} for "
        f"training, scoring and prefill, {gpu.mfu_generate:.0%} for decoding with HF generate, and no decoding step "
        f"faster than {gpu.decode_step_s * 1e3:g} ms (HF generate's per-step latency: a greedy batch of 16 rows is "
        "bound by it, not by FLOPs). One GPU, one job at a time, no time for loading, saving or idling.",
        f"Token lengths: characters / {lengths.chars_per_token:g} (GPT-2-style BPE on English; Phi's tokenizer "
        f"is not available offline), the same rule for the 7B/13B models; {lengths.data.origin}.",
        f"Decoding: every sequence runs {lengths.decode_fraction:.0%} of its max_new_tokens (a batch decodes until "
        "its longest row stops); EOS counted on trained answers.",
        "CPU-side scoring (ROUGE, BLEU, bounds, the offline judges) and disk I/O of kept checkpoints not counted.",
    ]


def row_of(cost: Cost, gpu: Gpu, cpu: CpuRates | None) -> dict[str, Any]:
    return {"notebook": cost.notebook, "what": cost.what, "trained_tokens": cost.tokens(TRAINED),
            "forward_tokens": cost.tokens(FORWARD), "generated_tokens": cost.tokens(GENERATED),
            "gpu_hours": gpu.hours(cost), "cpu_hours": None if cpu is None else cpu.hours(cost),
            "by_model_size": {size_label(n): {**kinds, "gpu_hours": gpu.hours(
                Cost(cost.notebook, items={k: t for k, t in cost.items.items() if k[2] == n}))}
                for n, kinds in cost.by_size().items()},
            "runs_trained": cost.runs_trained, "simplified": cost.simplified,
            "items": [{"label": label, "kind": kind, "parameters": size, "decode_rows": rows, "tokens": tokens}
                      for (label, kind, size, rows), tokens in cost.items.items()]}


def print_estimate(rows: list[dict[str, Any]], notes: list[str], profile: str, cpu: CpuRates | None) -> dict[str, Any]:
    total = {key: sum(r[key] for r in rows) for key in ("trained_tokens", "forward_tokens", "generated_tokens",
                                                         "gpu_hours")}
    total["cpu_hours"] = None if cpu is None else sum(r["cpu_hours"] for r in rows)
    print(f"## ESTIMATE of the {profile} profile, notebooks 01-08 (00 and 09 do no model work): GPU-hours from token "
          "counts and FLOPs, not a measurement")
    print()
    cpu_head = " | CPU projection (days) |" if cpu else " |"
    print("| notebook | what is counted | trained tokens | forward tokens | generated tokens | est. GPU-hours" + cpu_head)
    print("|---|---|---|---|---|---|" + ("---|" if cpu else ""))
    for r in [*rows, {"notebook": "total", "what": "", "simplified": [], **total}]:
        cpu_cell = f" | {r['cpu_hours'] / 24:,.0f} |" if cpu else " |"
        what = r["what"] + (" (simplified*)" if r["simplified"] else "")
        print(f"| {r['notebook']} | {what} | {si(r['trained_tokens'])} | {si(r['forward_tokens'])} | "
              f"{si(r['generated_tokens'])} | {r['gpu_hours']:,.1f}" + cpu_cell)
    print()
    print("* where a count departs from the code: see 'Simplified' below.")
    print()
    print("By model size (an ESTIMATE):")
    print()
    print("| notebook | model | trained | forward | generated | est. GPU-hours |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        for size, kinds in r["by_model_size"].items():
            print(f"| {r['notebook']} | {size} | {si(kinds[TRAINED])} | {si(kinds[FORWARD])} | {si(kinds[GENERATED])} "
                  f"| {kinds['gpu_hours']:,.1f} |")
    print()
    print("Assumptions:")
    for note in notes:
        print(f"- {note}")
    if cpu is not None:
        print(f"- CPU projection: the same tokens at the rates measured above (fine-tuning for trained tokens, "
              f"scoring for forward-only, sampling for generated), each scaled by N_here / N_model "
              f"({cpu.parameters / 1e6:.2f} M / the model's N), one process on this CPU.")
    print()
    print("Simplified (where the count departs from the code):")
    for r in rows:
        for note in r["simplified"]:
            print(f"- {r['notebook']}: {note}")
    print()
    return total


def default_data_folder() -> Path:
    """Where the reference data sets live on the team's machines: ``$UNLEARNKIT_SHARED_DATA``, else
    ``../shared/data`` beside the project (as tests/conftest.py)."""
    return Path(os.environ.get("UNLEARNKIT_SHARED_DATA", paths.ROOT.parent / "shared" / "data"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--profile", default="paper", help="the profile to estimate (default: paper)")
    parser.add_argument("--json", type=Path, help="also write the table, the measurements and the assumptions here")
    parser.add_argument("--data", type=Path, default=default_data_folder(),
                        help="folder of tofu/, jbb/harmful-behaviors.csv and hp_qa/hp_qa_en.csv (else built-in figures)")
    parser.add_argument("--skip-measure", action="store_true", help="the estimate alone, without the CPU runs")
    parser.add_argument("--threads", type=int, default=1,
                        help="CPU threads of the measurement (1: the cores may be shared with other jobs)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--gpu", default="A100 (bf16 dense)", help="name of the GPU the figures stand for")
    parser.add_argument("--gpu-tflops", type=float, default=GPU_PEAK_TFLOPS, help="its peak TFLOP/s")
    parser.add_argument("--mfu-train", type=float, default=MFU_TRAIN,
                        help="model-FLOPs utilisation of training, scoring and prefill")
    parser.add_argument("--mfu-generate", type=float, default=MFU_GENERATE,
                        help="model-FLOPs utilisation of decoding with HF generate")
    parser.add_argument("--decode-step-ms", type=float, default=DECODE_STEP_S * 1e3,
                        help="least time of one decoding step of HF generate (0: FLOPs alone)")
    parser.add_argument("--chars-per-token", type=float, default=CHARS_PER_TOKEN)
    parser.add_argument("--decode-fraction", type=float, default=1.0,
                        help="share of max_new_tokens every decoded sequence runs")
    args = parser.parse_args(argv)
    started = time.perf_counter()

    measured = None
    if not args.skip_measure:
        measured = measure(threads=args.threads, seed=args.seed)
        print_measured(measured)
    params = config.Params.load(args.profile)
    lengths = Lengths(reference_data(args.data, params), args.chars_per_token, args.decode_fraction)
    gpu = Gpu(args.gpu, args.gpu_tflops * 1e12, args.mfu_train, args.mfu_generate, args.decode_step_ms / 1e3)
    cpu = None if measured is None else measured.rates()
    costs = estimate(params, lengths)
    rows = [row_of(cost, gpu, cpu) for cost in costs]
    notes = assumptions(gpu, lengths, params)
    total = print_estimate(rows, notes, args.profile, cpu)
    elapsed = time.perf_counter() - started
    print(f"benchmark took {elapsed:.0f} s" + (f" (measurement {measured.seconds:.0f} s)" if measured else ""))
    if args.json:
        payload = {"profile": args.profile, "estimate": "token counts and FLOPs, not a measurement",
                   "assumptions": notes, "gpu": asdict(gpu), "chars_per_token": args.chars_per_token,
                   "decode_fraction": args.decode_fraction, "reference_data": lengths.data.origin,
                   "measured": None if measured is None else {
                       "parameters": measured.parameters, "threads": measured.threads, "vocabulary": measured.vocabulary,
                       "small_phi": SMALL_PHI, "runs": [{**asdict(m), "tokens_per_s": m.rate} for m in measured.runs]},
                   "notebooks": rows, "total": total, "seconds": round(elapsed, 1)}
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(payload, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
