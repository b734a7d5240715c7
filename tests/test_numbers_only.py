"""Results hold numbers only (#56 item 7): what the studies of notebooks 03-08 write into metrics.json is numbers and
names, never a sentence that reads the numbers nor a former finding (tests/numbers_only.py says what counts). The
check bites: the committed seeds stored before the former findings were retired still carry them, and it finds them
there; the smoke store's files are checked in tests/test_notebooks.py."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numbers_only
import pandas as pd
import pytest
from unlearnkit import config, paths, runs
from unlearnkit.studies import alignment, entropy, leakage, recovery
from unlearnkit.studies.entropy.plan import RegimePoint, SweepPoint

COMMITTED = sorted((paths.RESULTS / config.BASE_PROFILE).glob("seed-*/0*/metrics.json"))


def test_a_seed_stored_before_the_retirement_holds_former_findings_and_the_check_finds_them():
    """The negative case: notebooks 03-08 of every committed seed still hold meta.findings (and 04-07 their readings
    in words); notebooks 00-02 never wrote any (02's matched.reason is a precondition the extractors read)."""
    assert COMMITTED, "no committed seed to check"
    for path in COMMITTED:
        found = dict(numbers_only.texts(json.loads(path.read_text())))
        if path.parent.name[:2] in ("03", "04", "05", "06", "07", "08"):
            assert "meta/findings" in found, path
        else:
            assert found == {}, (path, found)
    seed_0 = paths.RESULTS / config.BASE_PROFILE / "seed-0"
    texts = dict(numbers_only.texts(json.loads((seed_0 / runs.ALIGNMENT / "metrics.json").read_text())))
    assert texts["meta/finding_text"].startswith("Paper (Scholten et al., Fig. 6)")
    texts = dict(numbers_only.texts(json.loads((seed_0 / runs.FORMATS / "metrics.json").read_text())))
    assert {"meta/per_model/statement", "meta/per_model/paper_finding"} <= set(texts)


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
