"""Samples per second: the batched sampler of ``unlearnkit.generation`` (its own decoding loop, and the way it decoded
before, through ``model.generate`` with the sampler as a logits processor) against one ``model.generate`` call per
sample, on the same tiny Llama, prompts and settings. Not a test: run it by hand.

    python benchmarks/sampling_throughput.py [--prompts 4] [--samples 64] [--max-new-tokens 32] [--threads 1]
                                             [--baseline-samples 16] [--repeats 3] [--eos-bias 2.5]

The model is untrained (random weights), so without help practically no sample stops at EOS before
``max_new_tokens``. ``--eos-bias`` (default 2.5) raises the EOS logit so that samples end at different lengths, as a
trained model's answers do: that is where the own loop also drops finished rows from its batch, which ``generate``
never does; ``--eos-bias 0`` measures the per-step overhead alone. The figures printed: one ``generate`` call per
sample (the naive baseline), the batched sampler with the prompt repeated per sample (``share_prompt_cache=False``)
and with the prompt's key/value cache computed once and expanded (the default), each through ``generate`` (before)
and through the own loop (now), with the ratios, and each one's peak memory: the process's resident set size polled
every few milliseconds (psutil), as its peak during the run and as the rise over its value when the run began (on a
GPU, torch's peak allocation instead). Memory a run freed may stay with the process, so a later run's rise can read
low: the peak is the figure to compare. All decoders draw the same samples (checked here).

Threads default to 1: on a small machine shared with other jobs, two intra-op threads competing
for busy cores can make every matmul an order of magnitude slower, which says nothing about either
method. ``--threads 2`` measures the other setting.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time

os.environ.setdefault("TQDM_DISABLE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import psutil  # noqa: E402
import torch  # noqa: E402
from unlearnkit import generation, models  # noqa: E402
from unlearnkit.data.synthetic import generate_synthetic_tofu  # noqa: E402
from unlearnkit.data.tofu import TofuSource  # noqa: E402
from unlearnkit.pipeline import all_texts  # noqa: E402


def build(vocab_size: int, seed: int):
    """A tiny Llama (hidden 128, 4 layers) and a BPE tokenizer trained on a synthetic corpus."""
    folder = tempfile.mkdtemp(prefix="sampling-bench-")
    generate_synthetic_tofu(folder, n_authors=20, n_world_facts=12, n_real_authors=8, seed=seed)
    source = TofuSource(folder)
    tokenizer = models.train_bpe_tokenizer(all_texts(source), vocab_size=vocab_size)
    model = models.build_tiny_llama(tokenizer, {"hidden_size": 128, "num_hidden_layers": 4, "num_attention_heads": 4,
                                                "intermediate_size": 256}, seed=seed)
    model.eval()
    questions = [row["question"] for row in source.load("forget10")]
    return model, tokenizer, questions


@torch.no_grad()
def one_generate_per_sample(model, tokenizer, template, questions, n, max_new_tokens, seed) -> tuple[int, int]:
    """The naive way: for every sample, one ``generate(do_sample=True)`` call on the single prompt."""
    torch.manual_seed(seed)
    eos, pad = tokenizer.eos_token_id, tokenizer.pad_token_id
    samples = tokens = 0
    for question in questions:
        ids = torch.tensor([models.encode_prompt(tokenizer, template, question)])
        for _ in range(n):
            out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), do_sample=True, temperature=1.0,
                                 top_p=None, top_k=None, max_new_tokens=max_new_tokens, pad_token_id=pad,
                                 eos_token_id=eos)
            samples += 1
            tokens += out.shape[1] - ids.shape[1]
    return samples, tokens


DRAWN: dict[str, list] = {}


def batched(model, tokenizer, template, questions, n, max_new_tokens, seed, share_prompt_cache,
            decoder: str) -> tuple[int, int]:
    answers = generation.sample_continuations(
        model, tokenizer, [models.encode_prompt(tokenizer, template, q) for q in questions], n,
        max_new_tokens=max_new_tokens, seed=seed, share_prompt_cache=share_prompt_cache, progress=False,
        decoder=decoder)[0]
    DRAWN[f"{decoder} {share_prompt_cache}"] = answers
    # +1 for the EOS step of a sample that ended early
    tokens = sum(min(len(c) + 1, max_new_tokens) for per_prompt in answers for c in per_prompt)
    return sum(len(per_prompt) for per_prompt in answers), tokens


class PeakMemory:
    """Peak resident memory of this process while the block runs, polled from a thread (bytes): ``peak`` and
    ``rise`` (peak minus the value at the start). On a GPU, torch's own peak allocation is reported instead."""

    def __init__(self, interval: float = 0.005):
        self.interval, self.peak, self.rise = interval, 0, 0
        self._process, self._stop = psutil.Process(), threading.Event()

    def _poll(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self._process.memory_info().rss)
            time.sleep(self.interval)

    def __enter__(self):
        if torch.cuda.is_available():
            torch.cuda.reset_peak_memory_stats()
            self._start = torch.cuda.memory_allocated()
            return self
        self._start = self.peak = self._process.memory_info().rss
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        if torch.cuda.is_available():
            self.peak = torch.cuda.max_memory_allocated()
        else:
            self._stop.set()
            self._thread.join()
            self.peak = max(self.peak, self._process.memory_info().rss)
        self.rise = self.peak - self._start


