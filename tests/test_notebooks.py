"""Papermill smoke runs of the notebooks, in order, on the smoke profile, into a temporary runs/ folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numbers_only
import numpy as np
import pytest
from conftest import skip_unless
from notebook_checks import check_03, check_04, check_05, check_06, check_07
from unlearnkit import config, paths, runner, runs

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def smoke_runs(tmp_path_factory):
    runs = tmp_path_factory.mktemp("runs")
    env = {**os.environ, "UNLEARNKIT_RUNS": str(runs), "TQDM_DISABLE": "1"}
    done = subprocess.run([sys.executable, "-m", "unlearnkit.runner", "all", "--profile", "smoke"],
                          env=env, capture_output=True, text=True, timeout=1200, cwd=paths.ROOT)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    # a model of the store evaluated as one's own (runner eval): a page of its own in the report
    evaluated = subprocess.run([sys.executable, "-m", "unlearnkit.runner", "eval", "--model", "npo", "--profile",
                                "smoke"], env=env, capture_output=True, text=True, timeout=600, cwd=paths.ROOT)
    assert evaluated.returncode == 0, evaluated.stdout[-3000:] + evaluated.stderr[-3000:]
    assert "estimated on this CPU (" in evaluated.stdout and "): tofu" in evaluated.stdout
    # quiet runs: the kernels talk over IPC (nothing unencrypted to warn about), every key is one papermill knows
    for noise in ("without encryption", "Passed unknown parameter", "KeyboardInterrupt caught in kernel", "Logging error",
                  "Removed shared tensor"):
        assert noise not in done.stdout + done.stderr, noise
    return runs / "smoke" / "seed-0"  # the smoke profile's own training seed


def test_00_data_tour(smoke_runs):
    metrics = json.loads((smoke_runs / "00_data_tour" / "metrics.json").read_text())
    assert metrics["corpus"]["full"]["n_items"] == 200 and metrics["meta"]["profile"] == "smoke"
    assert (smoke_runs / "figures" / "00_data_tour_splits.png").stat().st_size > 1000


def test_01_tofu_finetune(smoke_runs):
    metrics = json.loads((smoke_runs / "01_tofu_finetune" / "metrics.json").read_text())
    assert set(metrics) == {"base", "target", "retain90", "meta"}
    for model in ("base", "target", "retain90"):
        assert set(metrics[model]) == {"forget", "retain", "real_authors", "world_facts", "summary"}
        assert 0 <= metrics[model]["summary"]["forget_quality"] <= 1
    assert metrics["retain90"]["summary"]["forget_quality"] == 1.0  # tested against itself
    assert "torch" in metrics["meta"]["packages"] and metrics["meta"]["parameters"]["profile"] == "smoke"
    per_item = json.loads((smoke_runs / "01_tofu_finetune" / "per_item.json").read_text())
    assert len(per_item["target"]["forget"]["truth_ratio"]) == metrics["target"]["forget"]["n_items"]
    for name in ("base", "target", "retain90"):
        assert (smoke_runs / "models" / name / "config.json").exists()


def test_02_unlearning_every_method(smoke_runs):
    methods = config.Params.load("smoke").methods
    for run in methods:
        metrics = json.loads((smoke_runs / f"02_unlearning_{run}" / "metrics.json").read_text())
        assert set(metrics) == {run, "meta"}, run
        assert {"forget_quality", "model_utility"} <= set(metrics[run]["summary"]), run
        trajectory = json.loads((smoke_runs / f"02_unlearning_{run}" / "per_item.json").read_text())["trajectory"]
        assert trajectory and all("forget_rouge" in r for r in trajectory), run
        assert (smoke_runs / "models" / f"unlearned-{run}" / "config.json").exists()
    assert (smoke_runs / "figures" / "02_unlearning_comparison.png").exists()


def test_03_controls_calibration(smoke_runs):
    check_03(smoke_runs)


def test_04_format_eval(smoke_runs):
    check_04(smoke_runs)


def test_05_probabilistic_bounds(smoke_runs):
    check_05(smoke_runs)


def _store_copy(smoke_runs, tmp_path):
    """A copy of the smoke store (runs/smoke/seed-0) under a runs/ folder of its own: a run there leaves the
    module's store as the other tests read it."""
    import shutil

    root = tmp_path / "runs"
    shutil.copytree(smoke_runs, root / "smoke" / "seed-0", ignore=shutil.ignore_patterns("*.ipynb", "eval"))
    return root


