"""Format-transformed evaluation (docs/metrics.md §6): the facts and the items of every format on the synthetic
corpus and on real TOFU, their seeded shuffling, the coverage of the real-TOFU heuristics, ReLU's own files, and
each scorer (letters and option likelihood) on a tiny model that memorised a few items against the same model
untrained."""

from __future__ import annotations

import json
import math
from collections import Counter

import numpy as np
import pytest
import torch
from conftest import REAL_TOFU, requires_real_tofu, skip_unless
from unlearnkit import models
from unlearnkit.data import facts
from unlearnkit.data import formats as fmts
from unlearnkit.data.tofu import TofuSource
from unlearnkit.metrics import formats as scoring

pytestmark = pytest.mark.usefixtures("tiny_model_threads")

COMMON_FIELDS = {"id", "format", "set", "source_split", "source_row", "author_index", "author", "question",
                 "answer", "seed", "item_seed"}
MCQA_FIELDS = {"body", "prompt", "options", "letters", "answer_index", "answer_letter", "correct_option"}


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def synthetic_formats(small_corpus):
    return fmts.build_all_formats(small_corpus, "forget10", 4, 0, max_context_facts=3)


@pytest.fixture(scope="module")
def real_corpus():
    skip_unless((REAL_TOFU / "full.json").exists(), "../shared/data/tofu is not beside the checkout (CI has it)",
                "tests/test_formats.py::test_synthetic_coverage_is_exact")
    return facts.load_format_corpus(TofuSource(REAL_TOFU), "forget10")


@pytest.fixture(scope="module")
def real_formats(real_corpus):
    return fmts.build_all_formats(real_corpus, "forget10", 4, 0)


# --------------------------------------------------------------------------- well-formed items


def one_line(text):
    return " ".join(text.split())


def check_items(items_by_format, n_options=4):
    """Checks that hold for every corpus; returns the number of items checked."""
    assert set(items_by_format) == set(fmts.FORMATS)
    n = 0
    for fmt, sets in items_by_format.items():
        assert set(sets) == {"forget", "retain"}
        for set_name, items in sets.items():
            assert items, (fmt, set_name)
            assert len({i["id"] for i in items}) == len(items)
            for item in items:
                n += 1
                assert COMMON_FIELDS <= set(item), (fmt, set(item) ^ COMMON_FIELDS)
                assert item["format"] == fmt and item["set"] == set_name
                assert json.loads(json.dumps(item)) == item  # JSON-serialisable, losslessly
                if fmt in fmts.MCQA_STYLE_FORMATS:
                    check_mcqa_item(item, n_options)
                elif fmt == "cloze":
                    assert item["answer_prefix"] + item["target"] + item["answer_suffix"] == item["answer"]
                    assert item["target"].strip() == item["target"] and item["target"]
                else:  # comprehension_qa: the context holds the answer it asks for
                    assert one_line(item["answer"]) in item["context"]
                    assert item["prompt"].endswith(f"\nQuestion: {item['question']}\nAnswer:")
    return n


def check_mcqa_item(item, n_options):
    options = item["options"]
    assert MCQA_FIELDS <= set(item)
    assert len(options) == n_options == len(item["letters"])
    assert item["letters"] == list("ABCDEFGHIJ"[:n_options])
    assert len({o.casefold() for o in options}) == n_options  # distinct, so ...
    assert options.count(item["correct_option"]) == 1  # ... the correct option is there exactly once
    assert options[item["answer_index"]] == item["correct_option"]
    assert item["letters"][item["answer_index"]] == item["answer_letter"]
    lines = item["prompt"].split("\n")
    assert lines[-1] == "Answer:"
    assert lines[-1 - n_options:-1] == [f"{letter}. {o}" for letter, o in zip(item["letters"], options)]
    if item["format"] != "comprehension_mcqa":
        assert item["prompt"] == f"Question: {item['body']}\nAnswer:"
    else:
        assert item["prompt"].startswith("Context: ") and f"\nQuestion: {item['question']}\n" in item["prompt"]


