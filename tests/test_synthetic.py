"""Tests of the synthetic TOFU-shaped corpus (unlearnkit.data.synthetic)."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

import pytest
from conftest import SHARED_DATA
from unlearnkit.data.synthetic import (
    ATTRIBUTES,
    GENERATOR_VERSION,
    MIN_QUESTIONS_PER_AUTHOR,
    AuthorRecord,
    author_splits,
    generate_synthetic_tofu,
    make_author_items,
    make_authors,
)

FORGETS = {"forget01": "retain99", "forget05": "retain95", "forget10": "retain90"}
QA_FILES = ["full", *FORGETS, *FORGETS.values()]
AUTHOR_PERTURBED_FILES = [f"{f}_perturbed" for f in FORGETS] + ["retain_perturbed", "retain_heldout"]
WORLD_PERTURBED_FILES = ["world_facts_perturbed", "real_authors_perturbed"]
MCQ_FILES = ["world_facts", "real_authors"]
ALL_FILES = QA_FILES + AUTHOR_PERTURBED_FILES + WORLD_PERTURBED_FILES + MCQ_FILES + ["authors", "manifest"]


def read_jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f]


@pytest.fixture(scope="module")
def default_dir(tmp_path_factory) -> Path:
    return generate_synthetic_tofu(tmp_path_factory.mktemp("synthetic") / "seed0")


@pytest.fixture(scope="module")
def data(default_dir) -> dict[str, list[dict]]:
    return {name: read_jsonl(default_dir / f"{name}.json") for name in ALL_FILES}


def author_order(rows: list[dict]) -> list[int]:
    """Author indices in order of first appearance."""
    return list(dict.fromkeys(r["author_index"] for r in rows))


# --- files and determinism --------------------------------------------------------------------


def test_returns_out_dir_and_writes_every_file(tmp_path, default_dir):
    assert isinstance(default_dir, Path)
    assert sorted(p.name for p in default_dir.iterdir()) == sorted(f"{n}.json" for n in ALL_FILES)
    out = tmp_path / "nested" / "folder"
    assert generate_synthetic_tofu(str(out), n_authors=10, questions_per_author=10,
                                   n_world_facts=5, n_real_authors=5) == out


def test_same_seed_same_bytes_other_seed_other_bytes(tmp_path, default_dir):
    again = generate_synthetic_tofu(tmp_path / "again", seed=0)
    other = generate_synthetic_tofu(tmp_path / "other", seed=1)
    for name in ALL_FILES:
        assert (again / f"{name}.json").read_bytes() == (default_dir / f"{name}.json").read_bytes(), name
    for name in ["full", "forget10_perturbed", "world_facts", "real_authors", "authors"]:
        assert (other / f"{name}.json").read_bytes() != (default_dir / f"{name}.json").read_bytes(), name


def test_utf8_non_ascii_written_verbatim(default_dir):
    text = (default_dir / "authors.json").read_text(encoding="utf-8")
    assert "\\u" not in text  # ensure_ascii=False
    assert any(ord(ch) > 127 for ch in text)  # e.g. Kraków, Malmö, Öztürk
    assert text.endswith("\n") and "\r" not in text


def test_fields_match_tofu_schema(data):
    for name in QA_FILES:
        assert all({"question", "answer", "author", "author_index", "attribute", "value"} <= r.keys()
                   for r in data[name]), name
    perturbed_keys = {"question", "answer", "paraphrased_question", "paraphrased_answer", "perturbed_answer",
                      "author", "author_index", "attribute", "value"}
    for name in AUTHOR_PERTURBED_FILES:
        assert all(r.keys() == perturbed_keys for r in data[name]), name
    for name in WORLD_PERTURBED_FILES:
        assert all(r.keys() == {"question", "answer", "perturbed_answer", "topic", "value"} for r in data[name])
    for name in MCQ_FILES:
        assert all(r.keys() == {"question", "option1", "option2", "option3", "option4", "answer", "topic", "value"}
                   for r in data[name])


def test_fields_are_a_superset_of_the_real_tofu_files(data):
    tofu = SHARED_DATA / "tofu"
    if not tofu.is_dir():
        pytest.skip("reference TOFU files not present")
    for path in sorted(tofu.glob("*.json")):
        name = path.stem
        assert name in data, f"missing TOFU file {path.name}"
        with path.open(encoding="utf-8") as f:
            reference_keys = set(json.loads(f.readline()))
        assert reference_keys <= set(data[name][0]), name


# --- splits -----------------------------------------------------------------------------------


def test_split_sizes_for_defaults(data):
    n_q = 20
    counts = {name: len(rows) for name, rows in data.items()}
    assert counts["full"] == 100 * n_q
    for forget, retain, n_forget in [("forget01", "retain99", 1), ("forget05", "retain95", 5),
                                     ("forget10", "retain90", 10)]:
        assert counts[forget] == counts[f"{forget}_perturbed"] == n_forget * n_q
        assert counts[retain] == (100 - n_forget) * n_q
    assert counts["retain_perturbed"] == 2 * counts["forget10"]
    assert counts["retain_heldout"] == 10 * n_q
    assert counts["world_facts"] == counts["world_facts_perturbed"] == 60
    assert counts["real_authors"] == counts["real_authors_perturbed"] == 40
    assert counts["authors"] == 100


def test_each_author_is_contiguous_and_full_is_in_author_order(data):
    full = data["full"]
    assert author_order(full) == list(range(100))
    assert [r["author_index"] for r in full] == sorted(r["author_index"] for r in full)


def test_forget_nesting_and_full_is_retain_plus_forget(data):
    authors = {name: set(author_order(data[name])) for name in FORGETS}
    assert authors["forget01"] < authors["forget05"] < authors["forget10"]
    for forget, retain in FORGETS.items():
        assert data["full"] == data[retain] + data[forget]
        assert max(author_order(data[retain])) < min(author_order(data[forget]))  # the LAST authors forgotten
        perturbed = data[f"{forget}_perturbed"]
        assert [(r["question"], r["answer"]) for r in perturbed] == \
               [(r["question"], r["answer"]) for r in data[forget]]


@pytest.mark.parametrize("n_authors", [10, 11, 37, 100, 150, 200])
def test_split_rounding_keeps_nesting_and_non_empty(n_authors):
    splits = author_splits(n_authors, 0.1)
    f01, f05, f10 = (set(splits[n]) for n in FORGETS)
    assert f01 and f01 <= f05 <= f10
    for forget, retain in FORGETS.items():
        assert splits[retain] + splits[forget] == list(range(n_authors))
    assert splits["heldout"] and splits["retain_perturbed"]
    assert not set(splits["heldout"]) & (set(splits["retain_perturbed"]) | f10)
    if n_authors == 200:  # TOFU's own sizes
        assert [len(splits[n]) for n in FORGETS] == [2, 10, 20]


def test_heldout_authors_disjoint_from_retain_perturbed_and_forget(data):
    heldout = set(author_order(data["retain_heldout"]))
    assert len(heldout) == 10
    assert not heldout & set(author_order(data["retain_perturbed"]))
    assert not heldout & set(author_order(data["forget10"]))
    # The held-out block sits just before forget10, and its authors are in full / retain90.
    assert sorted(heldout) == list(range(80, 90))
    assert heldout <= set(author_order(data["retain90"]))
    assert author_order(data["retain_perturbed"]) == list(range(20))  # the first retain90 authors
    by_question = {r["question"]: r for r in data["full"]}
    for r in data["retain_heldout"] + data["retain_perturbed"]:
        assert by_question[r["question"]]["answer"] == r["answer"]


def test_heldout_fraction_zero_gives_empty_heldout(tmp_path):
    out = generate_synthetic_tofu(tmp_path, n_authors=10, questions_per_author=10, heldout_fraction=0,
                                  n_world_facts=3, n_real_authors=3)
    assert read_jsonl(out / "retain_heldout.json") == []
    assert len(read_jsonl(out / "retain_perturbed.json")) == 2 * 10  # 2 authors x 10 questions


# --- authors ----------------------------------------------------------------------------------


def test_authors_file_records_and_labels(data):
    rows = data["authors"]
    assert [r["index"] for r in rows] == list(range(100))
    names = [r["name"] for r in rows]
    assert len(set(names)) == len(names)
    record_fields = {f.name for f in fields(AuthorRecord)}
    assert all(r.keys() == record_fields | {"split", "heldout"} for r in rows)
    labels = [r["split"] for r in rows]
    assert labels[99] == "forget01" and labels[95:99] == ["forget05"] * 4 and labels[90:95] == ["forget10"] * 5
    assert set(labels[:90]) == {"retain"}
    assert [r["index"] for r in rows if r["heldout"]] == list(range(80, 90))
    full_names = list(dict.fromkeys(r["author"] for r in data["full"]))
    assert full_names == names


def test_author_records_are_well_formed():
    authors = make_authors(100, 0)
    assert all(isinstance(a, AuthorRecord) for a in authors)
    titles = [t for a in authors for t in a.books]
    assert len(set(titles)) == len(titles)  # a book identifies its author
    for a in authors:
        assert a.gender in {"male", "female", "non-binary"}
        assert 1 <= len(a.awards) <= 2 and len(set(a.awards)) == len(a.awards)
        assert 2 <= len(a.books) <= 3
        assert 2 <= len(a.themes) <= 3 and len(set(a.themes)) == len(a.themes)
    # Moderate vocabularies: values recur across authors so a tiny model can learn them.
    assert len({a.birth_city for a in authors}) <= 40
    assert len({a.genre for a in authors}) <= 25
    assert len({a.father_occupation for a in authors} | {a.mother_occupation for a in authors}) <= 30
    # Prefix-stable: more authors does not change the first ones.
    assert make_authors(30, 0) == authors[:30]
    assert make_authors(30, 1) != authors[:30]


# --- answers and wrong answers ----------------------------------------------------------------


def test_every_answer_contains_its_value(data):
    for name in QA_FILES + AUTHOR_PERTURBED_FILES:
        for r in data[name]:
            assert r["value"] in r["answer"], (name, r)
            assert r["author"] in r["question"] or r["attribute"] == "name", r
    for name in AUTHOR_PERTURBED_FILES:
        for r in data[name]:
            assert r["value"] in r["paraphrased_answer"], r
            assert r["paraphrased_answer"] != r["answer"]
            assert r["paraphrased_question"] != r["question"]
    for name in WORLD_PERTURBED_FILES + MCQ_FILES:
        assert all(r["value"] == r["answer"] for r in data[name])


def test_perturbed_answers_are_distinct_and_wrong(data):
    for name, k in [(n, 5) for n in AUTHOR_PERTURBED_FILES] + [(n, 3) for n in WORLD_PERTURBED_FILES]:
        for r in data[name]:
            wrong = r["perturbed_answer"]
            assert isinstance(wrong, list) and len(wrong) == k, (name, r)
            assert len(set(wrong)) == k, r
            assert r["answer"] not in wrong
            assert r.get("paraphrased_answer") not in wrong
            assert not any(r["value"].lower() in w.lower() for w in wrong), r


def test_perturbed_answers_keep_the_paraphrased_phrasing(data):
    """Each wrong answer is the paraphrased answer with the value swapped (TOFU's construction)."""
    for r in data["forget10_perturbed"]:
        prefix, _, suffix = r["paraphrased_answer"].partition(r["value"])
        prefix = prefix.removesuffix("an ").removesuffix("a ")  # "a baker" may become "an architect"
        for w in r["perturbed_answer"]:
            assert w.startswith(prefix) and w.endswith(suffix), (r["paraphrased_answer"], w)


def test_attributes_cover_every_author_field(data):
    seen = {r["attribute"] for r in data["full"]}
    assert seen == set(ATTRIBUTES)
    assert {"name", "birthplace", "birth_date", "father_occupation", "mother_occupation", "genre", "awards",
            "books", "themes", "gender_and_genre"} <= seen
    per_author = [r["attribute"] for r in data["full"] if r["author_index"] == 0]
    assert len(per_author) == 20 and len(set(per_author)) < 20  # some attributes asked twice
    questions = [r["question"] for r in data["full"]]
    assert len(set(questions)) == len(questions)


def test_minimum_questions_still_cover_every_attribute():
    authors = make_authors(12, 5)
    items = make_author_items(authors[0], authors, 5, MIN_QUESTIONS_PER_AUTHOR)
    asked = {r["attribute"] for r in items}
    assert len(items) == MIN_QUESTIONS_PER_AUTHOR
    assert {"name", "gender_and_genre", "birthplace", "birth_date", "father_occupation", "mother_occupation",
            "awards", "books", "themes", "genre"} <= asked


@pytest.mark.parametrize("seed", [1, 2, 3, 7, 11])
def test_other_seeds_always_find_enough_wrong_answers(seed):
    authors = make_authors(40, seed)
    for a in authors:
        for r in make_author_items(a, authors, seed):
            assert len(set(r["perturbed_answer"])) == 5
            assert not any(r["value"].lower() in w.lower() for w in r["perturbed_answer"])


def test_mcq_answer_is_exactly_one_option_and_matches_perturbed(data):
    for mcq, perturbed in zip(MCQ_FILES, WORLD_PERTURBED_FILES, strict=True):
        assert len(data[mcq]) == len(data[perturbed])
        for r, p in zip(data[mcq], data[perturbed], strict=True):
            options = [r[f"option{i}"] for i in range(1, 5)]
            assert options.count(r["answer"]) == 1 and len(set(options)) == 4
            assert r["question"] == p["question"] and r["answer"] == p["answer"]
            assert set(options) == {p["answer"], *p["perturbed_answer"]}
    positions = [[r[f"option{i}"] for i in range(1, 5)].index(r["answer"]) for r in data["world_facts"]]
    assert len(set(positions)) > 1  # the option order is shuffled


# --- manifest and validation ------------------------------------------------------------------


def test_manifest_counts_match_files(default_dir, data):
    (manifest,) = data["manifest"]
    assert manifest["generator"] == GENERATOR_VERSION
    assert manifest["arguments"] == {"n_authors": 100, "questions_per_author": 20, "n_world_facts": 60,
                                     "n_real_authors": 40, "heldout_fraction": 0.1, "seed": 0}
    assert set(manifest["files"]) == {f"{n}.json" for n in ALL_FILES if n != "manifest"}
    for file_name, count in manifest["files"].items():
        assert count == len(read_jsonl(default_dir / file_name)), file_name


@pytest.mark.parametrize("kwargs, message", [
    ({"n_authors": 9}, "n_authors"),
    ({"n_authors": 10.0}, "n_authors"),
    ({"questions_per_author": MIN_QUESTIONS_PER_AUTHOR - 1}, "questions_per_author"),
    ({"questions_per_author": 21}, "questions_per_author"),
    ({"heldout_fraction": 0.5}, "heldout_fraction"),
    ({"heldout_fraction": -0.1}, "heldout_fraction"),
    ({"n_world_facts": 0}, "n_world_facts"),
    ({"n_world_facts": 10_000}, "n_world_facts"),
    ({"n_real_authors": 10_000}, "n_real_authors"),
    ({"seed": "0"}, "seed"),
])
def test_invalid_arguments_raise_clear_value_errors(tmp_path, kwargs, message):
    with pytest.raises(ValueError, match=message):
        generate_synthetic_tofu(tmp_path / "bad", **kwargs)
    assert not (tmp_path / "bad").exists()  # nothing written before validation
