"""Tests of the synthetic TOFU-shaped corpus (unlearnkit.data.synthetic)."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import fields
from pathlib import Path

import pytest
from conftest import SHARED_DATA, skip_unless
from unlearnkit.data.synthetic import (
    _SLOTS,
    ATTRIBUTES,
    GENERATOR_VERSION,
    MIN_QUESTIONS_PER_AUTHOR,
    AuthorRecord,
    _render,
    author_splits,
    generate_synthetic_tofu,
    generated_version,
    make_alternate_answers,
    make_author_items,
    make_authors,
    make_holdout_authors,
)

FORGETS = {"forget01": "retain99", "forget05": "retain95", "forget10": "retain90"}
QA_FILES = ["full", *FORGETS, *FORGETS.values()]
AUTHOR_PERTURBED_FILES = [f"{f}_perturbed" for f in FORGETS] + ["retain_perturbed", "retain_heldout"]
WORLD_PERTURBED_FILES = ["world_facts_perturbed", "real_authors_perturbed"]
MCQ_FILES = ["world_facts", "real_authors"]
HOLDOUTS = {"forget01": "holdout01", "forget05": "holdout05", "forget10": "holdout10"}
HOLDOUT_FILES = list(HOLDOUTS.values())
ALTERNATE_FILES = [f"{f}_alternates" for f in FORGETS]
ALL_FILES = QA_FILES + AUTHOR_PERTURBED_FILES + WORLD_PERTURBED_FILES + MCQ_FILES + ["authors", "manifest"] \
    + HOLDOUT_FILES + ALTERNATE_FILES


def read_jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f]


@pytest.fixture(scope="module")
def default_dir(tmp_path_factory) -> Path:
    return generate_synthetic_tofu(tmp_path_factory.mktemp("synthetic") / "seed0", seed=0)


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
                                   n_world_facts=5, n_real_authors=5, seed=0) == out


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
    skip_unless(tofu.is_dir(), "../shared/data/tofu is not beside the checkout (CI has it)",
                "tests/test_synthetic.py::test_fields_match_tofu_schema")
    for path in sorted(tofu.glob("*.json")):
        name = path.stem
        assert name in data, f"missing TOFU file {path.name}"
        with path.open(encoding="utf-8") as f:
            reference_keys = set(json.loads(f.readline()))
        assert reference_keys <= set(data[name][0]), name


# --- byte identity with generator 1.0.0 -------------------------------------------------------

#: sha256 of every file generator 1.0.0 wrote (recorded with it, before the holdout and alternates files were
#: added) for seed 0 and 20 questions per author. The trained models of a profile are keyed on the corpus'
#: arguments, not its bytes, so these files must never change for the same arguments.
V1_SHA256 = {
    20: {
        "authors": "c65b36c9d830d70d408f4eee0d742e67847ba024e8a67f74e7cfa64d7348c18d",
        "forget01": "434f3eb0a8970134a2ac9e511e6ecc119a0c6735dd8ac3dc2c8c9d894c7b0534",
        "forget01_perturbed": "2d831409e079e47a76bcf5edf70fd55cff2338a41694b94496cb527518b8544f",
        "forget05": "434f3eb0a8970134a2ac9e511e6ecc119a0c6735dd8ac3dc2c8c9d894c7b0534",
        "forget05_perturbed": "2d831409e079e47a76bcf5edf70fd55cff2338a41694b94496cb527518b8544f",
        "forget10": "40fc8d3ef6ca40e7b6d1d3ab6c3daac609cbd1fed170e8c083eda09daae9f3d5",
        "forget10_perturbed": "d85f25b4b3138ab2d0217a7c650a98e739b284668ebf3adfe0d93ad71143e49c",
        "full": "108e3983703fd0cc97f9f2135569e842594dd061f030152ef3f1b6497cc9fa90",
        "manifest": "ea00495bf03147cdd24ca619ac13d3be59a413b73ed3bf3b252077faae301986",
        "real_authors": "8b2ae7494fe30b49dcb274a903b405fc9746c62778a7ff554f6302b7c7292ac7",
        "real_authors_perturbed": "2d46a2def07ac9d4042a10c016ccfca3c6a650caab987cca49d689336b3830b4",
        "retain90": "c3af86672f3b31cbe26f22daf8b0b1689250c5427a7af4d248d5dbe70ec91294",
        "retain95": "662bfedc69b90ea1ff3cfff667c0602f8a82583eba38749999c56a12e5e2bff0",
        "retain99": "662bfedc69b90ea1ff3cfff667c0602f8a82583eba38749999c56a12e5e2bff0",
        "retain_heldout": "17d8cd9c358d28bed6c087b8e81098f326240a3e5665931812a622be5e3da598",
        "retain_perturbed": "db73f1b9432195be5c617ae251239582821dd4dd1895224c676424f584cb1734",
        "world_facts": "cf39ac2d726dff6b7e27648c5ade6fc3fd89fec4134992b4f8b3cf36c864c3e2",
        "world_facts_perturbed": "5ea6d60c948f71d764c70daaa0159a8f0e6214767a517be27e0ce5b806e5abbb",
    },
    100: {
        "authors": "4aa1a05fd5aa0b669b0ba5a8702c1d73f7313f5813cc006a8732d41a3c83030d",
        "forget01": "d3ad8b2a45e46b0ae34d380d11f19fc099659d8f495e71e39a34885eca85ecae",
        "forget01_perturbed": "2af7260b1897e13b0c1d5540090f9e14e765aa34250d258ea88ad2ba3abde2cc",
        "forget05": "341ac5cac239d9180cba44abefffa2506ee9f3fa08aaa28fa9314d4980730eb4",
        "forget05_perturbed": "2e6f7fff0892fc880e9b595d00f0388242589b12d20edac9561d7b4af7f86d3f",
        "forget10": "b11ae66c3dd96462240358ff5bf82f2294eaab2adfd623bf45c36fac15e318b1",
        "forget10_perturbed": "ac95c25e9a7d8a263bf147cde09594218be79ba007b91567fb98327b57aaa58e",
        "full": "144d1dba7e5161ae526118151a8cef2b6767c8a07a0e627f42422e12b4e19898",
        "manifest": "082b79a6dbc58b371baf75f0f1d07204040f2c195c88bd2f4526bdcb345bc0cc",
        "real_authors": "8b2ae7494fe30b49dcb274a903b405fc9746c62778a7ff554f6302b7c7292ac7",
        "real_authors_perturbed": "2d46a2def07ac9d4042a10c016ccfca3c6a650caab987cca49d689336b3830b4",
        "retain90": "c7df2668e8a56578947e539074330adba8b2004bfa3ba8fc23da5de5db620263",
        "retain95": "cd1e1280e7f08cea29bc63e503e265c43df2c49905131047649db676412a18a8",
        "retain99": "64a05d517799d0c8131dc2e352daecfb3838b71850d0801168b81edd365d5ae5",
        "retain_heldout": "4d493919d41fa6440806bd6a8037379ea69de8b0d1c31bf799e2e476795a1829",
        "retain_perturbed": "7d30aa124298742765b7175b3943b677a8cda6e60016ce576fed1daa70801836",
        "world_facts": "cf39ac2d726dff6b7e27648c5ade6fc3fd89fec4134992b4f8b3cf36c864c3e2",
        "world_facts_perturbed": "5ea6d60c948f71d764c70daaa0159a8f0e6214767a517be27e0ce5b806e5abbb",
    },
}


@pytest.mark.parametrize("n_authors", [20, 100])
def test_every_file_of_generator_1_0_0_keeps_its_bytes(tmp_path, default_dir, n_authors):
    folder = default_dir if n_authors == 100 else generate_synthetic_tofu(tmp_path, n_authors=n_authors, seed=0)
    for name, digest in V1_SHA256[n_authors].items():
        if name != "manifest":
            assert hashlib.sha256((folder / f"{name}.json").read_bytes()).hexdigest() == digest, name
    # The manifest differs only by the version, the new files' counts and the holdout authors: without them it
    # is 1.0.0's, byte for byte.
    (manifest,) = read_jsonl(folder / "manifest.json")
    assert manifest.pop("generator") == GENERATOR_VERSION != "unlearnkit.synthetic-tofu/1.0.0"
    assert len(manifest.pop("holdout_authors")) == len(author_splits(n_authors)["forget10"])
    old = {"generator": "unlearnkit.synthetic-tofu/1.0.0", **manifest,
           "files": {f: n for f, n in manifest["files"].items() if f[:-5] in V1_SHA256[n_authors]}}
    old = {k: old[k] for k in ("generator", *manifest)}  # 1.0.0's key order
    text = json.dumps(old, ensure_ascii=False) + "\n"
    assert hashlib.sha256(text.encode("utf-8")).hexdigest() == V1_SHA256[n_authors]["manifest"]


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
                                  n_world_facts=3, n_real_authors=3, seed=0)
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
        generate_synthetic_tofu(tmp_path / "bad", **{"seed": 0, **kwargs})
    assert not (tmp_path / "bad").exists()  # nothing written before validation


# --- holdout authors --------------------------------------------------------------------------


def holdout_records(folder: Path) -> list[AuthorRecord]:
    (manifest,) = read_jsonl(folder / "manifest.json")
    names = {f.name for f in fields(AuthorRecord)}
    return [AuthorRecord(**{k: v for k, v in r.items() if k in names}) for r in manifest["holdout_authors"]]


def test_holdout_sizes_nesting_and_indices(data):
    for forget, holdout in HOLDOUTS.items():
        rows = data[holdout]
        assert len(rows) == len(data[forget]), holdout  # 20, 100, 200 rows at 100 authors x 20 questions
        assert len(author_order(rows)) == len(author_order(data[forget]))
        assert all(r.keys() == data[forget][0].keys() for r in rows)  # the forget rows' fields
    assert [len(data[h]) for h in HOLDOUT_FILES] == [20, 100, 200]
    authors = {h: author_order(data[h]) for h in HOLDOUT_FILES}
    assert authors["holdout10"] == list(range(100, 110))  # after the 100 main authors: indices never collide
    assert authors["holdout05"] == list(range(105, 110)) and authors["holdout01"] == [109]  # the last ones
    for small, large in [("holdout01", "holdout05"), ("holdout05", "holdout10")]:
        assert data[small] == data[large][-len(data[small]):]
    (manifest,) = data["manifest"]
    records = manifest["holdout_authors"]
    assert [r["index"] for r in records] == authors["holdout10"]
    assert [r["split"] for r in records] == ["holdout10"] * 5 + ["holdout05"] * 4 + ["holdout01"]
    assert [r["name"] for r in records] == list(dict.fromkeys(r["author"] for r in data["holdout10"]))


def test_holdout_asks_forget_questions_from_the_same_templates(default_dir, data):
    """Same attributes in the same order per author, and every question and answer is one of its slot's phrasings
    rendered for the holdout author; the forget authors' phrasings come from the same slots."""
    per_author = lambda rows: [[r["attribute"] for r in rows if r["author_index"] == a]  # noqa: E731
                               for a in author_order(rows)]
    assert {tuple(p) for p in per_author(data["holdout10"])} == {tuple(p) for p in per_author(data["forget10"])}
    by_index = {a.index: a for a in holdout_records(default_dir)}
    for position, r in enumerate(data["holdout10"]):
        slot, author = _SLOTS[position % 20], by_index[r["author_index"]]
        assert r["attribute"] == slot.attribute and r["author"] == author.name
        assert r["question"] in {_render(t, author, r["value"]) for t in slot.questions}, r
        assert r["answer"] in {_render(t, author, r["value"]) for t in slot.answers}, r
        assert r["value"] in r["answer"]
    assert {r["attribute"] for r in data["holdout10"]} == {r["attribute"] for r in data["forget10"]}