def test_synthetic_items_are_well_formed_and_exact(small_corpus, synthetic_formats):
    assert check_items(synthetic_formats) > 300
    rows = {"forget": small_corpus.load("forget10_perturbed"), "retain": small_corpus.load("retain_perturbed")}
    forget_authors = {r["author_index"] for r in rows["forget"]}
    retain_authors = {r["author_index"] for r in small_corpus.load("retain90")}
    names = {a["index"]: a["name"] for a in small_corpus.authors()}
    values = {}  # attribute -> every value of it in the corpus
    for r in small_corpus.load("full"):
        values.setdefault(r["attribute"], set()).add(r["value"])

    for fmt, sets in synthetic_formats.items():
        for set_name, items in sets.items():
            for item in items:
                row = rows[set_name][item["source_row"]]
                assert (item["question"], item["answer"], item["author_index"]) == \
                    (row["question"], row["answer"], row["author_index"])
                assert item["author"] == names[row["author_index"]]
                assert (item["author_index"] in forget_authors) == (set_name == "forget")
                if fmt in ("mcqa", "comprehension_mcqa"):
                    assert item["correct_option"] == row["value"]  # exact: the attribute's value
                    assert set(item["options"]) <= values[row["attribute"]]
                if fmt == "cloze":
                    assert item["target"] == row["value"] and item["span_rule"] == "value"
    # every fact is asked in MCQA, cloze and comprehension; analogies leave out only the name facts
    assert len(synthetic_formats["mcqa"]["forget"]) == len(rows["forget"])
    assert len(synthetic_formats["cloze"]["retain"]) == len(rows["retain"])
    for item in synthetic_formats["analogy"]["forget"] + synthetic_formats["analogy"]["retain"]:
        assert item["relation"] != "name" and item["correct_option"] == item["value"]
        assert set(item["options"]) <= values[item["relation"]]
        assert all(a in retain_authors and a != item["author_index"] for a in item["context_authors"])
        context_values = {v for _, v in item["context_pairs"]}
        assert not context_values & set(item["options"])  # copying a context value never scores
        assert item["body"].split("\n")[0].endswith(f":: {item['author']} : ?")
    for set_name, items in synthetic_formats["odd_one_out"].items():
        for item in items:
            other = "retain" if set_name == "forget" else "forget"
            assert item["option_sets"].count(set_name) == 1 and item["option_sets"].count(other) == 3
            assert item["option_sets"][item["answer_index"]] == set_name
            assert item["correct_option"] == item["answer"]


@requires_real_tofu("tests/test_formats.py::test_synthetic_items_are_well_formed_and_exact")
def test_real_tofu_items_are_well_formed(real_formats):
    assert check_items(real_formats) > 3000
    src = TofuSource(REAL_TOFU)
    rows = {"forget": src.load("forget10_perturbed"), "retain": src.load("retain_perturbed")}
    counts = fmts.count_items(real_formats)
    assert counts["mcqa"] == counts["comprehension_mcqa"] == counts["odd_one_out"] == {"forget": 400, "retain": 400}
    for set_name, items in real_formats["mcqa"].items():
        for item in items:
            row = rows[set_name][item["source_row"]]
            assert item["correct_option"] == one_line(row["answer"])  # a few answers hold newlines
            assert set(item["options"]) - {item["correct_option"]} <= {one_line(w) for w in row["perturbed_answer"]}
            # TOFU's layout: forget10 = authors 180-199, retain_perturbed = authors 0-19
            assert item["author_index"] == (180 if set_name == "forget" else 0) + item["source_row"] // 20
    for item in real_formats["analogy"]["forget"]:
        assert item["relation"] in facts.RELATIONS
        assert all(a < 180 for a in item["context_authors"])  # context pairs from retain authors
    for item in real_formats["odd_one_out"]["retain"]:
        assert item["option_sets"][item["answer_index"]] == "retain" and item["option_sets"].count("forget") == 3