def _values_05_used(store) -> dict:
    """What notebook 05 recorded of the parameters it used, and the sizes each of its parts really took: the sampled
    forget questions of every model, the keyword Q&A's questions and the sampling settings."""
    metrics = json.loads((store / "smoke" / "seed-0" / "05_probabilistic_bounds" / "metrics.json").read_text())
    meta = metrics.pop("meta")
    return {"recorded": meta["parameters"], "questions": len(meta["questions"]),
            "forget": {name: m["forget"]["n_questions"] for name, m in metrics.items() if "forget" in m},
            "keyword": {name: m[k]["n_questions"] for name, m in metrics.items() for k in ("hp_qa", "hp_qa_prefixed")
                        if k in m},
            "samples": meta["sampling"]["n"]}


def _check_05_used(used: dict, params: config.Params, n_forget: int) -> None:
    expected = min(params.sample_max_items, n_forget)
    assert used["recorded"] == config.jsonable(dict(params)), "metrics.json records other parameters"
    assert used["questions"] == expected and set(used["forget"].values()) == {expected}, used
    assert used["keyword"] and set(used["keyword"].values()) == {expected}, used  # the keyword Q&A took the same
    assert used["samples"] == params.n_samples


def test_05_with_profile_set_in_its_parameters_cell_uses_that_profiles_values_everywhere(smoke_runs, tmp_path,
                                                                                         monkeypatch):
    """As a reader in JupyterLab: only ``profile = 'smoke'`` changed in the parameters cell, nothing injected. Every
    cell reads ``params``, so the keyword Q&A and the sampling both take smoke's sample_max_items (10), not the
    cell's default-profile value (40)."""
    import nbformat
    import papermill

    store = _store_copy(smoke_runs, tmp_path)
    nb = nbformat.read(runner.find_notebook("05"), as_version=4)
    (cell,) = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert "profile = 'default'" in cell.source and "sample_max_items = 40" in cell.source
    cell.source = cell.source.replace("profile = 'default'", "profile = 'smoke'")
    monkeypatch.setenv("UNLEARNKIT_RUNS", str(store))
    monkeypatch.setenv("TQDM_DISABLE", "1")
    papermill.execute_notebook(nb, str(tmp_path / "05.ipynb"), cwd=str(paths.NOTEBOOKS), kernel_name="python3",
                               progress_bar=False, execution_timeout=600)
    smoke = config.Params.load("smoke")
    n_forget = json.loads((smoke_runs / "00_data_tour" / "metrics.json").read_text())["corpus"][smoke.forget_split]
    _check_05_used(_values_05_used(store), smoke, n_forget["n_items"])
    assert smoke.sample_max_items < min(40, n_forget["n_items"])  # the two values differ, so the test can fail


def test_05_with_a_set_value_equal_to_the_default_takes_it(smoke_runs, tmp_path):
    """``--set sample_max_items=40`` on smoke: 40 is default.yaml's value, yet it wins over smoke's 10 everywhere (the
    runner names the keys it set in ``keys_set``); 40 is more than the forget split holds, so every question."""
    store = _store_copy(smoke_runs, tmp_path)
    env = {**os.environ, "UNLEARNKIT_RUNS": str(store), "TQDM_DISABLE": "1"}
    done = subprocess.run([sys.executable, "-m", "unlearnkit.runner", "05", "--profile", "smoke", "--set",
                           "sample_max_items=40"], env=env, capture_output=True, text=True, timeout=600, cwd=paths.ROOT)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    params = config.Params.load("smoke", sample_max_items=40)
    assert params.sample_max_items == config.load_profile("default")["sample_max_items"]
    n_forget = json.loads((smoke_runs / "00_data_tour" / "metrics.json").read_text())["corpus"][params.forget_split]
    _check_05_used(_values_05_used(store), params, n_forget["n_items"])