def test_holdout_authors_are_new_people_absent_from_every_trained_file(default_dir, data):
    holdout = holdout_records(default_dir)
    main_names = {r["name"] for r in data["authors"]}
    assert not {h.name for h in holdout} & main_names and len({h.name for h in holdout}) == len(holdout)
    main_titles = [t for r in data["authors"] for t in r["books"]]
    assert not any(t.lower() in m.lower() or m.lower() in t.lower() for h in holdout for t in h.books
                   for m in main_titles)
    assert not {r["question"] for r in data["holdout10"]} & {r["question"] for r in data["full"]}
    for name in ALL_FILES:
        if name in HOLDOUT_FILES or name == "manifest":
            continue
        text = (default_dir / f"{name}.json").read_text(encoding="utf-8")
        assert not [h.name for h in holdout if h.name in text], name  # full.json, the alternates, ...


def test_holdout_authors_come_from_their_own_stream():
    authors = make_authors(20, 0)
    holdout = make_holdout_authors(3, authors, 0)
    assert [h.index for h in holdout] == [20, 21, 22]
    assert make_holdout_authors(3, authors, 0) == holdout and make_holdout_authors(3, authors, 1) != holdout
    assert make_authors(20, 0) == authors  # drawing them changes nothing of the main authors
    with pytest.raises(ValueError, match="n_holdout"):
        make_holdout_authors(0, authors, 0)


