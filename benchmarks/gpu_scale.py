"""The paper profile's work at a GPU's pace (issue #61): a randomly initialised PhiForCausalLM of Phi-1.5's size
(hidden 2048, 24 layers, 32 heads, intermediate 8192, vocabulary 51200; 1.42 B parameters, bfloat16 on a GPU)
through the workbook's own fine-tuning (``training.train``) at the paper's global batch of 32, split 4 x 8 (the
paper profile's) and as ``training.gpu_micro_batches`` splits it for the card (32 x 1 for Phi-1.5 on 80 GiB); NPO
(4 x 8, frozen reference); sampling (``generation.sample_continuations``, with and without per-step confidences, at
chunk 256 and at the chunk of all samples of a question) against ``generate(num_return_sequences=...)`` in the same
run; and teacher-forced scoring (``metrics.tofu.encoded_nll``).

    python benchmarks/gpu_scale.py            # on a GPU: the Phi-1.5-sized stand-in
    python benchmarks/gpu_scale.py --small    # on a CPU in seconds: a tiny Phi, the same code path (a test runs it)

Printed per measurement: tokens/s, model TFLOP/s (6 N per trained token, 2 N per scored or sampled one, N the
parameters), samples/s, peak memory (torch's peak allocation on a GPU, the process's peak resident set on a CPU), the
ratio to ``generate()``, and PASS / FAIL against the issue's targets: fine-tuning at the global batch 32 split by
the rule at least 5x the 4 x 8 tokens/s, and the sampler at least 1.5x ``generate()`` at the paper profile's
settings (1,024 samples per question, up to 100 new tokens; chunk 256 and the larger chunk). On a CPU (``--small``)
the verdicts are printed for the record only: the targets are a GPU's. Also printed: the device, torch's version, the
dtype and the TF32 policy, and whether vLLM is installed; where it is, ``generation.vllm_sample_answers`` on the
stand-in saved to a folder is measured too (the real competitor on a GPU). ``--json OUT`` writes every figure, the
device, the policy, the splits and chunks and the verdicts to OUT as well.

The sampler is measured at chunk 256 and at ``generation.gpu_chunk_size``'s chunk for the card (on a CPU: all
samples at once); the fine-tuning at 4 x 8 as configured (``micro_batches="given"``) and at the rule's split.

The synthetic corpus (45 tokens per Q&A, as the issue's table) trains the stand-in's tokenizer; the model is random,
so sampled answers run to ``max_new_tokens``: the sampler's worst case and the one the issue measured.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import importlib.util
import json
import os
import resource
import sys
import tempfile
import time
from typing import Any

os.environ.setdefault("TQDM_DISABLE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch  # noqa: E402
from unlearnkit import generation, models, training  # noqa: E402
from unlearnkit import unlearning as ul  # noqa: E402
from unlearnkit.data.synthetic import generate_synthetic_tofu  # noqa: E402
from unlearnkit.data.tofu import TofuSource  # noqa: E402
from unlearnkit.metrics.tofu import encoded_nll  # noqa: E402
from unlearnkit.pipeline import all_texts  # noqa: E402

PHI_15 = {"hidden_size": 2048, "num_hidden_layers": 24, "num_attention_heads": 32, "intermediate_size": 8192}
PHI_15_VOCAB = 51200
SMALL = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 128}

#: The issue's targets, as (what, ratio at least).
TARGETS = {"fine-tuning at the rule's split / 4 x 8 tokens/s": 5.0, "sampler / generate() samples/s": 1.5}


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--small", action="store_true", help="a tiny Phi on the CPU, in seconds (the test's setting)")
    p.add_argument("--steps", type=int, default=None, help="optimizer steps per training measurement")
    p.add_argument("--questions", type=int, default=2)
    p.add_argument("--samples", type=int, default=None, help="samples per question (paper: 1024)")
    p.add_argument("--max-new-tokens", type=int, default=None, help="(paper: 100)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", metavar="OUT", default=None, help="also write every figure and verdict to OUT as JSON")
    args = p.parse_args(argv)
    if args.json is not None:
        folder = os.path.dirname(os.path.abspath(args.json))
        if not os.path.isdir(folder) or os.path.isdir(args.json):
            p.error(f"--json {args.json}: not a file in an existing folder")
    small = args.small
    for name, (if_small, otherwise) in {"steps": (1, 6), "samples": (8, 1024), "max_new_tokens": (6, 100)}.items():
        if getattr(args, name) is None:
            setattr(args, name, if_small if small else otherwise)
    for name in ("steps", "questions", "samples", "max_new_tokens"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    return args


class Peak:
    """Peak memory of the block in GiB: torch's peak allocation on a GPU, the process's peak resident set on a CPU
    (which never falls: there it reads the run so far)."""

    def __init__(self, device: torch.device):
        self.cuda, self.gib = device.type == "cuda", 0.0

    def __enter__(self):
        if self.cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        return self

    def __exit__(self, *exc) -> None:
        if self.cuda:
            torch.cuda.synchronize()
            self.gib = torch.cuda.max_memory_allocated() / 2**30
        else:
            self.gib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB on Linux


def build(args, device: torch.device):
    """The synthetic corpus, its tokenizer and the stand-in (Phi-1.5's sizes, or --small's) on ``device``."""
    folder = tempfile.mkdtemp(prefix="gpu-scale-")
    generate_synthetic_tofu(folder, n_authors=20, n_world_facts=12, n_real_authors=8, seed=args.seed)
    source = TofuSource(folder)
    tokenizer = models.train_bpe_tokenizer(all_texts(source), vocab_size=512 if args.small else 4096)
    with torch.device(device):
        model = models.build_stand_in("phi", tokenizer, SMALL if args.small else PHI_15, seed=args.seed)
        if not args.small:
            model.resize_token_embeddings(PHI_15_VOCAB)  # Phi-1.5's vocabulary: its output head's cost
    if device.type == "cuda":
        model.to(torch.bfloat16)
    return source, tokenizer, model


def phi_15_split(tokens_per_example: int) -> tuple[int, int]:
    """What :func:`training.gpu_micro_batches` chooses for Phi-1.5 (1.418 B parameters) at the global batch 32 on an
    80 GiB card."""
    return training.gpu_micro_batches(32, 80 * 2**30, 1_418_270_720, hidden_size=2048, num_layers=24,
                                      vocab_size=PHI_15_VOCAB, tokens_per_example=tokens_per_example)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def train_rate(model, examples, collate, loss_fn, batch: int, accum: int, steps: int, device) -> dict[str, float]:
    """Tokens/s (non-pad input tokens) of ``steps`` optimizer steps of batch x accum, on a copy of ``model``."""
    tokens = [0]

    def counted(b):
        out = collate(b)
        tokens[0] += int(sum(len(e["input_ids"]) if "input_ids" in e else sum(len(p["input_ids"]) for p in e.values())
                             for e in b))
        return out

    work = copy.deepcopy(model)
    cfg = training.TrainConfig(output_dir=tempfile.mkdtemp(prefix="gpu-scale-train-"), max_steps=steps,
                               batch_size=batch, grad_accum=accum, lr=1e-5, progress=False, micro_batches="given")
    with Peak(device) as peak:
        _sync(device)
        start = time.perf_counter()
        training.train(work, examples, cfg, collate_fn=counted, loss_fn=loss_fn)
        _sync(device)
        seconds = time.perf_counter() - start
    del work
    return {"tokens/s": tokens[0] / seconds, "seconds": seconds, "peak GiB": peak.gib}


@torch.no_grad()
def generate_rate(model, prompts, n: int, chunk: int, max_new_tokens: int, tokenizer, device) -> dict[str, float]:
    """samples/s of ``generate(do_sample=True, num_return_sequences=chunk)``, chunk by chunk."""
    pad, eos = models.pad_token_id(tokenizer), tokenizer.eos_token_id
    done = 0
    with Peak(device) as peak:
        _sync(device)
        start = time.perf_counter()
        for prompt in prompts:
            ids = torch.tensor([prompt], device=device)
            for first in range(0, n, chunk):
                k = min(chunk, n - first)
                model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), do_sample=True, temperature=1.0,
                               top_p=None, top_k=None, max_new_tokens=max_new_tokens, num_return_sequences=k,
                               pad_token_id=pad, eos_token_id=eos)
                done += k
        _sync(device)
        seconds = time.perf_counter() - start
    return {"samples/s": done / seconds, "seconds": seconds, "peak GiB": peak.gib}


def sample_rate(model, prompts, n: int, chunk: int, max_new_tokens: int, tokenizer, device, confidences: bool,
                seed: int) -> dict[str, float]:
    with Peak(device) as peak:
        _sync(device)
        start = time.perf_counter()
        ids, _ = generation.sample_continuations(model, tokenizer, prompts, n, max_new_tokens=max_new_tokens,
                                                 seed=seed, chunk_size=chunk, progress=False, confidences=confidences)
        _sync(device)
        seconds = time.perf_counter() - start
    return {"samples/s": sum(len(p) for p in ids) / seconds, "seconds": seconds, "peak GiB": peak.gib}


def vllm_rate(model, tokenizer, template, questions, n: int, max_new_tokens: int, seed: int) -> dict[str, float]:
    """samples/s of ``generation.vllm_sample_answers`` on the stand-in saved to a folder (engine start excluded)."""
    folder = tempfile.mkdtemp(prefix="gpu-scale-vllm-")
    models.save_model(model, tokenizer, folder, template)
    engine = generation.vllm_engine(folder, seed, "bfloat16", gpu_memory_utilization=0.3)
    with Peak(torch.device("cpu")) as peak:
        start = time.perf_counter()
        answers = generation.vllm_sample_answers(engine, template, questions, n, max_new_tokens=max_new_tokens,
                                                 seed=seed, progress=False)
        seconds = time.perf_counter() - start
    return {"samples/s": sum(len(a) for a in answers) / seconds, "seconds": seconds, "peak GiB": peak.gib}


def score_rate(model, encoded, pad: int, device) -> dict[str, float]:
    tokens = sum(len(e["input_ids"]) for e in encoded)
    with Peak(device) as peak:
        _sync(device)
        start = time.perf_counter()
        encoded_nll(model, encoded, pad, batch_size=16)
        _sync(device)
        seconds = time.perf_counter() - start
    return {"tokens/s": tokens / seconds, "seconds": seconds, "peak GiB": peak.gib}


def verdict(ratio: float, target: float) -> str:
    return "PASS" if ratio >= target else "FAIL"


def run(args) -> dict[str, Any]:
    device = torch.device("cuda" if torch.cuda.is_available() and not args.small else "cpu")
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True  # bfloat16 weights: TF32 touches only float32 side computations
    source, tokenizer, model = build(args, device)
    n_params = sum(p.numel() for p in model.parameters())
    has_vllm = importlib.util.find_spec("vllm") is not None
    info = {"device": torch.cuda.get_device_name() if device.type == "cuda" else "cpu", "torch": torch.__version__,
            "dtype": str(next(model.parameters()).dtype), "tf32_matmul": torch.backends.cuda.matmul.allow_tf32,
            "tf32_cudnn": torch.backends.cudnn.allow_tf32, "parameters": n_params, "vllm": has_vllm}
    print(f"device {info['device']}; torch {info['torch']}; dtype {info['dtype']}; TF32 matmul "
          f"{info['tf32_matmul']}; {n_params / 1e6:.2f} M parameters; vLLM {'installed' if has_vllm else 'absent'}")
    template = models.get_template("phi")  # Phi-1.5's own prompt
    rows = source.load("full")
    pad = models.pad_token_id(tokenizer)
    encoded = [models.encode_qa(tokenizer, template, r["question"], r["answer"]) for r in rows]
    per_qa = sum(len(e["input_ids"]) for e in encoded) / len(encoded)
    print(f"corpus: {len(encoded)} Q&As, {per_qa:.1f} tokens each")
    results: dict[str, dict[str, float]] = {}
    examples = encoded[: 32 * args.steps]
    card = torch.cuda.get_device_properties(device).total_memory if device.type == "cuda" else 80 * 2**30
    sizes = {"hidden_size": model.config.hidden_size, "num_layers": model.config.num_hidden_layers,
             "vocab_size": model.config.vocab_size, "tokens_per_example": max(len(e["input_ids"]) for e in examples)}
    chosen = training.gpu_micro_batches(32, card, n_params, **sizes)
    print(f"the micro-batch rule on a {card / 2**30:.0f} GiB card: {chosen[0]} x {chosen[1]} "
          f"(Phi-1.5's size on 80 GiB: {' x '.join(map(str, phi_15_split(sizes['tokens_per_example'])))})")
    info.update(card_bytes=card, split=list(chosen), tokens_per_example=sizes["tokens_per_example"])
    model.train()
    for batch, accum in dict.fromkeys(((4, 8), chosen)):
        results[f"fine-tune {batch} x {accum}"] = train_rate(model, examples, lambda b: models.collate(b, pad),
                                                             training.causal_lm_loss, batch, accum, args.steps, device)
    forget, retain = source.load("forget10"), source.load("retain90")
    pairs = ul.encode_pairs(tokenizer, template, forget, retain, seed=args.seed)
    npo = ul.UnlearningLoss("npo", ref_model=ul.frozen_reference(model), forget_weight=1.0, lambda_f=0.0,
                            lambda_r=0.0)
    results["NPO 4 x 8"] = train_rate(model, pairs, lambda b: ul.collate_pairs(b, pad), npo, 4, 8,
                                      max(1, min(args.steps, len(pairs) // 32)), device)
    model.eval()
    results["score (encoded_nll, batch 16)"] = score_rate(model, encoded[:32 if args.small else 256], pad, device)
    prompts = [models.encode_prompt(tokenizer, template, r["question"]) for r in forget[: args.questions]]
    if device.type == "cuda":
        rule = generation.chunk_for(model, None, args.samples * len(prompts),
                                    max(len(p) for p in prompts) + args.max_new_tokens)
    else:
        rule = args.samples  # a CPU's stand-in for the rule: all samples of a question at once
    chunks = sorted({min(256, args.samples), rule})
    info["chunks"] = chunks
    for chunk in chunks:
        results[f"generate() chunk {chunk}"] = generate_rate(model, prompts, args.samples, chunk,
                                                             args.max_new_tokens, tokenizer, device)
        for conf in (True, False):
            results[f"sampler chunk {chunk} {'with' if conf else 'without'} confidences"] = sample_rate(
                model, prompts, args.samples, chunk, args.max_new_tokens, tokenizer, device, conf, args.seed)
    if has_vllm and device.type == "cuda":
        try:
            results["vLLM"] = vllm_rate(model, tokenizer, template, [r["question"] for r in forget[: args.questions]],
                                        args.samples, args.max_new_tokens, args.seed)
        except Exception as error:  # a benchmark: say why, measure the rest
            print(f"vLLM not measured: {type(error).__name__}: {error}".splitlines()[0])
    verdicts = report(results, n_params, chunks, chosen, small=args.small)
    out = {"info": info, "results": results, "verdicts": verdicts}
    if args.json is not None:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return out


def report(results: dict[str, dict[str, float]], n_params: int, chunks: list[int], chosen: tuple[int, int],
           small: bool) -> list[dict[str, Any]]:
    verdicts: list[dict[str, Any]] = []
    for name, r in results.items():
        parts = [f"{name:<42}"]
        if "tokens/s" in r:
            flops = (6 if name.startswith(("fine-tune", "NPO")) else 2) * n_params * r["tokens/s"] / 1e12
            parts.append(f"{r['tokens/s']:>10.1f} tokens/s  {flops:>9.3g} TFLOP/s")
        if "samples/s" in r:
            parts.append(f"{r['samples/s']:>10.1f} samples/s")
        parts.append(f"peak {r['peak GiB']:.2f} GiB  ({r['seconds']:.2f} s)")
        print("  ".join(parts))
    note = " (a CPU: for the record, the targets are a GPU's)" if small else ""
    split = f"{chosen[0]} x {chosen[1]}"
    ratio = results[f"fine-tune {split}"]["tokens/s"] / results["fine-tune 4 x 8"]["tokens/s"]
    target = TARGETS["fine-tuning at the rule's split / 4 x 8 tokens/s"]
    print(f"target fine-tuning {split} / 4 x 8 = {ratio:.2f}x (>= {target}x): {verdict(ratio, target)}{note}")
    verdicts.append({"what": f"fine-tuning {split} / 4 x 8", "ratio": ratio, "target": target,
                     "verdict": verdict(ratio, target)})
    target = TARGETS["sampler / generate() samples/s"]
    for chunk in chunks:
        base = results[f"generate() chunk {chunk}"]["samples/s"]
        for conf in ("with", "without"):
            ratio = results[f"sampler chunk {chunk} {conf} confidences"]["samples/s"] / base
            print(f"target sampler chunk {chunk} {conf} confidences / generate() = {ratio:.2f}x (>= {target}x): "
                  f"{verdict(ratio, target)}{note}")
            verdicts.append({"what": f"sampler chunk {chunk} {conf} confidences / generate()", "ratio": ratio,
                             "target": target, "verdict": verdict(ratio, target)})
    if "vLLM" in results:
        ratio = results["vLLM"]["samples/s"] / results[f"generate() chunk {chunks[-1]}"]["samples/s"]
        print(f"vLLM / generate() chunk {chunks[-1]} = {ratio:.2f}x (for the record)")
    return verdicts


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    with contextlib.suppress(AttributeError):
        torch.set_num_threads(max(1, min(2, torch.get_num_threads())))
    run(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