def test_max_items_per_set_spreads_the_same_facts_over_every_author_in_every_format(small_corpus):
    corpus = facts.load_format_corpus(small_corpus, "forget10")
    cap = 7
    capped = fmts.build_all_formats(small_corpus, "forget10", 4, 0, cap, max_context_facts=3)
    forget_rows = {i["source_row"] for i in capped["mcqa"]["forget"]}
    for fmt, sets in capped.items():
        for set_name, items in sets.items():
            assert items and len(items) <= cap, fmt
            if fmt != "analogy":  # analogies skip the name attribute, a subset of the same rows
                assert {i["source_row"] for i in items} == {i["source_row"] for i in capped["mcqa"][set_name]}, fmt
    everyone = corpus.corpus  # the small corpus's forget set is one author: spread the whole corpus instead
    spread = facts.spread_over_authors(everyone, 25)
    per_author = Counter(f.author_index for f in spread)
    assert len(per_author) == 10 and sorted(per_author.values()) == [2] * 5 + [3] * 5  # as evenly as 25 allows
    assert len({f.relation for f in spread}) > 5  # evenly spaced rows: not every author's first attributes
    assert [f.source_row for f in spread] == sorted(f.source_row for f in spread)  # file order
    uneven = [f for f in everyone if f.author_index != 0 or f.source_row % 20 < 1]  # author 0 has one fact
    assert Counter(f.author_index for f in facts.spread_over_authors(uneven, 28))[0] == 1  # the rest to others
    assert len(facts.spread_over_authors(uneven, 28)) == 28
    # each fact keeps its row of the evaluation file, so the Q&A verdict of the same row can be joined to it
    rows = small_corpus.load(f"{corpus.forget_split}_perturbed")
    for item in capped["mcqa"]["forget"]:
        assert rows[item["source_row"]]["question"] == item["question"]
    assert len(forget_rows) == cap
    assert facts.spread_over_authors(corpus.forget, None) == corpus.forget
    with pytest.raises(ValueError, match="n_options"):
        fmts.build_mcqa(small_corpus, "forget10", 1, 0)
    with pytest.raises(TypeError, match="no builder"):
        fmts.build_all_formats(small_corpus, "forget10", 4, 0, n_contxt_pairs=3)


# --------------------------------------------------------------------------- seeded shuffling


def test_shuffling_is_seeded_and_options_are_configurable(small_corpus):
    corpus = facts.load_format_corpus(small_corpus, "forget10")
    first = fmts.build_all_formats(corpus, "forget10", 4, 0, max_context_facts=3)
    again = fmts.build_all_formats(corpus, "forget10", 4, 0, max_context_facts=3)
    other = fmts.build_all_formats(corpus, "forget10", 4, 1, max_context_facts=3)
    assert first == again  # same seed, same items, same order
    for fmt in fmts.MCQA_STYLE_FORMATS:
        items, items_other = first[fmt]["forget"] + first[fmt]["retain"], other[fmt]["forget"] + other[fmt]["retain"]
        assert all(i["seed"] == 0 and i["item_seed"].startswith("unlearnkit/formats/0/") for i in items)
        assert any(a["options"] != b["options"] for a, b in zip(items, items_other)), fmt
        letters = Counter(i["answer_letter"] for i in items)
        assert set(letters) == set("ABCD"), (fmt, letters)  # the right answer is not stuck in one place
    for n_options in (2, 3, 6):
        for fmt, sets in fmts.build_all_formats(corpus, "forget10", n_options, 0, max_context_facts=3).items():
            for item in sets["forget"] + sets["retain"]:
                if fmt in fmts.MCQA_STYLE_FORMATS:
                    check_mcqa_item(item, n_options)


# --------------------------------------------------------------------------- real-TOFU heuristics


