"""The TOFU loader: real files by path, the synthetic corpus, and every kind of bad input."""

from __future__ import annotations

import json

import pytest
from conftest import REAL_TOFU, requires_real_tofu
from unlearnkit import config, paths, pipeline
from unlearnkit.data.synthetic import GENERATOR_VERSION, generate_synthetic_tofu, generated_version
from unlearnkit.data.tofu import (
    HOLDOUT_OF,
    SPLITS,
    TofuDataError,
    TofuSource,
    alternates_split_for,
    holdout_split_for,
    retain_split_for,
    with_author_index,
)


@requires_real_tofu("tests/test_tofu_data.py::test_synthetic_corpus_reads_like_tofu")
def test_real_tofu_splits_load_with_their_documented_sizes():
    src = TofuSource(REAL_TOFU)
    # every Hub config but the holdouts, which the team's copy lacks (saved there, they load like the others)
    assert set(SPLITS) - set(HOLDOUT_OF.values()) <= set(src.available_splits())
    sizes = {"full": 4000, "forget10": 400, "retain90": 3600, "forget10_perturbed": 400, "retain_perturbed": 400,
             "real_authors_perturbed": 100, "world_facts_perturbed": 117, "world_facts": 117}
    for split, n in sizes.items():
        assert len(src.load(split)) == n, split
    row = src.load("forget10_perturbed")[0]
    assert len(row["perturbed_answer"]) == 5 and row["paraphrased_question"]
    assert len(src.load("real_authors_perturbed")[0]["perturbed_answer"]) == 3


@requires_real_tofu("tests/test_tofu_data.py::test_synthetic_corpus_reads_like_tofu")
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


@requires_real_tofu("tests/test_tofu_data.py::test_an_author_subset_keeps_the_holdout_whole_and_filters_the_alternates")
def test_an_author_subset_filters_every_author_split_alike():
    source = pipeline.corpus(config.as_params({"data_source": str(REAL_TOFU), "max_authors": 30, "forget_split": "forget10"}))
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
    held_out = pipeline.heldout_retain_rows(source, config.as_params({"heldout_authors": 4}))
    assert {author_of[r["question"], r["answer"]] for r in held_out} == {6, 7, 8, 9}
    with pytest.raises(TofuDataError, match="fewer than the 20 authors of forget10"):
        TofuSource(REAL_TOFU).restricted_to_authors(12, "forget10")


# --- holdout and alternates -------------------------------------------------------------------


def test_synthetic_holdout_and_alternates_load(small_corpus):
    for forget in ("forget01", "forget05", "forget10"):
        holdout, alternates = holdout_split_for(forget), alternates_split_for(forget)
        assert small_corpus.has_split(holdout) and small_corpus.has_split(alternates)
        rows = small_corpus.load(holdout)
        assert len(rows) == len(small_corpus.load(forget)) == 20  # 10 authors: one author in every forget split
        assert not {r["author"] for r in rows} & {r["author"] for r in small_corpus.load("full")}
        alt = small_corpus.load(alternates)
        assert [r["question"] for r in alt] == [r["question"] for r in small_corpus.load(forget)]
        assert all(len(r["alternate_answers"]) == 5 for r in alt)
    assert (holdout_split_for("forget10"), alternates_split_for("forget01")) == ("holdout10", "forget01_alternates")
    with pytest.raises(TofuDataError, match="unknown forget split 'forget50'; valid: forget01, forget05, forget10"):
        holdout_split_for("forget50")


def test_a_folder_without_holdout_names_the_hub_config_to_save(tmp_path):
    (tmp_path / "full.json").write_text(json.dumps({"question": "q", "answer": "a"}) + "\n")
    source = TofuSource(tmp_path)
    assert source.has_split("full") and not source.has_split("holdout10")
    message = (f"holdout10 is not in {tmp_path}: save config 'holdout10' of locuslab/TOFU (split train) there as "
               f"holdout10.json, one JSON object per line")
    assert source.missing_split_reason("holdout10") == message and source.missing_split_reason("full") is None
    with pytest.raises(TofuDataError) as error:
        source.load("holdout10")
    assert str(error.value) == message and "\n" not in message
    with pytest.raises(TofuDataError, match="forget10_alternates is not in .*only the synthetic corpus"):
        source.load("forget10_alternates")
    with pytest.raises(TofuDataError, match="unknown split 'holdout20'"):
        source.load("holdout20")