def test_06_entropy_optimisation(smoke_runs):
    check_06(smoke_runs)


def test_07_alignment_toxicity(smoke_runs):
    check_07(smoke_runs)


def test_08_robustness_attacks_every_model_with_its_control_and_relearns_on_the_forget_split(smoke_runs):
    from unlearnkit import attacks, pipeline
    from unlearnkit.studies import recovery

    params = config.Params.load("smoke")
    metrics = json.loads((smoke_runs / "08_robustness" / "metrics.json").read_text())
    per_item = json.loads((smoke_runs / "08_robustness" / "per_item.json").read_text())
    regime = metrics["meta"]["regime_matched"]["run"]
    expected = {"target", "retain90", *params.methods, *([regime] if regime else [])}
    assert set(per_item) == expected and set(metrics) == expected | {"meta"}
    source = pipeline.corpus(params)
    forget, retain = source.load(params.forget_split), source.load("retain90")
    for label, result in per_item.items():
        recipe = result["relearn"]["recipe"]
        # relearning trains on the forget split, by hash, never on the retain split
        assert recipe["split"] == params.forget_split and recipe["rows_hash"] == attacks.rows_hash(forget), label
        assert recipe["rows_hash"] != attacks.rows_hash(retain)
        assert set(result["quant"]) == set(params.quant_schemes) and "prefill" in result["probes"], label
        assert result["rtt"] and all(set(f["attributes"]).isdisjoint({"name"}) for f in result["rtt"]), label
    # the bucket crossing of every unlearned (and regime-matched) run, as numbers, for the claims' extractors
    crossed = {label for label, m in metrics["meta"]["models"].items() if m["kind"] in (recovery.UNLEARNED,
                                                                                      recovery.REGIME_MATCHED)}
    assert set(metrics["meta"]["crossing"]) == crossed
    assert all(set(schemes) == set(params.quant_schemes) for schemes in metrics["meta"]["crossing"].values())
    for figure in ("relearning", "rtt", "quantisation", "probes", "survival"):
        assert (smoke_runs / "figures" / f"08_robustness_{figure}.png").exists(), figure


def test_runner_eval_of_the_workbooks_npo_model_gets_the_numbers_its_notebooks_stored(smoke_runs):
    """runner eval on the store's NPO model, with the profile's corpus and its retain model: TOFU's metrics as
    notebook 02 stored them, the formats as 04's, the attacks as 08's, the retain model's sampled bounds as 05's."""
    (evaluated,) = smoke_runs.glob("eval/npo-*/metrics.json")
    got = json.loads(evaluated.read_text())
    model, reference = got["model"], got["reference"]
    stored = {nb: json.loads((smoke_runs / nb / "metrics.json").read_text())
              for nb in ("02_unlearning_npo", "04_format_eval", "05_probabilistic_bounds", "08_robustness")}
    for part in ("forget", "retain", "real_authors", "world_facts", "summary"):
        assert model[part] == stored["02_unlearning_npo"]["npo"][part], part
    assert model["formats"] == stored["04_format_eval"]["npo"]
    assert model["relearned"] == pytest.approx(stored["08_robustness"]["npo"]["relearned"], rel=1e-6)  # relearning: 1e-9 apart seen
    assert model["attacked forget"] == stored["08_robustness"]["npo"]["forget"]
    assert reference["sampled"] == stored["05_probabilistic_bounds"]["retain90"]["forget"]
    assert got["meta"]["evaluated"]["suites"] == ["tofu", "leakage", "formats", "attacks"]
    from jsonschema import Draft202012Validator

    schema = json.loads((paths.ROOT / "docs" / "metrics.schema.json").read_text())
    assert [e.message for e in Draft202012Validator(schema).iter_errors(got)] == []  # the notebooks' schema
    assert not (paths.ROOT / "results" / "smoke").exists()  # an evaluation is never mirrored into results/