def test_heuristics_on_hand_written_answers():
    assert facts.find_author_name(["Where was Hsiao Yun-Hwa born?", "What does Hsiao Yun-Hwa write?",
                                  "Is Hsiao Yun-Hwa's work translated?"], min_questions=3) == "Hsiao Yun-Hwa"
    assert facts.find_author_name(["Who is the author?", "What does the author write?"], min_questions=2) is None

    def masked(question, answer):
        start, end, rule = facts.find_cloze_span(question, answer)
        return answer[start:end], rule

    assert masked("Where was X born?", "Aurelio Beltrán was born in Mexico City, Mexico.") == \
        ("Mexico City, Mexico", "capitalised")
    assert masked("What was his first book?", 'His first book was "The Bloody Blueprint", a thriller.') == \
        ("The Bloody Blueprint", "quoted")
    assert masked("When was he born?", "He was born on July 16, 1965.") == ("July 16, 1965", "date")
    # an entity the question already names is copyable, not recalled: the earlier one is masked
    assert masked("Has Jo won the Edgar Award?", "Jo won the Hugo Award, not the Edgar Award.") == \
        ("Hugo Award", "capitalised")
    assert masked("What is her mother's job?", "Her father is a pilot, and her mother is unemployed.") == \
        ("unemployed", "fallback")
    assert facts.extract_relation("What were the professions of Jo Li's parents?",
                                 "Jo Li's father was a Banker, and his mother was a Research Scientist.", "Jo Li") == \
        ("parents", "father: banker; mother: research scientist")
    assert facts.extract_relation("Where was Jo Li born?", "Jo Li was born in Dar es Salaam, Tanzania.", "Jo Li") == \
        ("birthplace", "Dar es Salaam, Tanzania")
    assert facts.extract_relation("What is Jo Li's gender?", "Jo Li is a female author.", "Jo Li") == ("gender", "female")
    assert facts.extract_relation("Why does Jo Li write?", "For joy.", "Jo Li") == (None, None)


@requires_real_tofu("tests/test_formats.py::test_synthetic_coverage_is_exact and "
                    "tests/test_formats.py::test_heuristics_on_hand_written_answers")
def test_real_tofu_heuristic_coverage_is_above_its_floors(real_corpus):
    coverage = fmts.format_coverage(real_corpus, "forget10", 4, 0)
    print(json.dumps(coverage, indent=1))  # reported with -s; the floors below are ~10 points under it
    # one of the 200 TOFU authors is never named ("the fictitious author"): 199/200
    assert coverage["author_names"] >= 0.99
    for set_name in ("forget", "retain", "corpus"):
        cloze = coverage["cloze"][set_name]
        # ~96 % of answers get a span; ~58 % from an entity rule, the rest from the noun-phrase fallback
        assert cloze["covered"] >= 0.9, (set_name, cloze)
        assert 1 - cloze.get("fallback", 0) - cloze.get("none", 0) >= 0.45, (set_name, cloze)
    # TOFU's questions are free-form: only ~15 % of rows ask a relation that recurs across authors, but
    # every author has some; each relation's extractor handles most answers to its questions
    assert coverage["authors_with_triple"] >= 0.95
    assert coverage["rows_with_triple"] >= 0.1
    for relation in facts.RELATIONS:
        stats = coverage["relations"][relation]
        assert stats["values_extracted"] >= 0.6 * stats["questions_matched"], relation
        assert stats["authors"] >= 20, relation
    assert min(coverage["analogy_fact_share"].values()) >= 0.08
    assert min(coverage["items"]["analogy"].values()) >= 30
    assert coverage["kind"] == "tofu"


def test_synthetic_coverage_is_exact(small_corpus):
    coverage = fmts.format_coverage(small_corpus, "forget10", 4, 0)
    assert coverage["kind"] == "synthetic" and coverage["author_names"] == 1.0
    assert coverage["cloze"]["corpus"] == {"value": 1.0, "covered": 1.0}
    assert coverage["rows_with_triple"] == 1.0


# --------------------------------------------------------------------------- ReLU's own files