@requires_real_tofu("tests/test_tofu_data.py::test_a_folder_without_holdout_names_the_hub_config_to_save")
def test_the_real_tofu_copy_has_no_holdout_and_says_what_to_download():
    source = TofuSource(REAL_TOFU)
    assert not source.has_split("holdout10")
    with pytest.raises(TofuDataError, match=r"^holdout10 is not in .*tofu: save config 'holdout10' of locuslab/TOFU"):
        source.load("holdout10")


def test_hub_has_the_holdout_configs(monkeypatch):
    import datasets

    calls = []
    monkeypatch.setattr(datasets, "load_dataset",
                        lambda name, config, split: calls.append(config) or [{"question": "q", "answer": "a"}])
    source = TofuSource("locuslab/TOFU")
    assert source.has_split("holdout05") and not source.has_split("forget05_alternates")
    assert source.load("holdout05") == [{"question": "q", "answer": "a"}] and calls == ["holdout05"]


def test_alternate_answers_are_validated(tmp_path):
    row = {"question": "q", "answer": "a", "alternate_answers": ["w1", "w2"]}
    (tmp_path / "forget10_alternates.json").write_text(json.dumps(row) + "\n")
    with pytest.raises(TofuDataError, match="'alternate_answers' has 2 answers, split 'forget10_alternates' needs 5"):
        TofuSource(tmp_path).load("forget10_alternates")


def test_an_author_subset_keeps_the_holdout_whole_and_filters_the_alternates(tmp_path):
    source = TofuSource(generate_synthetic_tofu(tmp_path, n_authors=20, questions_per_author=10, n_world_facts=3,
                                                n_real_authors=3, seed=0))
    subset = source.restricted_to_authors(3, "forget01")  # author 19, then authors 0 and 1
    assert subset.kept_authors == {19, 0, 1}
    assert subset.load("holdout01") == source.load("holdout01") and len(subset.load("holdout01")) == 10
    assert subset.load("holdout10") == source.load("holdout10") and len(subset.load("holdout10")) == 20
    assert subset.load("forget01_alternates") == source.load("forget01_alternates")
    assert subset.load("forget10_alternates") == source.load("forget10_alternates")[-10:]  # author 18 dropped


# --- the synthetic corpus' cache --------------------------------------------------------------


def test_corpus_regenerates_a_folder_of_another_generator_version(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "DATA", tmp_path)
    params = config.as_params({"data_source": "synthetic", "synthetic_authors": 20, "synthetic_questions_per_author": 20,
                               "seed": 0})
    # The cache key is the arguments' hash, as before the holdout files (the default profile's models depend on it).
    folder = tmp_path / "synthetic-41984dcf8aef"
    assert pipeline.corpus(params).folder == folder and generated_version(folder) == GENERATOR_VERSION
    full = (folder / "full.json").read_bytes()

    (folder / "marker").write_text("")
    pipeline.corpus(params)  # current: left alone
    assert (folder / "marker").exists()

    # A folder of generator 1.0.0: no holdout or alternates files, its version in the manifest.
    (manifest,) = [json.loads(line) for line in (folder / "manifest.json").read_text().splitlines()]
    (folder / "manifest.json").write_text(json.dumps({**manifest, "generator": "unlearnkit.synthetic-tofu/1.0.0"}) + "\n")
    for name in ("holdout01", "holdout05", "holdout10", "forget10_alternates"):
        (folder / f"{name}.json").unlink()
    source = pipeline.corpus(params)
    assert source.folder == folder and generated_version(folder) == GENERATOR_VERSION
    assert not (folder / "marker").exists()  # written anew, then swapped in
    assert source.has_split("holdout10") and len(source.load("holdout10")) == 40
    assert (folder / "full.json").read_bytes() == full
    assert config.params_hash({"n_authors": 20, "questions_per_author": 20, "seed": 0}) == "41984dcf8aef"
    assert not list(tmp_path.glob(".synthetic-*.tmp*"))
