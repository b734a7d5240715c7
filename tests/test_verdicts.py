"""The judging helpers (the Clopper-Pearson bound, the seed study's bootstrap), the README's results section
against the committed summary, the report's offline check, and figures redrawn from what `plots.draw` kept."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from unlearnkit import config, paths, plots, report, runs
from unlearnkit import seedstudy as seed_study
from unlearnkit.claims import judge
from unlearnkit.claims import render as claim_render
from unlearnkit.claims import summary as claim_summary

#: The run store of the hand-made runs (under a temporary runs/): the smoke profile's seed 0.
SMOKE = config.Params.load("smoke")


def test_the_clopper_pearson_bound_is_scipys_exact_interval():
    for k, n in ((0, 6), (1, 1), (5, 6), (6, 6), (3, 10), (10, 10)):
        exact = stats.binomtest(k, n).proportion_ci(confidence_level=0.90, method="exact").low  # two-sided 90 %
        assert judge.clopper_pearson_lower(k, n, judge.RULE_ALPHA) == pytest.approx(exact, abs=1e-12), (k, n)
    assert judge.clopper_pearson_lower(6, 6, 0.05) == pytest.approx(0.05 ** (1 / 6))  # 0.607: above one half
    # the rule needs 5 seeds that all hold: 4 of 4 stays below one half, 5 of 5 clears it, 5 of 6 does not
    level = judge.RULE_ALPHA
    assert judge.clopper_pearson_lower(4, 4, level) < 0.5 < judge.clopper_pearson_lower(5, 5, level)
    assert judge.clopper_pearson_lower(5, 6, judge.RULE_ALPHA) < 0.5
    with pytest.raises(ValueError):
        judge.clopper_pearson_lower(3, 2, judge.RULE_ALPHA)


def test_the_bootstrap_over_seeds_is_scipys_percentile_bootstrap():
    values = np.array([0.3, 0.5, 0.45, 0.61, 0.2, 0.4])
    ours = seed_study.bootstrap_interval(values, resamples=2000, confidence=0.95, bootstrap_seed=7)
    theirs = stats.bootstrap((values,), np.mean, n_resamples=2000, method="percentile", confidence_level=0.95,
                             rng=np.random.default_rng(7)).confidence_interval
    assert ours == pytest.approx((theirs.low, theirs.high), abs=1e-12)
    assert seed_study.bootstrap_interval([0.4]) == (0.4, 0.4) and seed_study.bootstrap_interval([0.2, 0.2]) == (0.2, 0.2)
    assert seed_study.bootstrap_interval(values) == seed_study.bootstrap_interval(values)  # seeded: the same every time


def test_a_one_seed_summary_never_replaces_a_several_seed_one():
    committed = {"seeds": [0, 1, 2]}
    assert not claim_summary.may_replace(committed, [0])
    assert claim_summary.may_replace(committed, [0, 1, 2, 3]) and claim_summary.may_replace(None, [0])


def test_readme_results_match_the_committed_summary():
    """README's results section is exactly what `make readme` writes from docs/findings.json: the registered claims
    alone (schema 2, the former findings retired), every verdict by the rule from the file's own per-seed outcomes."""
    summary = json.loads(report.SUMMARY.read_text())
    assert summary["profile"] == config.BASE_PROFILE and summary["claims"] and summary["seeds"]
    assert summary["schema_version"] == claim_summary.SCHEMA_VERSION == 2
    assert not {"findings", "rule", "counts"} & set(summary), "the former findings are retired"
    assert report.write_readme(check=True), "README.md's results section is stale: run `make readme`"
    section = report.readme_section(summary)
    assert section in report.README.read_text()
    page = report.results_page(summary)  # docs/results.md: every table
    assert page == paths.RESULTS_PAGE.read_text()
    for retired in ("The former findings, at their former bars", "| at the former bar |", "10_findings_overview"):
        assert retired not in section and retired not in page, retired
    for row in summary["claims"]:
        assert "former_bar" not in row and f"**{row['verdict']}**" in page
        figure = claim_render.figure(row)
        if figure:
            assert (paths.FIGURES / f"{figure}.png").exists(), f"README links a missing figure {figure}"
        judged = (row.get("sets") or {}).get("judged_on")  # the headline set (#58): its seeds alone decide
        seeds = row["sets"][judged]["seeds"] if judged else summary["seeds"]
        assert row["verdict"] == judge.verdict_of([r["outcome"] for r in row["per_seed"] if r["seed"] in seeds]), row["id"]
        assert {r["seed"] for r in row["per_seed"]} <= set(summary["seeds"])


