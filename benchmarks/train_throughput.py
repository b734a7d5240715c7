"""Tokens per second of unlearnkit's training loop: padded batches and packed batches (the same examples), against a
bare PyTorch loop, and the share of the machine's matmul peak each one reaches.

Same tiny Llama (the default profile's), same data (a synthetic corpus's ``full`` split), same batches, same AdamW and
gradient clipping. The runs alternate (bare, padded, packed, then two loops side by side in two one-thread worker
processes, padded and packed: how notebook 01 trains its target and retain models) so that machine noise hits all of
them, and the medians are compared. Printed for each: tokens/s counting only the examples' own tokens (padding excluded), the
share of the positions computed that were padding, and the model FLOP/s (6 N per token for N parameters, plus the
attention scores) as a share of the peak: a large float32 matmul on the same threads, measured here.

    python benchmarks/train_throughput.py [--rounds 3] [--steps 40] [--threads 2]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

os.environ.setdefault("TQDM_DISABLE", "1")

import torch  # noqa: E402
from unlearnkit import models, training  # noqa: E402
from unlearnkit.data.synthetic import generate_synthetic_tofu  # noqa: E402
from unlearnkit.data.tofu import TofuSource  # noqa: E402
from unlearnkit.pipeline import all_texts  # noqa: E402

#: The default profile's model (notebooks/params/default.yaml).
TINY = {"hidden_size": 128, "num_hidden_layers": 4, "num_attention_heads": 4, "intermediate_size": 384}


def build(tmp: str):
    source = TofuSource(generate_synthetic_tofu(os.path.join(tmp, "corpus"), n_authors=100))
    tokenizer = models.train_bpe_tokenizer(all_texts(source), vocab_size=1024)
    template = models.TEMPLATES["phi"]
    examples = [models.encode_qa(tokenizer, template, r["question"], r["answer"]) for r in source.load("full")]
    return tokenizer, examples


def matmul_peak(threads: int, size: int = 2048, repeats: int = 5) -> float:
    """FLOP/s of the best of ``repeats`` float32 (size x size) @ (size x size) products on ``threads`` threads."""
    torch.set_num_threads(threads)
    a, b = torch.randn(size, size), torch.randn(size, size)
    a @ b  # warm-up
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - start)
    return 2 * size**3 / best


def batches(examples, steps: int, batch_size: int, seed: int = 0) -> list[list[dict]]:
    """The loop's batches: a permutation per epoch (training.EpochShuffleSampler), cut into batches."""
    out, epoch = [], 0
    while len(out) < steps:
        order = torch.randperm(len(examples), generator=torch.Generator().manual_seed(seed + epoch)).tolist()
        out += [[examples[i] for i in order[s:s + batch_size]] for s in range(0, len(order), batch_size)]
        epoch += 1
    return out[:steps]


def ours(tokenizer, examples, steps: int, batch_size: int, out: str, packed: bool) -> float:
    model = models.build_tiny_llama(tokenizer, TINY, seed=0)
    cfg = training.TrainConfig(output_dir=out, max_steps=steps, batch_size=batch_size, lr=1e-3, progress=True,
                               checkpoint_every=None)
    pad = models.pad_token_id(tokenizer)
    batch_of = models.pack if packed else models.collate
    start = time.perf_counter()
    training.train(model, examples, cfg, collate_fn=lambda b: batch_of(b, pad), resume=False)
    return time.perf_counter() - start


def side_by_side_loops(tokenizer, examples, steps: int, batch_size: int, out: str, packed: bool) -> float:
    """Two of :func:`ours` at once in two worker processes of one thread each (how notebook 01 trains its target and
    retain models): the seconds until both are done, timed inside the workers (their start-up excluded)."""
    tasks = [(tokenizer, examples, steps, batch_size, os.path.join(out, str(i)), packed) for i in range(2)]
    return max(models.side_by_side(ours, tasks, jobs=2))


def bare(tokenizer, examples, steps: int, batch_size: int) -> float:
    model = models.build_tiny_llama(tokenizer, TINY, seed=0)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    collated = [models.collate(b, tokenizer.pad_token_id) for b in batches(examples, steps, batch_size)]
    model.train()
    start = time.perf_counter()
    for batch in collated:
        loss = model(**batch).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    return time.perf_counter() - start