def test_09_metric_trust(smoke_runs):
    """The P/N pool in the run store, the faithfulness of every pool metric, robustness from 08, leak@k of every model
    notebook 05 sampled, and both figures."""
    from unlearnkit.studies import trust

    metrics = json.loads((smoke_runs / "09_metric_trust" / "metrics.json").read_text())
    assert set(metrics) == {"pool", "meta_evaluation", "leak_at_k", "meta"}
    assert metrics["meta"]["pool_sizes"] == {"P": 2, "N": 2} and metrics["meta"]["quantisation"] == "nf4"
    for name, row in metrics["pool"].items():
        assert (smoke_runs / "models" / name / "config.json").exists() and row["side"] in ("P", "N")
    table = metrics["meta_evaluation"]
    assert set(table) == set(trust.POOL_METRICS)
    assert all(0 <= row["faithfulness"] <= 1 for row in table.values())
    assert all(row["R symmetric"] is not None for m, row in table.items() if m in trust.ROBUST_METRICS
               and row["R left out symmetric"] < row["models"])
    sampled = json.loads((smoke_runs / "05_probabilistic_bounds" / "per_item.json").read_text())
    assert set(metrics["leak_at_k"]) == set(sampled)
    for name, curve in metrics["leak_at_k"].items():  # leak@1 is the stored leak rate, and the curve never falls
        assert curve["leak_at_k"][0] == pytest.approx(np.mean(sampled[name]["leak_rate"]))
        assert all(a <= b + 1e-12 for a, b in zip(curve["leak_at_k"], curve["leak_at_k"][1:]))
    for figure in ("table", "leak_at_k"):
        assert (smoke_runs / "figures" / f"09_metric_trust_{figure}.png").stat().st_size > 1000


def test_every_notebook_ran(smoke_runs):
    executed = {p.stem for p in smoke_runs.glob("*.ipynb")}
    for source in runner.source_notebooks():
        assert any(name.startswith(source.stem) for name in executed), source.name


def test_10_findings_judges_every_registered_claim_over_the_seeds(smoke_runs):
    from unlearnkit.claims import extractors
    from unlearnkit.claims import summary as claim_summary
    from unlearnkit.claims.judge import VERDICTS

    metrics = json.loads((smoke_runs / "10_findings" / "metrics.json").read_text())
    rows = metrics["claims"]
    # one summary, the registered claims alone: every judged claim, by the rule, over the one seed
    assert metrics["schema_version"] == claim_summary.SCHEMA_VERSION and metrics["seeds"] == [0]
    assert not {"findings", "rule", "counts"} & set(metrics) and all("former_bar" not in r for r in rows)
    assert [r["id"] for r in rows] == [c.id for c in extractors.judged_claims()]
    assert all(r["verdict"] in VERDICTS for r in rows)
    assert sum(metrics["claims_counts"].values()) == sum(r["kind"] == "finding" for r in rows)
    # one seed: no verdict can be confident below five testable seeds
    assert all(r["verdict"] != "reproduced" for r in rows)
    # the profile's summary over its seeds sits beside the seeds' stores
    assert json.loads((smoke_runs.parent / "findings.json").read_text())["claims"] == rows
    # every study's results hold numbers and names only (tests/numbers_only.py)
    for path in smoke_runs.glob("0[0-8]*/metrics.json"):
        assert list(numbers_only.texts(json.loads(path.read_text()))) == [], path.parent.name
    # every notebook's last cell shows its registered claims on this seed, the outcomes notebook 10 judged (notebook
    # 02 once, after its last run: its claims compare the runs; no claim reads notebook 00 alone)
    from bs4 import BeautifulSoup

    shown_02 = 0
    for executed in smoke_runs.glob("0[0-9]_*.ipynb"):
        base = "02_unlearning" if executed.stem.startswith("02_unlearning") else executed.stem
        mine = [r for r in metrics["claims"] if r["notebook"] == base]
        last = json.loads(executed.read_text())["cells"][-1]
        if base == "00_data_tour":
            assert not mine and last["cell_type"] == "markdown"
            continue
        printed = "".join("".join(o.get("text", "")) for o in last["outputs"])
        if printed.startswith("the claims compare every run"):
            assert base == "02_unlearning", executed.name
            continue
        shown_02 += base == "02_unlearning"
        html = "".join("".join(o.get("data", {}).get("text/html", "")) for o in last["outputs"])
        rows_shown = {tr.find_all("td")[1].get_text(): tr.find_all("td")[2].get_text()
                      for tr in BeautifulSoup(html, "html.parser").select("tbody tr")}
        assert mine and rows_shown == {r["id"]: r["per_seed"][0]["outcome"] for r in mine}, executed.name
    assert shown_02 == 1, "notebook 02 shows its claims once, after its last run"
    assert (smoke_runs / "figures" / "10_findings_claims.png").exists()
    assert not (smoke_runs / "figures" / "10_findings_overview.png").exists()  # the former findings' tiles, retired