# --- alternate answers (AltPO) ----------------------------------------------------------------


def swapped_value(reference: str, value: str, text: str) -> frozenset[str]:
    """The value `text` has where `reference` has `value` (same phrasing), as the set of its list parts, lower
    case and without a leading article: 'b and a' is the same value as 'a and b'."""
    prefix, _, suffix = reference.partition(value)
    prefix = prefix.removesuffix("an ").removesuffix("a ")  # "a baker" may become "an architect"
    assert text.startswith(prefix) and text.endswith(suffix), (reference, text)
    swapped = text[len(prefix):len(text) - len(suffix)]
    swapped = swapped.removeprefix("an ").removeprefix("a ")
    return frozenset(part.strip().lower() for part in re.split(r", | and ", swapped))


def check_alternates(alternates: list[dict], forget: list[dict], perturbed: list[dict]) -> set[str]:
    """Asserts what holds everywhere; returns the attributes where an alternate reuses a perturbed value."""
    assert [(r["question"], r["answer"]) for r in alternates] == [(r["question"], r["answer"]) for r in forget]
    reused = set()
    for r, p in zip(alternates, perturbed, strict=True):
        assert r.keys() == {"question", "answer", "alternate_answers"}
        alts = r["alternate_answers"]
        assert len(alts) == 5 and len(set(alts)) == 5, r
        assert r["answer"] not in alts and not set(alts) & set(p["perturbed_answer"])
        assert not any(p["value"].lower() in a.lower() for a in alts), r
        # in the answer's own phrasing (the perturbed answers use the paraphrased one's)
        values = {swapped_value(r["answer"], p["value"], a) for a in alts}
        evaluated = {swapped_value(p["paraphrased_answer"], p["value"], w) for w in p["perturbed_answer"]}
        if values & evaluated:
            reused.add(p["attribute"])
    return reused