def test_readme_section_escapes_table_cells(tmp_path):
    """A claim's text with a pipe and a line break is one cell of the README's table; the section, docs/results.md
    and the claims' overview are written from the summary alone."""
    committed = json.loads(report.SUMMARY.read_text())
    row = {**committed["claims"][0], "claim": "a | b\nc"}
    summary = {**committed, "claims": [row], "seed_study": None}
    section = report.readme_section(summary)
    assert f"| {row['paper']} | {row['id']}: a \\| b c" in section
    readme = tmp_path / "README.md"
    readme.write_text(f"head\n{report.START}\nold\n{report.END}\ntail\n")
    (tmp_path / "s.json").write_text(json.dumps(summary))
    assert not report.write_readme(tmp_path / "s.json", readme, check=True)
    report.write_readme(tmp_path / "s.json", readme, figures=tmp_path)
    assert readme.read_text() == f"head\n{section}\ntail\n"
    assert (tmp_path / f"{claim_render.CLAIMS_OVERVIEW}.png").stat().st_size > 1000  # drawn from the summary
    assert (tmp_path / f"{report.MARGINS}.png").exists() == (len(summary["seeds"]) > 1)
    assert report.write_readme(tmp_path / "s.json", readme, check=True)


def test_external_resources_are_loads_not_links():
    page = ('<script src="https://cdn.example/x.js"></script><link rel="stylesheet" href="//cdn.example/y.css">'
            '<style>@font-face { src: url("http://fonts.example/z.woff") }</style>'
            '<a href="https://arxiv.org/abs/2401.06121">TOFU</a><img src="data:image/png;base64,AAAA">'
            '<script src="mathjax/MathJax.js?config=TeX"></script>')
    assert report.external_resources(page) == ["https://cdn.example/x.js", "//cdn.example/y.css",
                                               "http://fonts.example/z.woff"]


def _lengths():
    return (pd.DataFrame({"items": [20, 100, 200]}, index=["forget01", "forget05", "forget10"]),
            pd.DataFrame({"question": [5, 7, 9, 7], "answer": [10, 12, 15, 9]}))


def test_a_drawn_figure_is_redrawn_byte_for_byte_in_another_process(monkeypatch, tmp_path):
    monkeypatch.setattr(paths, "RUNS", tmp_path)
    sizes, lengths = _lengths()
    plots.draw("00_data_tour_splits", SMOKE, plots.corpus_overview, sizes, lengths)
    figure = plots.figure_path("00_data_tour_splits", SMOKE)
    first = figure.read_bytes()
    assert plots.figure_data_path("00_data_tour_splits", SMOKE).exists()
    figure.unlink()
    env = {**os.environ, "UNLEARNKIT_RUNS": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "unlearnkit.runner", "figures", "--profile", "smoke"], env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "1 figures redrawn" in done.stdout
    assert figure.read_bytes() == first


def test_redraw_follows_the_plotting_code_and_says_what_is_missing(monkeypatch, tmp_path):
    monkeypatch.setattr(paths, "RUNS", tmp_path)
    with pytest.raises(FileNotFoundError, match="run its notebooks first"):
        plots.redraw(SMOKE)
    with pytest.raises(TypeError, match="module-level"):
        plots.draw("x", SMOKE, lambda: None)
    sizes, lengths = _lengths()
    plots.draw("00_data_tour_splits", SMOKE, plots.corpus_overview, sizes, lengths)
    before = plots.figure_path("00_data_tour_splits", SMOKE).read_bytes()
    original = plots.set_style

    def other_style():  # one edit of the style, then one command
        original()
        import matplotlib.pyplot as plt

        plt.rcParams["axes.facecolor"] = "#eeeeff"

    monkeypatch.setattr(plots.drawing, "set_style", other_style)  # where redraw finds the style
    (path,) = plots.redraw(SMOKE)
    assert path.read_bytes() != before


