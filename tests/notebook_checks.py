"""Structure checks of the smoke runs of notebooks 03-07, called by tests/test_notebooks.py with the folder of its
module-scoped smoke runs (not tests themselves: a check module imported by one test module only). Each file holds
numbers and names only (tests/numbers_only.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numbers_only
import pytest
from unlearnkit.data import formats as fmts
from unlearnkit.metrics.formats import LIKELIHOOD_SUFFIX
from unlearnkit.metrics.ps import PS_METRICS
from unlearnkit.studies import calibration

# --------------------------------------------------------------------------- 03 controls and calibration

SPLITS = ("heldout_retain", "forget")
FIGURES = ("gd_trajectory", "gd_controls", "mixing", "table3")


def check_03(smoke_runs_dir: Path) -> None:
    runs = Path(smoke_runs_dir)
    metrics = json.loads((runs / "03_controls_calibration" / "metrics.json").read_text())
    meta = metrics["meta"]
    parameters = meta["parameters"]
    methods = parameters["calibration_methods"]
    tolerances = calibration.Tolerances(parameters["retain_tolerance"], parameters["forget_similar_tolerance"])
    assert parameters["profile"] == "smoke" and meta["notebook"] == "03_controls_calibration"
    # the before row, then each method calibrated by mixing (a = 0 always passes) and by its best control
    assert {"before", "meta", *(f"{m} (model mixing)" for m in methods)} <= set(metrics)
    for row in (name for name in metrics if name != "meta"):
        assert set(metrics[row]) == set(SPLITS), row
        for split in SPLITS:
            for metric in PS_METRICS:
                assert 0.0 <= metrics[row][split][metric] <= 1.0, (row, split, metric)
            assert "items" not in metrics[row][split]  # per-item values stay out of metrics.json
        assert calibration.passes(metrics["before"], metrics[row], tolerances), row
    # Tables 2 and 3, every control of every method, the other forget splits; no reading of them in words
    tables = meta["tables"]
    assert set(tables) == {"table2_uncontrolled", "table3_calibrated", "controls", "splits", "stopping_by_run"}
    assert [row["run"] for row in tables["stopping_by_run"]] == parameters["interference_runs"]
    assert list(numbers_only.texts(metrics)) == []
    assert [row["run"] for row in tables["table2_uncontrolled"]] == ["before", *methods]
    for method in methods:
        controls = [row["control"] for row in tables["controls"] if row["run"] == method]
        capped = method in ("ga", "gd", "kl")
        assert controls == (["objective capping"] if capped else []) + ["early stopping", "model mixing"], method
    assert all(0 <= row["pass"] + row["uncertain"] + row["fail"] == row["settings"] for row in tables["controls"])
    splits = [parameters["forget_split"], *parameters["calibration_splits"]]
    assert sorted((row["split"], row["run"]) for row in tables["splits"]) == sorted(
        (s, m) for s in dict.fromkeys(splits) for m in methods)
    assert meta["intervals"]["confidence"] == parameters["criterion_confidence"]
    for method in methods:
        a = meta["calibrated_a"][method]
        assert 0.0 <= a <= 1.0
        assert meta["found_passing"][method] == (a > 0)
        assert set(meta["uncontrolled"][method]) == set(SPLITS)
        assert 0.0 <= meta["uncontrolled_heldout_ps_exact_loss"][method] <= 1.0
    assert set(meta["gd_best_passing"]) == {"delta", "t", "a"}
    # every sweep and calibration table is kept beside metrics.json
    per_item = json.loads((runs / "03_controls_calibration" / "per_item.json").read_text())
    assert set(per_item) == {"gd_early_stopping", "gd_capping", "gd_mixing", "calibration", "interference", "controls",
                             "splits"}
    assert set(per_item["controls"]) == set(methods)
    assert all(row["status"] in ("pass", "uncertain", "fail") for rows in per_item["controls"]["gd"].values()
               for row in rows)
    for name in ("controls_per_method", "splits"):
        assert (runs / "figures" / f"03_controls_calibration_{name}.png").stat().st_size > 1000
    # each interference run traced from the model before unlearning; GD's trace is section 1's
    assert list(per_item["interference"]) == parameters["interference_runs"]
    assert per_item["interference"]["gd"] == per_item["gd_early_stopping"]
    assert all(rows[0]["t"] == 0 for rows in per_item["interference"].values())
    assert [row["delta"] for row in per_item["gd_capping"]] == [float(d) for d in parameters["cap_deltas"]]
    assert per_item["gd_early_stopping"][0]["t"] == 0  # the model before unlearning opens the run
    for method in methods:
        stages = [row["stage"] for row in per_item["calibration"][method]]
        assert stages.count("coarse") == parameters["calib_coarse"] + 1  # a = 0 and the n coarse values
        assert stages.count("fine") <= parameters["calib_fine"]
    # GD's calibration reuses the settings its mixing sweep evaluated, so its coarse rows are that sweep
    gd_coarse = [{k: v for k, v in row.items() if k != "stage"} for row in per_item["calibration"].get("gd", [])
                 if row["stage"] == "coarse"]
    assert "gd" not in methods or gd_coarse == per_item["gd_mixing"]
    for delta in parameters["cap_deltas"]:
        assert (runs / "models" / f"unlearned-gd_cap{float(delta):g}" / "config.json").exists()
    for name in FIGURES:
        assert (runs / "figures" / f"03_controls_calibration_{name}.png").stat().st_size > 1000, name


# --------------------------------------------------------------------------- 04 format-transformed evaluation

LIKELIHOOD = tuple(f + LIKELIHOOD_SUFFIX for f in fmts.MCQA_STYLE_FORMATS)
FORMAT_FIGURES = ("scores", "transfer", "kept")


def check_04(smoke_runs_dir: Path) -> None:
    runs = Path(smoke_runs_dir)
    metrics = json.loads((runs / "04_format_eval" / "metrics.json").read_text())
    meta = metrics["meta"]
    parameters = meta["parameters"]
    assert meta["notebook"] == "04_format_eval" and parameters["profile"] == "smoke"
    retain_model = meta["retain_model"]
    unlearning_runs = sorted(p.parent.name.removeprefix("02_unlearning_")
                             for p in runs.glob("02_unlearning_*/metrics.json"))
    assert unlearning_runs, "no unlearning run of notebook 02 in the smoke runs"
    # format_models: null means base, target, the retain model and every unlearning run
    assert parameters["format_models"] is None
    assert set(metrics) - {"meta"} == set(meta["models"]) == {"base", "target", retain_model, *unlearning_runs}

    expected = set(fmts.FORMATS) | {"cloze_fill"} | (set(LIKELIHOOD) if parameters["format_likelihood"] else set())
    for model in meta["models"]:
        assert set(metrics[model]) == {"forget", "retain"}, model
        for set_name in ("forget", "retain"):
            assert set(metrics[model][set_name]) == expected, (model, set_name)
            for fmt, score in metrics[model][set_name].items():
                assert score is not None and 0.0 <= score <= 1.0, (model, set_name, fmt, score)

    for fmt, counts in meta["n_items"].items():
        assert 0 < counts["forget"] <= parameters["format_max_items"], fmt
        assert 0 < counts["retain"] <= parameters["format_max_items"], fmt
    for fmt in fmts.MCQA_STYLE_FORMATS:
        assert meta["chance"][fmt] == pytest.approx(1 / parameters["format_options"])
    assert meta["chance"]["cloze"] is None and 0 < meta["chance"]["comprehension_qa"] < 1  # a random passage sentence

    # transfer before unlearning: every right/wrong readout of base, target and the retain model on both sets
    tested = {(t["readout"], t["set"], t["model"]) for t in meta["transfer"]}
    for readout in [*fmts.MCQA_STYLE_FORMATS, "cloze_fill"]:
        assert {(readout, s, m) for s in ("forget", "retain") for m in ("base", "target", retain_model)} <= tested
    for t in meta["transfer"]:
        assert t["above"] == (t["p_value"] < parameters["format_alpha"]) and t["k"] <= t["n"]
    assert meta["scorers"] == "paper"
    assert not set(meta["informative_formats"]) & set(meta["not_transferring"])
    assert all(not f.endswith(LIKELIHOOD_SUFFIX) for f in meta["informative_formats"])  # the paper's scorers
    assert set(meta["passage_reading"]) >= {"comprehension_qa", "comprehension_mcqa"}
    for readout, found in meta["passage_reading"].items():
        assert found["reads"] == (found["agree"] and found["above_chance"]), readout
        assert (readout in meta["unread"]) == (not found["reads"] and not readout.endswith(LIKELIHOOD_SUFFIX))
    if parameters["format_likelihood"]:
        assert all(f.endswith(LIKELIHOOD_SUFFIX) for f in meta["likelihood"]["informative_formats"])

    findings = {f["model"]: f for f in meta["per_model"]}
    assert set(findings) == set(unlearning_runs)
    for finding in findings.values():
        assert finding["qa_forgets"] in (True, False, None)
        assert {k["format"] for k in finding["kept"]} <= set(meta["informative_formats"])
        assert all(isinstance(s["separates"], bool) for s in finding["separation"])
    assert set(meta["qa_rouge"]) == set(meta["models"])  # notebooks 01 and 02 scored every model's Q&A
    assert list(numbers_only.texts(metrics)) == []  # each model's statement stays in the notebook

    per_item = json.loads((runs / "04_format_eval" / "per_item.json").read_text())
    assert set(per_item) == set(meta["models"])
    assert len(per_item["target"]["mcqa"]["forget"]) == meta["n_items"]["mcqa"]["forget"]
    for name in FORMAT_FIGURES:
        assert (runs / "figures" / f"04_format_eval_{name}.png").stat().st_size > 1000, name


# --------------------------------------------------------------------------- 05 probabilistic bounds


def check_05(smoke_runs_dir) -> None:
    """Structure of runs/smoke/05_probabilistic_bounds/metrics.json after a smoke run of notebook 05."""
    runs = Path(smoke_runs_dir)
    metrics = json.loads((runs / "05_probabilistic_bounds" / "metrics.json").read_text())
    meta = metrics.pop("meta")
    assert meta["profile"] == "smoke" and meta["notebook"] == "05_probabilistic_bounds"
    params = meta["parameters"]
    n = params["n_samples"]
    evaluated = [name for name, splits in metrics.items() if "forget" in splits]  # an HP-only model has no forget
    assert "target" in evaluated and len(evaluated) >= 2, sorted(metrics)
    for name in evaluated:
        forget = metrics[name]["forget"]
        assert forget["n_samples"] == n and forget["n_questions"] >= 1, name
        for key in ("greedy_rouge", "ed_mean", "ed_sd", "mean_lower_bound", "mean_upper_bound", "std_upper_bound",
                    "leak_rate", "binary_leak_bound_mean", "adaptive_greedy_share", "certainty_mean"):
            assert 0.0 <= forget[key] <= 1.0, (name, key, forget[key])
        assert forget["mean_lower_bound"] <= forget["ed_mean"] <= forget["mean_upper_bound"] + 1e-9, name
        # no bound can beat what n samples allow: M_bin >= 1 - alpha^(1/n)
        assert forget["binary_leak_bound_mean"] >= 1 - params["alpha"] ** (1 / n) - 1e-9, name
        for key in ("greedy_unlearned_but_leaks", "greedy_unlearned_but_leaks_rouge", "greedy_unlearned"):
            assert isinstance(forget[key], int) and 0 <= forget[key] <= forget["n_questions"], (name, key)
        assert forget["greedy_unlearned_but_leaks"] <= forget["greedy_unlearned"], name
    assert set(meta["models"]) == set(evaluated) and meta["sampling"]["n"] == n
    assert len(meta["questions"]) == metrics["target"]["forget"]["n_questions"]
    # the models of the paper's regime: one kept step per run of regime_runs, named <run>@<step>
    regime = meta["regime"]
    assert sorted(m["run"] for m in regime.values()) == sorted(params["regime_runs"])
    for label, m in regime.items():
        assert label == f"{m['run']}@{m['step']}" and label in evaluated and 0 <= m["greedy_leak_rate"] <= 1
        if m["reached"]:
            assert m["greedy_leak_rate"] <= m["reference_rate"] + params["regime_tolerance"] + 1e-9, label
    assert list(numbers_only.texts(metrics)) == []  # the regime's reading stays in the notebook
    figures = ["greedy_vs_samples", "binary_leak", "regime", "vs_n", "bound_modes"]
    # one cache entry per scored model (no stale key left beside it), one per searched run, and the keyword
    # Q&A's apart from them; a saved model is cached by its name, a kept step by its label
    cached = sorted(p.name.rsplit("-", 1)[0] for p in (runs / "05_probabilistic_bounds" / "cache").glob("*.json"))
    expected = sorted([name if name in regime else saved for name, saved in meta["models"].items()]
                      + [f"along-{run}" for run in params["regime_runs"]])
    # hp_model 'regime' (#56 item 5): the first regime model that reached the regime, else the first one
    hp_name = params.get("hp_model")
    if hp_name == "regime":
        hp_name = next((label for label, m in regime.items() if m["reached"]), next(iter(regime), None))
    if hp_name:
        hp = metrics[hp_name]["hp_qa"]
        assert (hp["greedy_safe_questions"] == 0) == (hp["share_binary_leak_bound_above_0.1_greedy_safe"] is None)
        assert hp["n_samples"] == n and 0 <= hp["binary_leak_bound_mean"] <= 1
        assert hp["binary_leak_bound_min"] >= 1 - params["alpha"] ** (1 / n) - 1e-9
        # the other choice of the affirmative prefix, beside it, with the paper's Fig. 3a statistic
        other = metrics[hp_name]["hp_qa_plain" if params["hp_affirmative_prefix"] else "hp_qa_prefixed"]
        assert other["use_prefix"] != hp["use_prefix"] == params["hp_affirmative_prefix"]
        assert 0 <= other["share_binary_leak_bound_above_0.1"] <= 1 and other["n_questions"] == hp["n_questions"]
        figures.append("hp_qa")
        if hp_name in regime or (runs / "models" / hp_name / "config.json").exists():
            expected = sorted([*expected, f"{hp_name}.hp", f"{hp_name}.hp.prefixed"])
    assert cached == expected, cached
    per_item = json.loads((runs / "05_probabilistic_bounds" / "per_item.json").read_text())
    assert set(per_item) == set(evaluated)
    for name in evaluated:
        assert len(per_item[name]["binary_leak_bound"]) == metrics[name]["forget"]["n_questions"]
    for figure in figures:
        assert (runs / "figures" / f"05_probabilistic_bounds_{figure}.png").stat().st_size > 1000, figure


def check_06(smoke_runs_dir) -> None:
    """runs/smoke/06_entropy_optimisation/metrics.json after a smoke run of notebook 06: every run of Table 1 and of
    both sweeps has its numbers in range, the sweeps name runs that were scored, and it holds numbers and names only."""
    runs = Path(smoke_runs_dir)
    metrics = json.loads((runs / "06_entropy_optimisation" / "metrics.json").read_text())
    meta = metrics.pop("meta")
    params = meta["parameters"]
    assert meta["profile"] == "smoke" and meta["notebook"] == "06_entropy_optimisation"
    # beside the runs' final models: the steps in the paper's regime (notebook 05) and the EO points added there
    regime_eo = meta["regime_eo"]
    assert set(params["eo_table_runs"]) <= set(metrics)
    assert set(meta["runs"]) - {p["run"] for p in regime_eo} <= set(metrics)
    assert {p["label"] for p in regime_eo} <= set(metrics) and all(m in meta["runs"] or "@" in m for m in metrics)
    assert {p["positions"] for p in regime_eo if p["lambda_f"]} == set(params["eo_positions"])
    assert len(regime_eo) == 1 + len(params["eo_regime_lambda_f_grid"]) * len(params["eo_positions"])
    n, alpha = params["eo_n_samples"], params["alpha"]
    for run, entry in metrics.items():
        row = entry["forget"]
        for key in ("greedy ROUGE-L", "ED mean", "ED sd", "M_bin", "M_mu", "M_sigma", "leak rate", "model utility"):
            assert 0.0 <= row[key] <= 1.0, (run, key, row[key])
        assert row["M_bin"] >= 1 - alpha ** (1 / n) - 1e-9 and row["ED mean"] <= row["M_mu"] + 1e-9, run
        if "ED score" in row:  # mean + rho sd
            assert row["ED score"] == pytest.approx(row["ED mean"] + params["ed_rho"] * row["ED sd"], abs=1e-9), run
    sweep = meta["lambda_f_sweep"]
    assert len(sweep) == len(params["eo_lambda_f_grid"]) * len(params["eo_lr_grid"])
    assert {p["run"] for p in sweep + meta["lambda_r_sweep"]} <= set(metrics)
    assert {p["lambda_f"] for p in sweep} == set(params["eo_lambda_f_grid"])
    assert list(numbers_only.texts({**metrics, "meta": meta})) == []  # the readings stay in the notebook
    for figure in ("table1", "regime_eo", "general_leak", "lambda_f", "temperature", "diversity", "entropy_along",
                   "ed_vs_utility", "adaptive"):
        assert (runs / "figures" / f"06_entropy_optimisation_{figure}.png").stat().st_size > 1000, figure


def check_07(smoke_runs_dir) -> None:
    """runs/smoke/07_alignment_toxicity/metrics.json after a smoke run of notebook 07: every model and group is
    summarised with shares in [0, 1], numbers and names only, the figures exist."""
    runs = Path(smoke_runs_dir)
    metrics = json.loads((runs / "07_alignment_toxicity" / "metrics.json").read_text())
    meta = metrics["meta"]
    assert meta["profile"] == "smoke" and meta["notebook"] == "07_alignment_toxicity"
    strengths = meta["parameters"]["alignment_strengths"]
    models = {name for name in metrics if name != "meta"}
    assert models == {"complying", *(f"aligned ×{s}" for s in strengths)}, models
    for name in models:
        assert {"all", "seen"} <= set(metrics[name]), (name, sorted(metrics[name]))
        for group, row in metrics[name].items():
            for key in ("greedy_safe_share", "sampled_share"):
                assert 0.0 <= row[key] <= 1.0, (name, group, key, row[key])
    assert list(numbers_only.texts(metrics)) == []  # the finding's reading stays in the notebook
    assert meta["requests"]["evaluated"] == sum(meta["requests"]["by_group"].values())
    assert meta["judge"]["name"] == "classifier" and 0.0 <= meta["judge"]["heldout_accuracy"] <= 1.0
    for figure in ("sampled_scores", "binary_bounds", "along_alignment", "by_category"):
        assert (runs / "figures" / f"07_alignment_toxicity_{figure}.png").stat().st_size > 1000, figure
    for name in ("complying", *(f"aligned-{s}" for s in strengths)):
        assert (runs / "models" / name / "config.json").exists(), name