def shapes(examples, steps: int, batch_size: int, packed: bool) -> tuple[int, int, int]:
    """Real tokens, positions computed (padding included) and attention score entries (per layer and head dimension,
    query x key pairs that the causal mask keeps) of the run's batches."""
    real = positions = scores = 0
    for group in batches(examples, steps, batch_size):
        real += sum(len(e["input_ids"]) for e in group)
        batch = models.pack(group, 0) if packed else models.collate(group, 0)
        rows, width = batch["input_ids"].shape
        positions += rows * width
        scores += rows * width * (width + 1) // 2
    return real, positions, scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.manual_seed(0)
    peak = matmul_peak(args.threads)
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        tokenizer, examples = build(tmp)
        model = models.build_tiny_llama(tokenizer, TINY, seed=0)
        n_params = sum(p.numel() for p in model.parameters())
        assert models.packs_sequences(model), "this model would not be trained on packed batches"
        ours(tokenizer, examples, 5, args.batch_size, os.path.join(tmp, "warmup"), packed=True)  # warm-up
        seconds: dict[str, list[float]] = {"bare loop, padded": [], "unlearnkit, padded": [], "unlearnkit, packed": [],
                                           "2 loops x 1 thread, padded": [], "2 loops x 1 thread, packed": []}
        pairs = args.threads == 2 and models.machine_cores() >= 2
        for r in range(args.rounds):
            seconds["bare loop, padded"].append(bare(tokenizer, examples, args.steps, args.batch_size))
            seconds["unlearnkit, padded"].append(ours(tokenizer, examples, args.steps, args.batch_size,
                                                      os.path.join(tmp, f"padded{r}"), packed=False))
            seconds["unlearnkit, packed"].append(ours(tokenizer, examples, args.steps, args.batch_size,
                                                      os.path.join(tmp, f"packed{r}"), packed=True))
            if pairs:
                for packed in (False, True):
                    name = f"2 loops x 1 thread, {'packed' if packed else 'padded'}"
                    seconds[name].append(side_by_side_loops(tokenizer, examples, args.steps, args.batch_size,
                                                            os.path.join(tmp, f"{name}{r}"), packed))
    layers, hidden = TINY["num_hidden_layers"], TINY["hidden_size"]
    print(f"model: tiny Llama {TINY}, {n_params / 1e6:.2f} M parameters; batch {args.batch_size}, {args.steps} steps "
          f"x {args.rounds} rounds, {args.threads} threads; float32 matmul peak {peak / 1e9:.0f} GFLOP/s")
    print(f"{'':22} {'tokens/s':>9} {'padding':>8} {'GFLOP/s':>8} {'of peak':>8}   (median; rounds in s)")
    rates = {}
    for name, times in seconds.items():
        if not times:
            continue
        packed = name.endswith("packed")
        real, positions, scores = shapes(examples, args.steps, args.batch_size, packed)
        if name.startswith("2 loops"):  # two runs' worth of work in that time
            real, positions, scores = 2 * real, 2 * positions, 2 * scores
        # 6 N per computed position for the weights, plus 3 x 2 x 2 d per kept score entry per layer (QK and AV)
        flops = 6 * n_params * positions + 12 * hidden * layers * scores
        t = statistics.median(times)
        rates[name] = real / t
        print(f"{name:22} {real / t:9.0f} {1 - real / positions:8.1%} {flops / t / 1e9:8.1f} {flops / t / peak:8.1%}"
              f"   ({', '.join(f'{x:.2f}' for x in times)})")
    useful = {name: 6 * n_params * rate / peak for name, rate in rates.items()}
    print("useful work (6 N per real token) as a share of the peak: "
          + "; ".join(f"{name} {share:.1%}" for name, share in useful.items()))
    print(f"packed / padded tokens/s: {rates['unlearnkit, packed'] / rates['unlearnkit, padded']:.2f}x; unlearnkit padded "
          f"/ bare loop: {rates['unlearnkit, padded'] / rates['bare loop, padded']:.3f}")


if __name__ == "__main__":
    main()