def test_alternates_are_wrong_plausible_and_not_the_evaluated_ones(data):
    """At 100 authors every attribute's pool holds 5 wrong values besides the 5 perturbed ones: none reused."""
    for forget in FORGETS:
        assert check_alternates(data[f"{forget}_alternates"], data[forget], data[f"{forget}_perturbed"]) == set()
    assert data["forget05_alternates"] == data["forget10_alternates"][-100:]  # nested like the forget splits


def test_alternates_reuse_perturbed_values_only_where_the_pool_is_too_small(tmp_path):
    """At 10 authors a name question has 9 wrong names, 5 of them perturbed: only there may an alternate reuse
    one (make_alternate_answers' docstring); every other attribute still avoids them."""
    out = generate_synthetic_tofu(tmp_path, n_authors=10, n_world_facts=3, n_real_authors=3, seed=3)
    files = {n: read_jsonl(out / f"{n}.json") for n in ["forget10", "forget10_alternates", "forget10_perturbed"]}
    assert check_alternates(files["forget10_alternates"], files["forget10"], files["forget10_perturbed"]) <= {"name"}


def test_alternates_come_from_their_own_stream():
    authors = make_authors(12, 5)
    rows = make_alternate_answers(authors[-1], authors, 5, MIN_QUESTIONS_PER_AUTHOR)
    items = make_author_items(authors[-1], authors, 5, MIN_QUESTIONS_PER_AUTHOR)
    assert [(r["question"], r["answer"]) for r in rows] == [(r["question"], r["answer"]) for r in items]
    assert make_alternate_answers(authors[-1], authors, 5, MIN_QUESTIONS_PER_AUTHOR) == rows


def test_generated_version_reads_the_manifest(tmp_path, default_dir):
    assert generated_version(default_dir) == GENERATOR_VERSION
    assert generated_version(tmp_path) is None
    (tmp_path / "manifest.json").write_text("not json\n")
    assert generated_version(tmp_path) is None
