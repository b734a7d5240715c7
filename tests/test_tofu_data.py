"""The TOFU loader: real files by path, the synthetic corpus, and every kind of bad input."""

from __future__ import annotations

import json

import pytest
from conftest import REAL_TOFU, requires_real_tofu
from unlearnkit import pipeline
from unlearnkit.data.tofu import SPLITS, TofuDataError, TofuSource, retain_split_for, with_author_index


@requires_real_tofu()
def test_real_tofu_splits_load_with_their_documented_sizes():
    src = TofuSource(REAL_TOFU)
    assert set(SPLITS) <= set(src.available_splits())
    sizes = {"full": 4000, "forget10": 400, "retain90": 3600, "forget10_perturbed": 400, "retain_perturbed": 400,
             "real_authors_perturbed": 100, "world_facts_perturbed": 117, "world_facts": 117}
    for split, n in sizes.items():
        assert len(src.load(split)) == n, split
    row = src.load("forget10_perturbed")[0]
    assert len(row["perturbed_answer"]) == 5 and row["paraphrased_question"]
    assert len(src.load("real_authors_perturbed")[0]["perturbed_answer"]) == 3


@requires_real_tofu()
def test_real_tofu_full_is_retain_then_forget():
    src = TofuSource(REAL_TOFU)
    assert src.load("full") == src.load("retain90") + src.load("forget10")
    assert src.load("full", limit=3) == src.load("full")[:3]


def test_synthetic_corpus_reads_like_tofu(small_corpus):
    assert "retain_heldout" in small_corpus.available_splits()
    assert small_corpus.load("full") == small_corpus.load("retain90") + small_corpus.load("forget10")
    assert small_corpus.authors() is not None and len(small_corpus.authors()) == 10


def test_unknown_split_lists_the_valid_ones(small_corpus):
    with pytest.raises(TofuDataError, match=r"unknown split 'forget20'.*valid splits: full, forget01"):
        small_corpus.load("forget20")


def test_missing_folder_is_named(tmp_path):
    with pytest.raises(TofuDataError, match="does-not-exist.*does not exist"):
        TofuSource(tmp_path / "does-not-exist")


def test_malformed_line_names_file_and_line(tmp_path):
    (tmp_path / "full.json").write_text('{"question": "q1", "answer": "a1"}\n{"question": "q2", "answer": \n')
    with pytest.raises(TofuDataError, match=r"full\.json, line 2: not valid JSON"):
        TofuSource(tmp_path).load("full")


def test_missing_field_and_wrong_number_of_perturbed_answers(tmp_path):
    (tmp_path / "full.json").write_text(json.dumps({"question": "q"}) + "\n")
    with pytest.raises(TofuDataError, match=r"line 1: split 'full' needs field\(s\) answer"):
        TofuSource(tmp_path).load("full")
    row = {"question": "q", "answer": "a", "paraphrased_question": "pq", "paraphrased_answer": "pa",
           "perturbed_answer": ["w1", "w2"]}
    (tmp_path / "retain_perturbed.json").write_text(json.dumps(row) + "\n")
    with pytest.raises(TofuDataError, match="has 2 answers, split 'retain_perturbed' needs 5"):
        TofuSource(tmp_path).load("retain_perturbed")


def test_hub_name_is_recognised_without_touching_the_network():
    src = TofuSource("locuslab/TOFU")
    assert not src.is_local and "forget10_perturbed" in src.available_splits()


def test_hub_path_goes_through_datasets_and_validates(monkeypatch):
    import datasets

    calls = []

    def fake_load_dataset(name, config, split):
        calls.append((name, config, split))
        return [{"question": "q", "answer": "a"}]

    monkeypatch.setattr(datasets, "load_dataset", fake_load_dataset)
    assert TofuSource("locuslab/TOFU").load("forget01") == [{"question": "q", "answer": "a"}]
    assert calls == [("locuslab/TOFU", "forget01", "train")]


def test_retain_split_for_and_author_index(small_corpus):
    assert retain_split_for("forget05") == "retain95"
    with pytest.raises(TofuDataError, match="valid: forget01, forget05, forget10"):
        retain_split_for("forget50")
    rows = with_author_index([{"question": str(i), "answer": "a"} for i in range(100)])
    assert rows[19]["author_index"] == 0 and rows[20]["author_index"] == 1


@requires_real_tofu()
def test_an_author_subset_filters_every_author_split_alike():
    source = pipeline.corpus({"data_source": str(REAL_TOFU), "max_authors": 30, "forget_split": "forget10"})
    full = with_author_index(TofuSource(REAL_TOFU).load("full"))
    author_of = {(r["question"], r["answer"]): r["author_index"] for r in full}
    assert source.kept_authors == set(range(10)) | set(range(180, 200))  # forget10's 20, then the first 10
    assert len(source.load("full")) == 600 and len(source.load("forget10")) == 400
    assert len(source.load("retain90")) == 200
    for split in ("forget10_perturbed", "retain_perturbed", "retain95", "forget05"):
        assert {author_of[r["question"], r["answer"]] for r in source.load(split)} <= source.kept_authors, split
    # retain_perturbed holds TOFU's first 20 authors: only the 10 kept ones are evaluated or held out
    assert len(source.load("retain_perturbed")) < len(TofuSource(REAL_TOFU).load("retain_perturbed"))
    assert len(source.load("world_facts_perturbed")) == len(TofuSource(REAL_TOFU).load("world_facts_perturbed"))
    held_out = pipeline.heldout_retain_rows(source, {"heldout_authors": 4})
    assert {author_of[r["question"], r["answer"]] for r in held_out} == {6, 7, 8, 9}
    with pytest.raises(TofuDataError, match="fewer than the 20 authors of forget10"):
        TofuSource(REAL_TOFU).restricted_to_authors(12, "forget10")
