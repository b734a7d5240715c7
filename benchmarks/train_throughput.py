"""Tokens per second of unlearnkit's training loop: padded batches and packed batches (the same examples), against a
bare PyTorch loop, and the share of the machine's matmul peak each one reaches.

Same tiny Llama (the default profile's), same data (a synthetic corpus's ``full`` split), same batches, same AdamW and
gradient clipping. The runs alternate (bare, padded, packed, then two loops side by side in two one-thread worker
processes, padded and packed: how notebook 01 trains its target and retain models) so that machine noise hits all of
them, and the medians are compared. Printed for each: tokens/s counting only the examples' own tokens (padding excluded), the
share of the positions computed that were padding, and the model FLOP/s (6 N per token for N parameters, plus the
attention scores) as a share of the peak: a large float32 matmul on the same threads, measured here.

The instruction set (``unlearnkit.machine``): the same padded loop in fresh processes, one with the workbook's AVX2
pin and one with the machine's own kernels (``UNLEARNKIT_NATIVE_ISA=1``), alternating; printed for each, tokens/s and a
hash of the trained weights, which shows whether the pin changes the bits on this machine (it does where the CPU has
AVX-512) and what it costs. ``--isa-only`` runs that part alone.

    python benchmarks/train_throughput.py [--rounds 3] [--steps 40] [--threads 2] [--isa-only]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

os.environ.setdefault("TQDM_DISABLE", "1")

import torch  # noqa: E402
from unlearnkit import models, training, workers  # noqa: E402
from unlearnkit.data.synthetic import generate_synthetic_tofu  # noqa: E402
from unlearnkit.data.tofu import TofuSource  # noqa: E402
from unlearnkit.pipeline import all_texts  # noqa: E402

#: The default profile's model (notebooks/params/default.yaml).
TINY = {"hidden_size": 128, "num_hidden_layers": 4, "num_attention_heads": 4, "intermediate_size": 384}


def build(tmp: str):
    source = TofuSource(generate_synthetic_tofu(os.path.join(tmp, "corpus"), n_authors=100, seed=0))
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
    return max(workers.side_by_side(ours, tasks, jobs=2))


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


def one_loop(steps: int, batch_size: int, threads: int) -> dict:
    """The padded loop once in this process, as the instruction-set comparison runs it: tokens/s and the weights' hash."""
    import hashlib

    from unlearnkit import machine

    torch.manual_seed(0)
    torch.set_num_threads(threads)
    with tempfile.TemporaryDirectory() as tmp:
        tokenizer, examples = build(tmp)
        ours(tokenizer, examples, 3, batch_size, os.path.join(tmp, "warmup"), packed=False)
        model = models.build_tiny_llama(tokenizer, TINY, seed=0)
        cfg = training.TrainConfig(output_dir=os.path.join(tmp, "run"), max_steps=steps, batch_size=batch_size,
                                   lr=1e-3, progress=False, checkpoint_every=None)
        pad = models.pad_token_id(tokenizer)
        start = time.perf_counter()
        training.train(model, examples, cfg, collate_fn=lambda b: models.collate(b, pad), resume=False)
        seconds = time.perf_counter() - start
        real = sum(len(e["input_ids"]) for group in batches(examples, steps, batch_size) for e in group)
    weights = hashlib.sha256(b"".join(p.detach().numpy().tobytes() for p in model.parameters())).hexdigest()[:12]
    return {"tokens_per_s": real / seconds, "weights": weights, **machine.active()}


def compare_instruction_sets(rounds: int, steps: int, batch_size: int, threads: int) -> None:
    """The padded loop in fresh processes, pinned (the workbook's AVX2) and native (the machine's own kernels),
    alternating so that machine noise hits both; the median tokens/s of each and the weights each trained."""
    import json
    import subprocess
    import sys

    from unlearnkit import machine

    if not machine.pinnable():
        print("instruction set: no AVX2 pin applies on this machine (another architecture, or no AVX2): nothing to "
              "compare")
        return
    base = {k: v for k, v in os.environ.items() if k not in machine.PIN and k != machine.NATIVE_VARIABLE}
    runs_: dict[str, list[dict]] = {"pinned (AVX2)": [], "native": []}
    for _ in range(rounds):
        # the pinned process starts with the pin in its environment, as the Makefile and the runner start theirs
        # (set only at unlearnkit's import, it would come too late for NumPy, which torch imports first)
        for name, extra in (("pinned (AVX2)", machine.pin_environment({})), ("native", {machine.NATIVE_VARIABLE: "1"})):
            done = subprocess.run([sys.executable, __file__, "--one-loop", "--steps", str(steps), "--batch-size",
                                   str(batch_size), "--threads", str(threads)], env={**base, **extra},
                                  capture_output=True, text=True, check=True)
            runs_[name].append(json.loads(done.stdout.strip().splitlines()[-1]))
    print(f"instruction set: the padded loop, {steps} steps, in fresh processes ({rounds} rounds, alternating)")
    rates = {}
    for name, found in runs_.items():
        rates[name] = statistics.median(r["tokens_per_s"] for r in found)
        each = ", ".join(f"{r['tokens_per_s']:.0f}" for r in found)
        print(f"  {name:14} {rates[name]:9.0f} tokens/s (median of {each}); "
              f"torch {found[0].get('torch')}, numpy {found[0].get('numpy')}; weights {sorted({r['weights'] for r in found})}")
    same = {r["weights"] for r in runs_["pinned (AVX2)"]} == {r["weights"] for r in runs_["native"]}
    print(f"  pinned / native tokens/s: {rates['pinned (AVX2)'] / rates['native']:.3f}; the pin "
          + ("does not change the bits here (this CPU's own kernels are AVX2)" if same else
             "changes the bits here: the pin is active"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--isa-only", action="store_true", help="only the instruction-set comparison")
    parser.add_argument("--one-loop", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one_loop:
        import json

        print(json.dumps(one_loop(args.steps, args.batch_size, args.threads)))
        return
    if args.isa_only:
        compare_instruction_sets(args.rounds, args.steps, args.batch_size, args.threads)
        return
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
        pairs = args.threads == 2 and workers.machine_cores() >= 2
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
    compare_instruction_sets(args.rounds, args.steps, args.batch_size, args.threads)


if __name__ == "__main__":
    main()
