"""Results hold numbers only (#56 item 7): what the studies of notebooks 03-08 write into metrics.json is numbers and
names, never a sentence that reads the numbers nor a former finding (tests/numbers_only.py says what counts). The
committed seeds hold none; the check bites on a file in the shape stored before the retirement; the smoke store's
files are checked in tests/test_notebooks.py."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numbers_only
import pandas as pd
import pytest
from unlearnkit import config, paths
from unlearnkit.studies import alignment, entropy, leakage, recovery
from unlearnkit.studies.entropy.plan import RegimePoint, SweepPoint

COMMITTED = sorted((paths.RESULTS / config.BASE_PROFILE).glob("seed-*/0*/metrics.json"))


def test_every_committed_seed_holds_numbers_only():
    """Every committed seed's metrics.json, notebooks 00-09, was written after the retirement (notebooks 03-08 of
    seeds 0-5 re-executed at its revision): none holds a former finding or a sentence reading its numbers."""
    assert COMMITTED, "no committed seed to check"
    for path in COMMITTED:
        assert dict(numbers_only.texts(json.loads(path.read_text()))) == {}, path


def test_the_check_finds_what_a_seed_stored_before_the_retirement_held():
    """The negative case, in the shape seeds stored before the retirement had: 03-08's meta.findings, 07's finding
    in words, 04's per-model statements."""
    stored_before = {"meta": {"findings": [{"short": "quantisation across buckets", "verdict": "holds"}],
                              "finding_text": "Paper (Scholten et al., Fig. 6): sampling reveals ...",
                              "per_model": [{"model": "ga", "statement": "forgets in every format",
                                             "paper_finding": True}]},
                     "ga": {"forget": {"rouge": 0.1}}}
    found = dict(numbers_only.texts(stored_before))
    assert set(found) == {"meta/findings", "meta/finding_text", "meta/per_model/statement",
                          "meta/per_model/paper_finding"}


@pytest.mark.parametrize("payload, where", [
    ({"meta": {"verdict": "Reproduced: ..."}}, "meta/verdict"),
    ({"meta": {"tables": {"controls": [{"run": "ga", "note": "works"}]}}}, "meta/tables/controls/note"),
    ({"ga": {"forget": {"reading": "forgets"}}}, "ga/forget/reading"),
    ({"meta": {"per_model": [{"model": "ga", "paper_finding": False}]}}, "meta/per_model/paper_finding"),
])
def test_a_sentence_or_a_former_key_anywhere_fails(payload, where):
    assert [p for p, _ in numbers_only.texts(payload)] == [where]


def test_names_parameters_and_a_precondition_pass():
    payload = {"meta": {"notebook": "02_unlearning_ga", "parameters": {"methods": ["ga"], "note": "free"},
                        "models": {"ga": "runs/default/seed-0/models/unlearned-ga"},
                        "matched": {"reached": False, "reason": "forget ROUGE-L never reached 0.673"},
                        "questions": ["Who wrote it?"]}, "ga": {"forget": {"rouge": 0.3}}}
    assert list(numbers_only.texts(payload)) == []


def test_notebook_08_stores_its_bucket_crossing_as_numbers():
    named = {"target": (recovery.TARGET, "hub/target"), "retain90": (recovery.RETAIN, "hub/retain"),
             "ga": (recovery.UNLEARNED, "hub/ga"), "npo_lr1e-05": (recovery.REGIME_MATCHED, "hub/npo")}
    data = {"scored": [{"question": "q", "answer": "a"}]}
    crossing = pd.DataFrame([{"model": "ga", "kind": recovery.UNLEARNED, "scheme": "nf4", "share crossed": 0.25,
                              "median |Δw| / bin": 3.0},
                             {"model": "npo_lr1e-05", "kind": recovery.REGIME_MATCHED, "scheme": "nf4",
                              "share crossed": 0.02, "median |Δw| / bin": 0.01}])
    meta = recovery.run_meta(config.Params.load("smoke"), named, data, "npo_lr1e-05", 1e-5, crossing)
    assert list(numbers_only.texts({"meta": meta})) == []
    assert meta["crossing"] == {"ga": {"nf4": {"share crossed": 0.25, "median |Δw| / bin": 3.0}},
                                "npo_lr1e-05": {"nf4": {"share crossed": 0.02, "median |Δw| / bin": 0.01}}}
    # the extractor's smallest crossing share: of the runs that forgot, those whose updates cross buckets
    from unlearnkit.claims.extractors.recovery import smallest_crossing

    per_item = {"target": {"before": {"rouge": 0.9}}, "retain90": {"before": {"rouge": 0.3}},
                "ga": {"before": {"rouge": 0.2}}, "npo_lr1e-05": {"before": {"rouge": 0.3}}}
    assert smallest_crossing(meta, per_item) == 0.25  # the regime-matched run forgot but crosses no bucket
    assert smallest_crossing(meta, {**per_item, "ga": {"before": {"rouge": 0.5}}}) is None  # ga did not forget
    assert smallest_crossing(meta, {**per_item, "target": {"before": {"rouge": 0.4}}}) is None  # nothing to restore


def test_notebooks_05_06_and_07_store_numbers_and_names():
    scored = SimpleNamespace(seconds={"ga": 1.5})
    rows = [{"question": "Who wrote it?"}]
    meta = leakage.run_meta({"target": "target"}, "retain90", {"n": 4}, rows, scored)
    assert list(numbers_only.texts({"meta": meta})) == []
    meta = entropy.run_meta(["npo"], {"n": 4}, rows, scored, [SweepPoint("npo", "npo", 1.0, 0.0, 1e-3)],
                            [SweepPoint("npo_r", "npo", 1.0, -0.5, 1e-3)],
                            [RegimePoint("npo_mild_eo", "npo_mild", "npo", 1.0, 0.0, "all", 32)],
                            {"diversity": pd.DataFrame({"retain": [0.3]}, index=pd.Index(["npo"], name="run"))})
    assert list(numbers_only.texts({"meta": meta})) == []
    summary = pd.DataFrame([{"model": "aligned ×8", "group": "all", "requests": 4, "greedy_safe_share": 0.5}])
    judge = alignment.Judge("classifier", None, "complied (offline classifier)", 0.5,
                            "opens with its request's opener (5 words)", 0.9, 10)
    split = alignment.BehaviourSplit([{"goal": "g"}], [{"goal": "h", "group": "seen"}])
    metrics = alignment.metrics_entries(summary, judge, split, {"aligned ×8": {"seconds": 2.0}})
    assert list(numbers_only.texts({"meta": metrics.meta, **metrics.results})) == []


def test_the_only_free_text_a_committed_seed_keeps_is_the_codes_own_list_of_what_was_not_measured():
    """09's ``not_measured`` passes the check as scope, not as a reading: every committed seed holds exactly the
    code's constant there, whatever its numbers."""
    from unlearnkit.studies import trust

    for path in sorted((paths.RESULTS / config.BASE_PROFILE).glob("seed-*/09_metric_trust/metrics.json")):
        assert json.loads(path.read_text())["meta"]["not_measured"] == trust.NOT_MEASURED, path