def test_the_report_needs_notebook_08(monkeypatch, tmp_path):
    monkeypatch.setattr(paths, "RUNS", tmp_path)
    with pytest.raises(FileNotFoundError, match="run them first"):
        report.pages(SMOKE)
    runs.store(SMOKE).mkdir(parents=True)
    (runs.store(SMOKE) / "00_data_tour.ipynb").write_text("{}")
    with pytest.raises(FileNotFoundError, match="front page"):
        report.pages(SMOKE)


# --------------------------------------------------------------------------- figure recipes: data, never code


class _Explodes:
    """Unpickling this writes a file: what a pickle from a colleague's runs folder could do."""

    def __init__(self, target):
        self.target = target

    def __reduce__(self):
        return (Path.write_text, (Path(self.target), "pwned"))


def test_a_crafted_pickle_in_the_figure_data_is_never_loaded(monkeypatch, tmp_path, capsys):
    import pickle

    monkeypatch.setattr(paths, "RUNS", tmp_path)
    sizes, lengths = _lengths()
    plots.draw("00_data_tour_splits", SMOKE, plots.corpus_overview, sizes, lengths)
    folder = runs.store(SMOKE) / plots.FIGURE_DATA
    assert {p.suffix for p in folder.iterdir()} <= {".json", ".npz"}  # what draw keeps: data
    target = tmp_path / "pwned.txt"
    (folder / "evil.pkl").write_bytes(pickle.dumps({"plot": _Explodes(target), "args": (), "kwargs": {}}))
    (folder / "forged.json").write_text(json.dumps({"version": 1, "plot": "os:system", "args": ["echo x"],
                                                    "kwargs": {}}))
    drawn = plots.redraw(SMOKE)
    assert not target.exists()  # the pickle was never unpickled
    err = capsys.readouterr().err
    assert "evil.pkl: not a figure recipe (JSON), not loaded" in err
    assert "'os:system' is not a name of unlearnkit.plots" in err
    assert [p.name for p in drawn] == ["00_data_tour_splits.png"]


def test_a_recipe_keeps_every_kind_of_argument_and_refuses_the_rest(tmp_path):
    from unlearnkit.plots import recipes
    from unlearnkit.studies import calibration

    frame = pd.DataFrame({"a": [1.0, np.nan], "b": ["x", None], "c": [True, False]},
                         index=pd.MultiIndex.from_tuples([("r", 1), ("r", 2)], names=["run", "step"]))
    args = (frame, frame["a"], np.arange(6).reshape(2, 3), np.array(["u", "v"]), {1: (2, 3), "k": [np.float32(0.5)]},
            calibration.Tolerances(0.1, 0.2), Path("/x/y"), float("inf"))
    recipes.write(tmp_path / "r.json", plots.corpus_overview, args, {"opt": None})
    fn, back, kwargs = recipes.read(tmp_path / "r.json")
    assert fn is plots.corpus_overview and kwargs == {"opt": None}
    pd.testing.assert_frame_equal(back[0], frame)
    pd.testing.assert_series_equal(back[1], frame["a"])
    assert np.array_equal(back[2], args[2]) and list(back[3]) == ["u", "v"]
    assert back[4] == {1: (2, 3), "k": [0.5]} and back[5] == args[5] and back[6] == Path("/x/y") and back[7] == math.inf
    with pytest.raises(recipes.RecipeError, match="cannot be kept as a figure's data"):
        recipes.write(tmp_path / "s.json", plots.corpus_overview, (object(),), {})
    with pytest.raises(recipes.RecipeError, match="is not a name of unlearnkit.plots"):
        recipes.write(tmp_path / "t.json", json.dumps, (), {})