def test_make_figures_redraws_every_figure_byte_for_byte(smoke_runs):
    figures = {p.name: p.read_bytes() for p in (smoke_runs / "figures").glob("*.png")}
    kept = {p.stem for p in (smoke_runs / "figure-data").glob("*.json")}
    assert kept == {name.removesuffix(".png") for name in figures}, "a figure was saved without its data"
    for path in (smoke_runs / "figures").glob("*.png"):
        path.unlink()
    env = {**os.environ, "UNLEARNKIT_RUNS": str(smoke_runs.parent.parent)}  # runs/<profile>/seed-0
    done = subprocess.run([sys.executable, "-m", "unlearnkit.runner", "figures", "--profile", "smoke"], env=env,
                          capture_output=True, text=True, timeout=300, cwd=paths.ROOT)
    assert done.returncode == 0, done.stderr
    assert {p.name: p.read_bytes() for p in (smoke_runs / "figures").glob("*.png")} == figures


@pytest.fixture(scope="module")
def smoke_report(smoke_runs, tmp_path_factory):
    from unlearnkit import report

    out = tmp_path_factory.mktemp("report")
    saved, paths.RUNS = paths.RUNS, smoke_runs.parent.parent  # runs/<profile>/seed-0
    try:
        return report.build(config.Params.load("smoke"), out)
    finally:
        paths.RUNS = saved


def test_the_report_has_every_page_every_figure_and_loads_nothing(smoke_runs, smoke_report):
    import base64
    import re

    from unlearnkit import report

    out = smoke_report.parent
    expected = {"index.html", report.GLOSSARY_PAGE} | {f"{p.stem}.html" for p in smoke_runs.glob("*.ipynb")
                                                        if p.stem != "10_findings"} | {
        f"eval-{p.parent.name}.html" for p in smoke_runs.glob("eval/*/eval_model.ipynb")} | {
        report.site.EVALUATIONS_PAGE}  # the index of the store's evaluations (#60 point 7)
    assert any(name.startswith("eval-npo-") for name in expected)
    assert {p.name for p in out.glob("*.html")} == expected
    assert (out / "mathjax" / "MathJax.js").exists()
    pages = {p.name: p.read_text() for p in out.glob("*.html")}
    for name, page in pages.items():
        assert report.external_resources(page) == [], name
        assert all(src.startswith("data:") for src in re.findall(r'<img[^>]*\bsrc="([^"]+)"', page)), name
        assert 'href="index.html"' in page  # the navigation reaches the front page from everywhere
        for target in re.findall(r'<a href="([^"#:]+\.html)"', page):
            assert (out / target).exists(), f"{name} links to missing {target}"
    every_page = "".join(pages.values())
    for figure in (smoke_runs / "figures").glob("*.png"):
        assert base64.b64encode(figure.read_bytes()).decode() in every_page, f"{figure.name} is not in the report"
    assert "Findings across the papers" in pages["index.html"] and "verdict" in pages["index.html"]