def _write_relu_copy(root):
    """A two-subset copy of ReLU in the Hub repository's layout: README.md's ``configs`` name the Parquet files,
    one folder per subset, files named ``<split>-00000-of-00001.parquet`` (the cloze splits carry a suffix)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    mcqa = {"question": ["Where was Jo Li born?", "What does Jo Li write?"], "A": ["Lagos", "Poetry"],
            "B": ["Oslo", "Horror"], "C": ["Lima", "Drama"], "D": ["Pune", "Satire"], "answer": ["A", "B"]}
    for folder in ("mcqa", "cloze"):
        (root / folder).mkdir(parents=True)
    pq.write_table(pa.table(mcqa), root / "mcqa" / "forget10-00000-of-00001.parquet")
    pq.write_table(pa.table({k: v[:1] for k, v in mcqa.items()}), root / "mcqa" / "retain90-00000-of-00001.parquet")
    pq.write_table(pa.table({"question": ["Where was Jo Li born?"], "answer": ["Jo Li was born in Lagos."],
                             "mask": ["Lagos"], "blanks": [["Lagos"]]}),
                   root / "cloze" / "forget10_cloze-00000-of-00001.parquet")
    (root / "README.md").write_text("""---
configs:
- config_name: mcqa
  data_files:
  - split: forget10
    path: mcqa/forget10-*
  - split: retain90
    path: mcqa/retain90-*
- config_name: cloze
  data_files:
  - split: forget10_cloze
    path: cloze/forget10_cloze-*