def timed(fn, *args, repeats: int = 1, **kwargs) -> tuple[float, int, int, PeakMemory]:
    """Best wall time of ``repeats`` runs: on a machine shared with other jobs the minimum is the
    figure least disturbed by them; and the peak memory of the first run."""
    best, memory = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        with PeakMemory() as watched:
            samples, tokens = fn(*args, **kwargs)
        best = min(best, time.perf_counter() - start)
        memory = memory or watched
    return best, samples, tokens, memory


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=4)
    parser.add_argument("--samples", type=int, default=64, help="samples per prompt")
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--vocab-size", type=int, default=1000)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--baseline-samples", type=int, default=None,
                        help="samples per prompt for the slow baseline (default: --samples); its figure is a rate")
    parser.add_argument("--repeats", type=int, default=3, help="batched runs to take the best of")
    parser.add_argument("--eos-bias", type=float, default=2.5, help="added to the EOS logit, so samples end early")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)

    model, tokenizer, questions = build(args.vocab_size, args.seed)
    if args.eos_bias:
        bias = torch.zeros(len(tokenizer))
        bias[tokenizer.eos_token_id] = args.eos_bias
        model.lm_head.register_forward_hook(lambda module, inputs, output: output + bias)
    template = models.TEMPLATES["phi"]
    questions = questions[: args.prompts]
    prompt_lengths = [len(models.encode_prompt(tokenizer, template, q)) for q in questions]
    print(f"tiny Llama: {sum(p.numel() for p in model.parameters()) / 1e6:.2f} M parameters, vocab {len(tokenizer)}, "
          f"{args.threads} thread(s); {len(questions)} prompts ({min(prompt_lengths)}-{max(prompt_lengths)} tokens) "
          f"x {args.samples} samples, max_new_tokens {args.max_new_tokens}, temperature 1")

    # Warm-up, so that neither side pays for first-call allocations and lazy imports.
    generation.sample_continuations(model, tokenizer, [models.encode_prompt(tokenizer, template, questions[0])], 2,
                                    max_new_tokens=4, seed=0, progress=False)
    one_generate_per_sample(model, tokenizer, template, questions[:1], 2, 4, args.seed)

    common = (model, tokenizer, template, questions, args.samples, args.max_new_tokens, args.seed)
    baseline_samples = args.baseline_samples or args.samples
    results = {"one generate() per sample": timed(one_generate_per_sample, model, tokenizer, template, questions,
                                                  baseline_samples, args.max_new_tokens, args.seed)}
    for shared, label in ((False, "prompt repeated"), (True, "shared prompt cache")):
        for decoder, how in (("generate", "generate()"), ("loop", "own loop")):
            results[f"batched, {label}, {how}"] = timed(batched, *common, share_prompt_cache=shared, decoder=decoder,
                                                       repeats=args.repeats)
    same = all(v == DRAWN["loop True"] for v in DRAWN.values())
    baseline = results["one generate() per sample"]
    baseline_rate = baseline[1] / baseline[0]
    print(f"(batched: best of {args.repeats} runs; baseline: one run; EOS bias {args.eos_bias:g}; every batched decoder "
          f"drew the same samples: {'yes' if same else 'NO'})")
    where = "GPU allocation" if torch.cuda.is_available() else "resident memory"
    for name, (seconds, samples, tokens, memory) in results.items():
        rate = samples / seconds
        print(f"{name:45s} {samples:5d} samples, {tokens:6d} tokens in {seconds:7.2f} s: {rate:8.1f} samples/s "
              f"({tokens / seconds:8.0f} tokens/s), {rate / baseline_rate:5.1f}x the baseline; peak {where} "
              f"{memory.peak / 2**20:7.1f} MiB (+{memory.rise / 2**20:.1f} MiB during the run)")
    for label in ("prompt repeated", "shared prompt cache"):
        before, after = results[f"batched, {label}, generate()"], results[f"batched, {label}, own loop"]
        print(f"own loop / generate(), {label}: {before[0] / after[0]:.2f}x the samples per second")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