def test_the_reader_checks_catch_what_they_are_for():
    from unlearnkit import report

    def page(*cells):
        return "<html><body>" + "".join(cells) + "</body></html>"

    md = lambda html: f'<div class="jp-Cell jp-MarkdownCell"><div class="jp-RenderedMarkdown">{html}</div></div>'  # noqa: E731
    out = lambda text, mime="text/plain": (f'<div class="jp-Cell jp-CodeCell"><div class="jp-OutputArea-output" '  # noqa: E731
                                           f'data-mime-type="{mime}"><pre>{text}</pre></div></div>')
    code = '<div class="jp-Cell jp-CodeCell"><div class="jp-InputArea">x = 1</div></div>'
    assert report.page_problems(page(md("<h2>A</h2><p>text</p>"), out("fine"))) == []
    assert report.page_problems(page(md("<h2>Before</h2>"), code, md("<h2>After</h2>"), out("1"))) == [
        "an empty section: 'Before'"]
    assert report.page_problems(page(md("<h2>Part</h2><h3>Term</h3><p>what it means</p>"))) == []  # a subsection
    problems = report.page_problems(page(md("<h2>A</h2>"), out("PosixPath('/home/me/runs/x.json')"),
                                         out("/usr/lib/x.py:3: UserWarning: careful", "application/vnd.jupyter.stderr")))
    assert [p.split(":")[0] for p in problems] == ["a local path", "a pathlib repr", "a warning"]
    known = {"verdict", "finding", "m_bin", "seed <s>", "step <t>", "<run> (after)", "<model>, q<i> (sd <s>)",
             "retain shots ×<k>"}
    table = "<table><thead><tr><th>finding</th><th>seed 3</th><th>verdict</th><th>odd</th></tr></thead></table>"
    assert report.glossary_gaps(page(out(table, "text/html"), out("M_bin 0.2, M_zeta 0.1")), known) == ["M_zeta", "odd"]
    # every table of an output, findings table or not, its headers that carry a run, a step, a question or a count
    # named as the glossary names them; a table of the notebook's prose only when it is a findings table
    head = lambda *names: "<table><thead><tr>" + "".join(f"<th>{n}</th>" for n in names) + "</tr></thead></table>"  # noqa: E731
    answers = head("npo_eo (after)", "step 12", "rmu@25, q3 (sd 0.05)", "retain shots ×5", "steps", "0.5")
    assert report.glossary_gaps(page(out(answers, "text/html"), md(head("section", "what")),
                                     md(head("verdict", "why"))), known) == ["steps", "why"]


def test_every_notebook_links_the_glossary_and_every_link_lands_on_a_term():
    import re

    from unlearnkit import report, runner

    headings = re.findall(r"^#{1,6}\s+(.*?)\s*$", report.GLOSSARY.read_text(), re.M)
    anchors = {report.github_slug(h) for h in headings}
    for path in runner.source_notebooks():
        prose = " ".join("".join(c["source"]) for c in json.loads(path.read_text())["cells"]
                         if c["cell_type"] == "markdown")
        links = re.findall(r"\]\(\.\./docs/glossary\.md(?:#([^)]+))?\)", prose)
        assert links, f"{path.name} does not link the glossary"
        assert not [a for a in links if a and a not in anchors], path.name


def test_the_front_page_story_says_what_the_claims_come_to():
    """The README's opening and notebook 10's story: the seeds, the findings' count by verdict, and by name those
    reproduced, contradicted, not testable and, among the inconclusive, those that lean."""
    def row(cid, verdict, lean="none", kind="finding"):
        return {"id": cid, "paper": f"P {cid}", "kind": kind, "verdict": verdict, "lean": lean}

    summary = {"profile": "default", "seeds": [0, 1, 2, 3, 4, 5],
               "claims_counts": {"reproduced": 1, "inconclusive": 2},
               "claims": [row("a.x", "reproduced"), row("b.y", "inconclusive", "against"),
                          row("c.z", "inconclusive"), row("setup.s", "reproduced", kind="setup check")]}
    opening, _, named = report.story(summary)
    assert opening.startswith("Judged over training seeds 0, 1, 2, 3, 4, 5 of the `default` profile")
    assert "the 3 quoted findings come to: 1 reproduced, 2 inconclusive." in opening
    assert named == "**Reproduced**: a.x (P a.x). **Inconclusive, leaning against the paper**: b.y."