def test_the_report_is_a_readers_view(smoke_runs, smoke_report):
    """One parameters cell with the run's values, a provenance line on every page, an anchor where each figure is
    drawn, and the findings table linking each figure there."""
    import re

    from unlearnkit import report

    out = smoke_report.parent
    pages = {p.name: p.read_text() for p in out.glob("*.html")}
    glossary = pages.pop(report.GLOSSARY_PAGE)  # a page of the docs, not of a notebook: no parameters, no run
    evaluations = pages.pop(report.site.EVALUATIONS_PAGE)  # the index of the evaluations: a list, not a notebook
    assert 'href="index.html"' in evaluations and "eval-npo-" in evaluations
    assert 'href="index.html"' in glossary and 'id="fig-' not in glossary and "M_bin" in glossary
    for name, page in pages.items():
        assert '<span class="c1"># Parameters</span>' not in page, f"{name} still shows papermill's injected cell"
        assert page.count("# Parameters: the keys this notebook reads") == 1, name
        line = re.search(r'<p class="provenance">(.*?)</p>', page, re.S)
        assert line and "profile <b>smoke</b>" in line.group(1) and "commit <code>" in line.group(1), name
        assert "seed 0" in line.group(1) and "torch " in line.group(1) and re.search(r"ran \d{4}-\d\d-\d\d", line.group(1))
        assert 'class="code-toggle"' in page, name
    assert "time per notebook:" in pages["index.html"]
    # one parameters cell, with the values the run used rather than the cell's defaults
    import nbformat
    from unlearnkit import parameters_cell

    nb = nbformat.read(smoke_runs / "02_unlearning_npo.ipynb", as_version=4)
    parameters_cell.fold_injected(nb)
    cells = [c.source for c in nb.cells if c.cell_type == "code" and c.source.startswith("# Parameters")]
    assert len(cells) == 1 and 'profile = "smoke"' in cells[0] and "method = \"npo\"" in cells[0], cells
    anchors = {m for page in pages.values() for m in re.findall(r'id="fig-([^"]+)"', page)}
    assert {p.stem for p in (smoke_runs / "figures").glob("*.png")} <= anchors
    links = re.findall(r'<a href="([^"#]+\.html)#fig-([^"]+)">', pages["index.html"])
    assert len(links) >= 10, "the findings table links its figures"
    for page, figure in links:
        assert f'id="fig-{figure}"' in pages[page], f"{page} has no anchor for {figure}"
        assert not figure.startswith("10_") or page == "index.html"  # the findings notebook is the front page
        assert page == "index.html" or page.startswith(figure[:2]), (page, figure)


