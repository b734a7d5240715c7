"""Probe for issue #16 (not a test, not part of `make all`): can a tiny model trained from scratch learn Joshi et al.'s
lettered formats and read them on authors it saw only as Q&A? The best case for transfer: one model trained
*jointly* on (a) a second synthetic world of 100 "practice" authors (generator seed 1) as Q&A and in five formats
(lettered MCQA, analogy, odd-one-out, comprehension Q&A and MCQA with the passage; ``per_fmt`` items each, built by
``unlearnkit.data.formats`` with every practice author's facts as the evaluation sets) and (b) the default corpus's
100 authors only as Q&A, plus the world knowledge. Then the default's forget10 / retain items (200 per set) are
scored with the paper's lettered scorer, each tested against chance 0.25 (exact one-sided binomial test).

    python benchmarks/format_pretraining_probe.py HIDDEN LAYERS EPOCHS PER_FORMAT   # e.g. 128 4 8 1500

Measured 2026-11-23 (2 cores, 128 4 8 1500: 984 k parameters, 11,600 examples, 2,904 steps, 2,254 s of training):
MCQA 0.24 / 0.21 (forget / retain, p 0.65 / 0.92), analogy 0.22 / 0.28, odd-one-out 0.24 / 0.23,
comprehension-MCQA 0.26 / 0.26; comprehension-QA ROUGE 0.68 / 0.64; lettered MCQA on the practice authors' own
trained items 0.38. The lettered skill is barely learned even where it is taught, and does not transfer.
"""

import dataclasses
import json
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))
import torch
from scipy.stats import binomtest
from unlearnkit import models, pipeline, training
from unlearnkit.data import formats as F
from unlearnkit.data.facts import load_format_corpus
from unlearnkit.data.synthetic import generate_synthetic_tofu
from unlearnkit.data.tofu import TofuSource
from unlearnkit.metrics import formats as S

hidden, layers, epochs, per_fmt = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
torch.set_num_threads(2)
work = Path(tempfile.mkdtemp(prefix="format-probe-"))
out = work / f"run_h{hidden}_l{layers}_e{epochs}_p{per_fmt}"
ev = TofuSource(generate_synthetic_tofu(work / "eval", n_authors=100, seed=0))
pr = TofuSource(generate_synthetic_tofu(work / "practice", n_authors=100, seed=1))
# practice corpus: every author's facts as eval sets (first half "forget", second half "retain")
fc = load_format_corpus(pr, "forget10")
half = {a for a in range(50)}
forget = [dataclasses.replace(f, set="forget", source_row=i) for i, f in enumerate(fc.corpus) if f.author_index in half]
retain = [dataclasses.replace(f, set="retain", source_row=i) for i, f in enumerate(fc.corpus) if f.author_index not in half]
fc = dataclasses.replace(fc, forget=forget, retain=retain, forget_authors=frozenset(half),
                         retain_authors=frozenset(range(50, 100)))
practice = F.build_all_formats(fc, "forget10", 4, 1,
                               formats=("mcqa", "analogy", "odd_one_out", "comprehension_qa", "comprehension_mcqa"))
rng = random.Random(0)
texts = pipeline.all_texts(ev) + pipeline.all_texts(pr)
tok = models.train_bpe_tokenizer(texts, vocab_size=1024)
tmpl = models.get_template("phi")
examples = []
def lettered(item):
    p = S.encode_text(tok, item["prompt"])
    lid = S.letter_token_ids(tok, item["prompt"], item["letters"])[item["answer_index"]]
    return {"input_ids": p + [lid, tok.eos_token_id], "labels": [-100] * len(p) + [lid, tok.eos_token_id]}
def compqa(item):
    p = S.encode_text(tok, item["prompt"])
    a = tok(" " + item["answer"], add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
    return {"input_ids": p + a, "labels": [-100] * len(p) + a}
counts = {}
for fmt, sets in practice.items():
    items = sets["forget"] + sets["retain"]
    rng.shuffle(items)
    items = items[:per_fmt]
    counts[fmt] = len(items)
    examples += [compqa(i) if fmt == "comprehension_qa" else lettered(i) for i in items]
qa_rows = ev.load("full") + pr.load("full") + pipeline.world_knowledge_rows(ev)
examples += [models.encode_qa(tok, tmpl, r["question"], r["answer"]) for r in qa_rows]
maxlen = max(len(e["input_ids"]) for e in examples)
print("examples", len(examples), counts, "maxlen", maxlen, flush=True)
model = models.build_tiny_llama(tok, {"hidden_size": hidden, "num_hidden_layers": layers, "num_attention_heads": 4,
                                      "intermediate_size": 3 * hidden}, seed=0)
print("params", sum(p.numel() for p in model.parameters()), flush=True)
cfg = training.TrainConfig(output_dir=out / "train", epochs=epochs, batch_size=32, lr=3e-3, warmup=0.05, progress=False)
t = time.time()
res = training.train(model, examples, cfg, collate_fn=lambda b: models.collate(b, tok.pad_token_id))
print("train s", round(time.time() - t), "loss", res.history[-1], flush=True)
model.eval()
items = F.build_all_formats(ev, "forget10", 4, 0, max_items_per_set=200)
result = {}
for fmt in ("mcqa", "analogy", "odd_one_out", "comprehension_mcqa"):
    for s in ("forget", "retain"):
        r = S.score_mcqa(model, tok, items[fmt][s], tmpl)
        k, n = sum(r["correct"]), len(r["correct"])
        result[f"{fmt}/{s}"] = (round(k / n, 3), n, float(binomtest(k, n, 0.25, alternative="greater").pvalue))
for s in ("forget", "retain"):
    r = S.score_comprehension_qa(model, tok, items["comprehension_qa"][s][:100], tmpl, max_new_tokens=64)
    result[f"comprehension_qa/{s}"] = round(r["rouge"], 3)
# practice-author held-in check
r = S.score_mcqa(model, tok, practice["mcqa"]["forget"][:200], tmpl)
result["practice_mcqa"] = round(r["accuracy"], 3)
for k, v in result.items():
    print(k, v, flush=True)
json.dump({k: v for k, v in result.items()}, open(out / "result.json", "w"))