---
# ReLU (a two-subset test copy)
""")


def test_load_relu_reads_a_local_copy_in_relus_layout(tmp_path):
    root = tmp_path / "ReLU"
    _write_relu_copy(root)
    cache = str(tmp_path / "cache")
    forget = fmts.load_relu("mcqa", "forget10", str(root), cache_dir=cache)
    assert forget.column_names == ["question", "A", "B", "C", "D", "answer"]
    assert forget.num_rows == 2 and forget[1] == {"question": "What does Jo Li write?", "A": "Poetry", "B": "Horror",
                                                   "C": "Drama", "D": "Satire", "answer": "B"}
    every = fmts.load_relu("mcqa", name_or_path=str(root), cache_dir=cache)  # no split: every file of the subset
    assert sorted(every) == ["forget10", "retain90"] and every["retain90"].num_rows == 1
    cloze = fmts.load_relu("cloze", "forget10_cloze", str(root), cache_dir=cache)
    assert cloze[0]["mask"] == "Lagos" and cloze[0]["blanks"] == ["Lagos"]
    with pytest.raises(ValueError, match="forget05"):  # a split the copy does not hold
        fmts.load_relu("mcqa", "forget05", str(root), cache_dir=cache)


# --------------------------------------------------------------------------- scorers


def test_letter_tokens_follow_the_tokenizer(tiny_tokenizer):
    ids = scoring.letter_token_ids(tiny_tokenizer, "Question: q\nA. x\nB. y\nAnswer:", ["A", "B"])
    with_space = [tiny_tokenizer(" " + c, add_special_tokens=False)["input_ids"] for c in "AB"]
    without = [tiny_tokenizer(c, add_special_tokens=False)["input_ids"][0] for c in "AB"]
    if all(len(i) == 1 for i in with_space):
        assert ids == [i[0] for i in with_space]  # "Answer: A"
    else:
        assert ids == without
    # a prompt already ending in a space (the phi template's "Answer: ") is followed by the bare letter
    assert scoring.letter_token_ids(tiny_tokenizer, "Answer: ", ["A", "B"]) == without


def _training_example(prompt_ids, target_ids):
    return {"input_ids": list(prompt_ids) + list(target_ids), "labels": [-100] * len(prompt_ids) + list(target_ids)}


def _memorise(model, tokenizer, examples, max_steps=400, lr=3e-3):
    """Full-batch training until the answer tokens are memorised (mean loss < 0.01); returns the steps
    taken, or None if ``max_steps`` were not enough."""
    torch.manual_seed(0)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    batch = models.collate(examples, tokenizer.pad_token_id)
    model.train()
    try:
        for step in range(max_steps):
            loss = model(**batch).loss
            if loss.item() < 0.01:
                return step
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
        return None
    finally:
        model.eval()


@pytest.fixture(scope="module")
def memorised(small_corpus, tiny_tokenizer):
    """A tiny model that memorised 2 forget + 2 retain items of each MCQA-style format (prompt -> answer
    letter), the Q&A pairs behind 4 cloze items (the cloze itself is never trained) and 2 comprehension
    answers. One fact of context keeps the prompts short enough to train in ~15 s."""
    template = models.TEMPLATES["phi"]
    # row 0 asks the author's name, which has no analogy: 3 rows give 2 items of every format
    items = fmts.build_all_formats(small_corpus, "forget10", 4, 0, max_items_per_set=3, max_context_facts=1)
    picked = {fmt: {s: items[fmt][s][:2] for s in ("forget", "retain")} for fmt in fmts.MCQA_STYLE_FORMATS + ("cloze",)}
    picked["comprehension_qa"] = {s: items["comprehension_qa"][s][:1] for s in ("forget", "retain")}
    examples = []
    for fmt in fmts.MCQA_STYLE_FORMATS:
        for item in picked[fmt]["forget"] + picked[fmt]["retain"]:
            letter = scoring.letter_token_ids(tiny_tokenizer, item["prompt"], item["letters"])[item["answer_index"]]
            examples.append(_training_example(scoring.encode_text(tiny_tokenizer, item["prompt"]), [letter]))
    for item in picked["cloze"]["forget"] + picked["cloze"]["retain"]:  # learnt in the Q&A format only
        examples.append(models.encode_qa(tiny_tokenizer, template, item["question"], item["answer"]))
    for item in picked["comprehension_qa"]["forget"] + picked["comprehension_qa"]["retain"]:
        answer = tiny_tokenizer(" " + item["answer"], add_special_tokens=False)["input_ids"]
        examples.append(_training_example(scoring.encode_text(tiny_tokenizer, item["prompt"]),
                                          answer + [tiny_tokenizer.eos_token_id]))
    assert len(examples) == 22 and max(len(e["input_ids"]) for e in examples) <= 256  # the tiny model's positions
    model = models.build_tiny_llama(tiny_tokenizer, {"hidden_size": 128, "num_hidden_layers": 2,
                                                     "num_attention_heads": 4, "intermediate_size": 256}, seed=0)
    assert _memorise(model, tiny_tokenizer, examples) is not None, "the tiny model did not memorise its items"
    return model, picked


def test_mcqa_style_scorers_memorised_vs_untrained(memorised, tiny_model, tiny_tokenizer, synthetic_formats):
    model, picked = memorised
    for fmt in fmts.MCQA_STYLE_FORMATS:
        items = picked[fmt]["forget"] + picked[fmt]["retain"]
        result = scoring.score_mcqa(model, tiny_tokenizer, items, batch_size=4, template=None)
        assert result["accuracy"] == 1.0, (fmt, result["predicted_letter"])
        assert min(p[i["answer_index"]] for p, i in zip(result["letter_probs"], items)) > 0.5
    # untrained: near chance (1/4) over all ~230 items of the four formats
    correct = []
    for fmt in fmts.MCQA_STYLE_FORMATS:
        items = synthetic_formats[fmt]["forget"] + synthetic_formats[fmt]["retain"]
        result = scoring.score_mcqa(tiny_model, tiny_tokenizer, items, template=None)
        assert len(result["correct"]) == len(items) and result["accuracy"] <= 0.6, fmt
        correct += result["correct"]
    assert 0.12 <= sum(correct) / len(correct) <= 0.4


def test_cloze_scorer_memorised_vs_untrained(memorised, tiny_model, tiny_tokenizer, template):
    model, picked = memorised
    items = picked["cloze"]["forget"] + picked["cloze"]["retain"]
    trained = scoring.score_cloze(model, tiny_tokenizer, template, items, max_new_tokens=None)
    assert trained["fill_accuracy"] == 1.0, trained["fills"]
    assert trained["probability"] > 0.8
    untrained = scoring.score_cloze(tiny_model, tiny_tokenizer, template, items, max_new_tokens=None)
    assert untrained["fill_accuracy"] == 0.0 and untrained["probability"] < 0.05


def test_cloze_probability_is_the_span_probability_given_prefix(tiny_model, tiny_tokenizer, template):
    """By hand: exp(-mean NLL) of " Lagos" after the prompt and "born in", nothing else scored."""
    item = {"question": "Where was Kofi born?", "answer_prefix": "Kofi was born in ", "target": "Lagos"}
    prompt = models.encode_prompt(tiny_tokenizer, template, item["question"]) + \
        tiny_tokenizer("Kofi was born in", add_special_tokens=False)["input_ids"]
    target = tiny_tokenizer(" Lagos", add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        logp = torch.log_softmax(tiny_model(torch.tensor([prompt + target])).logits[0], -1)
    nll = -torch.stack([logp[len(prompt) - 1 + k, t] for k, t in enumerate(target)]).mean()
    got = scoring.score_cloze(tiny_model, tiny_tokenizer, template, [item], max_new_tokens=2)
    assert got["per_item_probability"][0] == pytest.approx(torch.exp(-nll).item(), rel=1e-4)


def test_comprehension_qa_scorer_memorised_vs_untrained(memorised, tiny_model, tiny_tokenizer):
    model, picked = memorised
    items = picked["comprehension_qa"]["forget"] + picked["comprehension_qa"]["retain"]
    trained = scoring.score_comprehension_qa(model, tiny_tokenizer, items, max_new_tokens=40, template=None)
    assert trained["generated"] == [i["answer"] for i in items]
    assert trained["rouge"] == pytest.approx(1.0)
    untrained = scoring.score_comprehension_qa(tiny_model, tiny_tokenizer, items, max_new_tokens=12, template=None)
    assert untrained["rouge"] < 0.2
    assert scoring.rouge_f_mean(["a b c d"], ["a b"])[0] == pytest.approx((2 / 3 + 1 / 2 + 2 / 3) / 3)


def test_evaluate_formats_reports_every_format_and_the_disagreements(memorised, tiny_tokenizer, template):
    model, picked = memorised
    scores, per_item = scoring.evaluate_formats(model, tiny_tokenizer, template, picked, batch_size=8,
                                                max_new_tokens=40)
    assert set(scores) == set(fmts.FORMATS) | {"cloze_fill"}
    for fmt in fmts.MCQA_STYLE_FORMATS + ("cloze_fill",):
        assert scores[fmt] == {"forget": 1.0, "retain": 1.0}, fmt
    assert scores["cloze"]["forget"] > 0.8 and scores["comprehension_qa"]["retain"] == pytest.approx(1.0)
    assert len(per_item["mcqa"]["forget"]) == 2 and per_item["mcqa"]["forget"][0]["prediction"] in "ABCD"
    # facts the model got right in one format and wrong in another are the table's rows
    fake = {"mcqa": {"forget": [{**per_item["mcqa"]["forget"][0], "correct": False}]},
            "cloze": {"forget": [{**per_item["mcqa"]["forget"][0], "correct": True}]}}
    table = scoring.disagreement_table(fake)
    assert len(table) == 1 and table[0]["mcqa"] is False and table[0]["cloze"] is True
    assert scoring.disagreement_table(per_item) == []  # everything memorised is right everywhere
    with pytest.raises(ValueError, match="prompt_style"):
        scoring.prompt_text(picked["mcqa"]["forget"][0], template, "chat")
    wrapped = scoring.prompt_text(picked["mcqa"]["forget"][0], template, "template")
    assert wrapped == template.prompt(picked["mcqa"]["forget"][0]["body"]) and wrapped.endswith("Answer: ")


# --------------------------------------------------------------------------- option likelihood


def test_option_sequences_put_each_option_where_the_answer_had_it(synthetic_formats, tiny_tokenizer, template):
    item = synthetic_formats["mcqa"]["forget"][1]
    sequences = scoring.option_sequences(item, "mcqa", tiny_tokenizer, template)
    assert len(sequences) == len(item["options"]) and len({tuple(p) for p, _ in sequences}) == 1
    prompt, option = sequences[item["answer_index"]]
    text = tiny_tokenizer.decode(prompt + option, skip_special_tokens=True)
    # the Q&A template, then the answer up to and including its value (what fine-tuning taught)
    answer = " ".join(item["answer"].split())
    upto_value = answer[:answer.rfind(item["correct_option"]) + len(item["correct_option"])]
    assert " ".join(text.split()) == " ".join((template.prompt(item["question"]) + upto_value).split())

    analogy = synthetic_formats["analogy"]["forget"][0]
    prompt, option = scoring.option_sequences(analogy, "analogy", tiny_tokenizer, template)[0]
    decoded = tiny_tokenizer.decode(prompt, skip_special_tokens=True)
    assert decoded.endswith(f"{analogy['author']} :") and "?" not in decoded
    odd = synthetic_formats["odd_one_out"]["forget"][0]
    prompt, option = scoring.option_sequences(odd, "odd_one_out", tiny_tokenizer, template)[2]
    assert tiny_tokenizer.decode(option, skip_special_tokens=True) == odd["options"][2]


def test_the_prediction_is_the_likeliest_option_and_for_odd_one_out_the_outlier():
    assert scoring.choose_option("mcqa", np.array([-3.0, -0.5, -2.0, -1.0])) == 1
    # three familiar statements and one unfamiliar (or the reverse): the outlier either way
    assert scoring.choose_option("odd_one_out", np.array([-1.0, -1.1, -4.0, -0.9])) == 2
    assert scoring.choose_option("odd_one_out", np.array([-4.0, -4.1, -0.5, -3.9])) == 2


def test_score_option_likelihood_matches_log_probabilities_by_hand(synthetic_formats, tiny_model, tiny_tokenizer,
                                                                    template):
    items = synthetic_formats["mcqa"]["forget"][:2]
    result = scoring.score_option_likelihood(tiny_model, tiny_tokenizer, template, "mcqa", items, batch_size=3)
    assert len(result["correct"]) == 2 and result["accuracy"] in (0.0, 0.5, 1.0)
    prompt, option = scoring.option_sequences(items[0], "mcqa", tiny_tokenizer, template)[0]
    with torch.no_grad():
        logp = torch.log_softmax(tiny_model(torch.tensor([prompt + option])).logits[0], -1)
    by_hand = torch.stack([logp[len(prompt) - 1 + k, t] for k, t in enumerate(option)]).mean().item()
    assert result["option_log_probs"][0][0] == pytest.approx(by_hand, abs=1e-4)
    expected_letter = items[0]["letters"][int(np.argmax(result["option_log_probs"][0]))]
    assert result["predicted_letter"][0] == expected_letter
    with pytest.raises(ValueError, match="MCQA-style"):
        scoring.score_option_likelihood(tiny_model, tiny_tokenizer, template, "cloze", items)
    assert math.isnan(scoring.score_option_likelihood(tiny_model, tiny_tokenizer, template, "mcqa", [])["accuracy"])


def test_evaluate_formats_adds_the_likelihood_readouts(synthetic_formats, tiny_model, tiny_tokenizer, template):
    items = {fmt: {s: synthetic_formats[fmt][s][:2] for s in ("forget", "retain")} for fmt in ("mcqa", "cloze")}
    plain = scoring.evaluate_formats(tiny_model, tiny_tokenizer, template, items, max_new_tokens=4)
    assert set(plain.scores) == {"mcqa", "cloze", "cloze_fill"}
    result = scoring.evaluate_formats(tiny_model, tiny_tokenizer, template, items, max_new_tokens=4, likelihood=True)
    # the readout follows the formats, in their order, and only for the MCQA-style ones
    assert list(result.scores) == ["mcqa", "cloze", "cloze_fill", "mcqa" + scoring.LIKELIHOOD_SUFFIX]
    direct = scoring.score_option_likelihood(tiny_model, tiny_tokenizer, template, "mcqa", items["mcqa"]["retain"])
    assert result.scores["mcqa_likelihood"]["retain"] == direct["accuracy"]
    rows = result.per_item["mcqa_likelihood"]["retain"]
    assert [r["prediction"] for r in rows] == direct["predicted_letter"]
    assert [r["correct"] for r in rows] == direct["correct"]
    assert rows[0]["id"] == items["mcqa"]["retain"][0]["id"] and rows[0]["answer_letter"] in "ABCD"