def test_the_report_renders_offline_in_a_headless_browser(smoke_report):
    import re
    import shutil

    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    skip_unless(browser is not None, "no headless browser: Debian's chromium package is not installed here (apt install "
                "chromium; CI machines have none)",
                "tests/test_notebooks.py::test_the_report_has_every_page_every_figure_and_loads_nothing (the same pages, "
                "read as HTML)")
    isolate = ["unshare", "-n"] if shutil.which("unshare") and subprocess.run(
        ["unshare", "-n", "true"], capture_output=True).returncode == 0 else []
    # without a network namespace, a proxy that does not exist stands in for the missing network
    flags = [] if isolate else ["--proxy-server=127.0.0.1:9"]
    done = subprocess.run([*isolate, browser, "--headless", "--no-sandbox", "--disable-gpu", *flags,
                           "--virtual-time-budget=10000", "--dump-dom", smoke_report.as_uri()],
                          capture_output=True, text=True, timeout=120)
    dom = done.stdout
    assert "Findings across the papers" in dom, done.stderr[-2000:]
    assert len(re.findall(r'<img[^>]*src="data:image/png', dom)) >= 2  # the overview and the key figures
    assert re.search(r"<table[^>]*>.*?verdict.*?</table>", dom, re.S)  # the findings table
    # the reader's view: code folded away by default, shown with the toggle's ?code; the figure links land
    assert re.search(r'<body[^>]*data-code="hidden"', dom), re.search(r"<body[^>]*>", dom)

    def load(url):
        return subprocess.run([*isolate, browser, "--headless", "--no-sandbox", "--disable-gpu", *flags,
                               "--virtual-time-budget=5000", "--dump-dom", url],
                              capture_output=True, text=True, timeout=120).stdout

    page = smoke_report.parent / "01_tofu_finetune.html"
    assert re.search(r'<body[^>]*data-code="hidden"', load(page.as_uri()))
    assert re.search(r'<body[^>]*class="[^"]*show-code[^"]*"[^>]*data-code="shown"', load(page.as_uri() + "?code"))
    target, figure = re.findall(r'<a href="([^"#]+\.html)#fig-([^"]+)">', dom)[0]
    linked = load((smoke_report.parent / target).as_uri() + f"#fig-{figure}")
    assert f'id="fig-{figure}"' in linked


def _reader_problems(folder) -> dict[str, list[str]]:
    """Every page's problems a reader would trip on (report.page_problems), and the symbols and the column headers of
    every printed table its pages show that the glossary lacks."""
    from unlearnkit import report

    known = report.glossary_terms()
    found = {}
    for page in sorted(folder.glob("*.html")):
        text = page.read_text()
        problems = report.page_problems(text) + [f"not in docs/glossary.md: {term!r}"
                                                 for term in report.glossary_gaps(text, known)]
        if problems:
            found[page.name] = problems
    return found


def test_the_reader_view_is_quiet_and_every_printed_symbol_is_in_the_glossary(smoke_report):
    """No local path, no pathlib repr, no Python warning, no empty section on any page of the smoke report, and every
    symbol M_… and every column header of every printed table defined in docs/glossary.md."""
    assert _reader_problems(smoke_report.parent) == {}


def test_the_default_report_is_quiet_where_its_runs_are_current(tmp_path):
    """The same checks on the default profile's report, where this checkout's runs of it are present and were made by
    this commit (older runs show what older code printed)."""
    from unlearnkit import provenance, report

    params = config.Params.load("default")
    executed = sorted(runs.store(params).glob("[0-9][0-9]_*.ipynb")) if runs.store(params).exists() else []
    cover = ("tests/test_glossary.py::test_every_term_the_default_report_prints_is_in_the_glossary (the default "
             "report's terms, committed) and "
             "tests/test_notebooks.py::test_the_reader_view_is_quiet_and_every_printed_symbol_is_in_the_glossary (smoke)")
    skip_unless(bool(executed), "no run of the default profile in runs/ (make all makes one)", cover)
    revisions = {json.loads(p.read_text())["metadata"].get("unlearnkit", {}).get("provenance", {}).get("git_revision")
                 for p in executed}
    skip_unless(revisions == {provenance.git_revision()},
                f"the default runs were made by {sorted(map(str, revisions))}, not this commit (make all)", cover)
    index = report.build(params, tmp_path)
    assert _reader_problems(tmp_path) == {}
    # CI reads docs/printed-terms.json instead of these runs (tests/test_glossary.py): it must be this report's
    printed = report.terms_by_page(tmp_path, report.notebook_pages(report.pages(params)))
    committed = json.loads(paths.PRINTED_TERMS.read_text(encoding="utf-8"))["pages"]
    assert committed == printed, f"docs/printed-terms.json is not this report's: make report rewrites it ({index})"
