"""The README's results section: ``readme_section`` writes it from the committed summary ``docs/findings.json`` (the
one summary object notebook 10 builds, :func:`unlearnkit.claims.summary.build`, and writes on the default profile from
a set of seeds that includes the committed file's), so that
README and results cannot drift; ``python -m unlearnkit.report readme --check`` fails when they have."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .. import paths, runs

README, SUMMARY, SEED_SPREAD, RESULTS_PAGE = paths.README, paths.SUMMARY, paths.SEED_SPREAD, paths.RESULTS_PAGE
START, END = "<!-- results:start (make readme writes this section from docs/findings.json) -->", "<!-- results:end -->"
#: Notebook 10's figures over seeds, drawn from the summary too: each registered finding's effect per seed (two
#: seeds or more), and how the methods rank on each seed (the seed study).
MARGINS, RANKS = f"{runs.FINDINGS}_margins", f"{runs.FINDINGS}_rank_stability"
#: The meta-evaluation of metrics over seeds beside the published one (#57), and one seed's leak@k curves (notebook 09).
TRUST, LEAK_AT_K = f"{runs.FINDINGS}_metric_trust", f"{runs.METRIC_TRUST}_leak_at_k"
TRUST_ANCHOR = "docs/results.md#which-metric-to-trust-open-unlearnings-meta-evaluation-over-seeds"
README_FIGURES = (f"{runs.CONTROLS}_controls_per_method", f"{runs.FORMATS}_kept",
                  f"{runs.LEAKAGE}_greedy_vs_samples", f"{runs.ALIGNMENT}_binary_bounds")


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def results_body(summary: Mapping[str, Any], root: str = "") -> list[str]:
    """Every table of a claims summary (notebook 10's ``docs/findings.json``): the registered claims with their
    quoted sentences and per-seed outcomes, each finding's effect per seed, the seed study and its figures.
    ``root``: the way from the page to the repository ("../" from docs/)."""
    from ..claims.render import figure, readme_lines

    seeds = summary.get("seeds", [])
    lines = [f"Computed by the notebooks, judged over training seeds by notebook 10 (`docs/findings.json`), written "
             f"here by `make readme`; a test fails if this page and the summary differ. The verdicts judge the "
             f"papers' claims at this profile's scale: a tiny model trained from scratch on a synthetic corpus, on "
             f"2 CPU cores, over training seed{'s' if len(seeds) != 1 else ''} {', '.join(map(str, seeds))}, each "
             f"drawing its own corpus.", "", *readme_lines(summary)]
    named = {figure(row) for row in summary.get("claims") or []}
    shown = [name for name in README_FIGURES if name in named]
    if len(seeds) > 1:
        lines += ["", "Each registered finding's effect on each testable seed, as its margin from no effect (above the "
                  "line: on the paper's side); a finding whose dots straddle the line sits on it.", "",
                  f"![{MARGINS}](figures/{MARGINS}.png)"]
    lines += seed_study_section(summary.get("seed_study"))
    lines += trust_section((summary.get("seed_study") or {}).get("metric_trust"))
    lines += spread_section(read_seed_spread())
    if shown:
        lines += ["", *[f"![{name}](figures/{name}.png)" for name in shown]]
    return [line.replace("](figures/", f"]({root}figures/") for line in lines]  # every figure link, once


def results_page(summary: Mapping[str, Any]) -> str:
    """docs/results.md: the full results of the summary, one page a reader can finish (:func:`results_body`)."""
    return "\n".join([f"# Results on the `{summary['profile']}` profile, in full", "",
                      "The README shows each finding's effect and verdict; this page adds the quoted sentences, every "
                      "seed's outcome and the seed study.", "", *results_body(summary, "../")]) + "\n"


def effect_cell(row: Mapping[str, Any]) -> str:
    """A claim's effect over its testable seeds, as the README shows it: mean [95 % t-interval], n seeds."""
    if row.get("mean") is None:
        return "no testable seed"
    interval = "" if row.get("low") is None else f" [{row['low']:+.3g}, {row['high']:+.3g}]"
    return f"{row['mean']:+.3g}{interval}, {row['n']} seed{'s' if row['n'] != 1 else ''}"


def sets_rule(summary: Mapping[str, Any]) -> list[str]:
    """The two sets' rule (#58), where the summary judges them apart."""
    rule = (summary.get("sets") or {}).get("rule")
    return ["", rule] if rule else []


def story(summary: Mapping[str, Any]) -> list[str]:
    """What the findings say, in sentences rendered from the summary's numbers: the seeds, the counts by verdict, the
    findings reproduced, contradicted and not testable, by name."""
    from ..claims.render import effect_interval

    rows = [r for r in summary.get("claims") or [] if r["kind"] == "finding"]
    seeds = summary.get("seeds", [])
    counts = summary.get("claims_counts") or {}
    told = ", ".join(f"{n} {verdict}" for verdict, n in counts.items())
    sets = summary.get("sets") or {}
    if sets.get("confirmatory"):
        explored = ", ".join(f"{n} {verdict}" for verdict, n in (summary.get("claims_counts_exploratory") or {}).items())
        opening = (f"Judged on the confirmatory training seeds {', '.join(map(str, sets['confirmatory']))} of the "
                   f"`{summary['profile']}` profile, new seeds run after the registry was frozen on the exploratory seeds "
                   f"{', '.join(map(str, sets['exploratory']))} (a tiny model trained from scratch on a synthetic corpus "
                   f"that each seed redraws, on 2 CPU cores), the {len(rows)} quoted findings come to: {told} "
                   f"(on the exploratory seeds: {explored}).")
    else:
        opening = (f"Judged over training seed{'s' if len(seeds) != 1 else ''} {', '.join(map(str, seeds))} of the "
                   f"`{summary['profile']}` profile (a tiny model trained from scratch on a synthetic corpus that each "
                   f"seed redraws, on 2 CPU cores), the {len(rows)} quoted findings come to: {told}.")
    named = []
    for verdict in ("reproduced", "contradicted", "not testable here"):
        ids = [f"{r['id']} ({r['paper']})" for r in rows if r["verdict"] == verdict]
        if ids:
            named.append(f"**{verdict.capitalize()}**: {', '.join(ids)}.")
    for lean in ("against", "with"):
        ids = [r["id"] for r in rows if r["verdict"] == "inconclusive" and r.get("lean") == lean]
        if ids:
            named.append(f"**Inconclusive, leaning {lean} the paper**: {', '.join(ids)}.")
    changed = [f"{r['id']} ({r['sets']['exploratory']['verdict']}, {effect_interval(r['sets']['exploratory'])} on the "
               f"exploratory seeds; {r['sets']['confirmatory']['verdict']}, {effect_interval(r['sets']['confirmatory'])} on the "
               f"confirmatory)" for r in rows if (r.get("sets") or {}).get("confirmatory")
               and r["sets"]["exploratory"]["verdict"] != r["sets"]["confirmatory"]["verdict"]]
    if changed:
        named.append(f"**Changed verdict between the two sets**: {'; '.join(changed)}.")
    undecidable = [r["id"] for r in rows if ((r.get("sets") or {}).get("power") or {}).get("decidable") is False]
    if undecidable and not sets.get("confirmatory"):
        named.append(f"By the exploratory seeds, six confirmatory seeds cannot decide {len(undecidable)} of the "
                     f"{len(rows)} findings (a probability below 80 % of reproducing or contradicting them).")
    return [opening, "", " ".join(named)] if named else [opening]


def readme_section(summary: Mapping[str, Any]) -> str:
    """The README's results section, from a findings summary (notebook 10's ``docs/findings.json``): what the findings
    say and one line per registered claim (paper, finding, effect and interval, verdict, figure); the rest is in
    docs/results.md (:func:`results_page`)."""
    from ..claims.render import (
        CLAIMS_OVERVIEW,
        analogue_text,
        confirmatory_text,
        exploratory_text,
        figure,
        lean_text,
        needs_text,
        power_text,
        set_headers,
    )

    lines = [START, "", "## What the findings say", ""]
    headers = set_headers(summary)
    lines += [*story(summary), "", f"{summary.get('claims_rule', '')}", *sets_rule(summary), "",
              f"![{CLAIMS_OVERVIEW}](figures/{CLAIMS_OVERVIEW}.png)", ""]
    if headers:
        lines += [f"| paper | finding | needs | {headers[0]} | {headers[1]} | lean | six new seeds | figure |",
                  "|---|---|---|---|---|---|---|---|"]
    else:
        lines += ["| paper | finding | effect [95 % interval] | needs | verdict | lean | figure |",
                  "|---|---|---|---|---|---|---|"]
    for row in summary.get("claims") or []:
        kind = ("" if row["kind"] == "finding" else f" ({row['kind']})") + analogue_text(row)
        shown = f"[{figure(row)}](figures/{figure(row)}.png)" if figure(row) else ""
        if headers:
            lines.append(f"| {_cell(row['paper'])} | {_cell(row['id'] + ': ' + row['claim'] + kind)} | "
                         f"{_cell(needs_text(row))} | {_cell(confirmatory_text(row))} | "
                         f"{_cell(exploratory_text(row))} | {_cell(lean_text(row))} | {_cell(power_text(row))} | "
                         f"{shown} |")
        else:
            lines.append(f"| {_cell(row['paper'])} | {_cell(row['id'] + ': ' + row['claim'] + kind)} | "
                         f"{_cell(effect_cell(row))} | {_cell(needs_text(row))} | **{row['verdict']}** | "
                         f"{_cell(lean_text(row))} | {shown} |")
    lines += ["", "Each claim's quoted sentence, every seed's outcome and the seed study: "
              "[docs/results.md](docs/results.md)."]
    lines += freeze_lines(summary.get("freeze"))
    if ((summary.get("seed_study") or {}).get("metric_trust") or {}).get("seeds"):
        lines += ["", f"Which metric to trust (open-unlearning's meta-evaluation over seeds, beside the published one, "
                      f"and leak@k): [docs/results.md]({TRUST_ANCHOR})."]
    return "\n".join(lines + ["", END])


def read_seed_spread(path: Path | None = None) -> dict[str, Any] | None:
    """docs/seed_spread.json (the training seed against the rest), or None where it was not made."""
    path = SEED_SPREAD if path is None else path
    return json.loads(path.read_text()) if path.exists() else None


def spread_section(spread: Mapping[str, Any] | None) -> list[str]:
    """The README's lines on the training seed against the rest (docs/seed_spread.json): its sentence and, per
    variant of seed 0, how far it moves the deciding quantities against the training seeds' range."""
    if not spread:
        return []
    lines = ["", "### The training seed against the rest", "", spread["sentence"] + f" (`{spread['command']}`)", "",
             "| variant of seed 0 | median shift / training-seed range | quantities beyond the range | outcomes "
             "changed |", "|---|---|---|---|"]
    spreads = spread.get("spreads")  # the numbers the sentence was rendered from
    if not spreads:  # a file written before they were stored: its table, counted by the same function
        import pandas as pd

        from ..seedstudy.variants import variant_spreads

        spreads = variant_spreads(pd.DataFrame(spread["table"]), spread["changes"])
    for label in spread["variants"]:
        median, beyond = spreads[label]["median"], spreads[label]["beyond"]
        lines.append(f"| {label} | {median:.2f} | {beyond} of {len(spread['table'])} | "
                     f"{_cell('; '.join(spread['changes'].get(label, [])) or 'none')} |")
    return lines


def _interval(cell: Mapping[str, Any] | None) -> str:
    def missing(x: Any) -> bool:
        return x is None or (isinstance(x, float) and math.isnan(x))

    if not cell or missing(cell.get("mean")):
        return "not measured"
    if missing(cell.get("low")):
        return f"{cell['mean']:.2f} (1 seed)"
    return f"{cell['mean']:.2f} [{cell['low']:.2f}, {cell['high']:.2f}]"


def trust_section(over: Mapping[str, Any] | None) -> list[str]:
    """docs/results.md's meta-evaluation of metrics over seeds (#57, docs/metrics.md §10.1): per metric faithfulness,
    R, Q, robustness and overall in both variants, each the mean with its 95 % t-interval over the seeds that ran
    notebook 09, the rank and the published value beside; nothing when no seed ran notebook 09."""
    from ..studies import trust

    if not over or not over.get("seeds"):
        return []
    theirs = trust.published()
    n = len(over["seeds"])
    lines = ["", "### Which metric to trust? open-unlearning's meta-evaluation over seeds", "",
             f"Faithfulness (the AUC with which a metric tells the P pool from the N pool) and robustness (R: "
             f"relearning, Q: 4-bit quantisation; robustness = HM(R, Q), overall = HM(faithfulness, robustness)) of "
             f"every metric notebook 09 scores, mean and 95 % t-interval over {n} seed{'s' if n != 1 else ''} "
             f"({', '.join(map(str, over['seeds']))}); formulas and sources in docs/metrics.md §10.1. Ranked by "
             f"{over['ranked_by']} on each seed; the rankings' agreement over the metrics ranked on every seed: "
             f"Kendall's W {_num(over.get('kendall_w'))} (Friedman p {_num(over.get('friedman_p'))}). The published "
             "column is the public re-implementation's table (one seed, Llama-3.2-1B on TOFU, its own P/N pool and "
             "unlearned models, symmetric variant): it can show whether the metrics rank alike at two scales, not "
             "whether our levels are right, and one seed carries no interval.", "",
             "| metric | faithfulness | R one-dir. | Q one-dir. | robustness one-dir. | overall one-dir. | R symm. | "
             "Q symm. | robustness symm. | overall symm. | rank (mean, best-worst) | published faithfulness, overall "
             "symm. |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in over["metrics"]:
        rank = row.get("rank")
        rank_text = f"{rank['mean']:.1f} ({rank['best']:g}-{rank['worst']:g})" if rank else "not ranked"
        pub = theirs["symmetric"].get(row["metric"])
        pub_text = f"{pub['faithfulness']:.2f}, {pub['overall']:.2f}" if pub else "not in the table"
        cells = [_interval(row.get(q)) for q in trust.OVER_SEEDS]
        lines.append(f"| {row['metric']} | {' | '.join(cells)} | {rank_text} | {pub_text} |")
    return lines + ["", f"![{TRUST}](figures/{TRUST}.png)", "",
                    "leak@k (the chance that at least one of k sampled answers leaks the key fact) of every model "
                    "notebook 05 sampled, seed 0, the retain model as the guessing floor:", "",
                    f"![{LEAK_AT_K}](figures/{LEAK_AT_K}.png)"]


def freeze_lines(status: Mapping[str, Any] | None) -> list[str]:
    """One line on the frozen registry (docs/claims.frozen.json): on which seeds it was frozen and every claim whose
    entry or exploratory effect moved since; nothing before the freeze. The revision stays in the file: the README's
    prose names no commit (a hash there goes stale and reads as a link)."""
    if not status or not status.get("frozen"):
        return []
    moved = status.get("moved") or {}
    text = ("; ".join(f"{cid} ({why})" for cid, why in moved.items()) if moved else
            "none: every registry entry and every exploratory effect is as frozen")
    return ["", f"The registry was frozen on seeds {', '.join(map(str, status['seeds']))} (docs/claims.frozen.json, "
                f"which records the revision). Moved since: {_cell(text)}."]


def _num(x: Any) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.2g}"


def seed_study_section(study: Mapping[str, Any] | None) -> list[str]:
    """The README's lines on the seed study (docs/metrics.md §8.2): the workbook's own questions, with its answers
    computed from the summary; nothing when the summary has none."""
    from .. import seedstudy as seed_study

    if not study or "kendall" not in study:
        return []
    lines = ["", "### Do the methods' rankings survive a reseed? (the workbook's own questions)", "",
             "Registered in docs/metrics.md §8.2 before seeds 2-5 ran. " + " ".join(seed_study.sentences(study)[:1]),
             "", "| pair | metric | first better on | sign test p (two-sided) | mean difference [95 % interval] | "
             "outcome |", "|---|---|---|---|---|---|"]
    for r in study.get("pairs", []):
        if not r.get("seeds"):
            lines.append(f"| {r['pair']} | {r['metric']} | not run | | | |")
            continue
        lines.append(f"| {r['pair']} | {r['metric']} ({r['better']} is better) | {r['wins']} of {r['seeds']} seeds "
                     f"(ties {r['ties']}) | {r['p (two-sided sign test)']:.3f} | {_cell(r['difference'])} "
                     f"{r['mean difference']:+.3g} [{r['low']:+.3g}, {r['high']:+.3g}] | **{r['outcome']}** |")
    if study.get("flips"):
        lines += ["", f"How often a comparison of two methods flips with the training seed (over seeds "
                      f"{', '.join(map(str, study.get('seeds', [])))}; ties left out): of every two methods, the share "
                      "ordered differently on some seed, and of every two seeds, the share of method pairs they "
                      "order oppositely.", "", "| metric | method pairs | flip on some seed | two seeds disagree |",
                  "|---|---|---|---|"]
        lines += [f"| {r['metric']} | {r['method pairs']} | {r['pairs that flip']} "
                  f"({_num(r['share of pairs that flip'])}) | "
                  f"{_num(r['share of seed pairs ordering a method pair oppositely'])} |" for r in study["flips"]]
    return lines + ["", f"![{RANKS}](figures/{RANKS}.png)"]


def _split(readme: str) -> tuple[str, str, str]:
    if START not in readme or END not in readme:
        raise ValueError(f"README.md lacks the results markers {START!r} ... {END!r}")
    head, rest = readme.split(START, 1)
    body, tail = rest.split(END, 1)
    return head, START + body + END, tail


def write_readme(summary_path: Path = SUMMARY, readme: Path = README, check: bool = False,
                 figures: Path | None = None) -> bool:
    """Rewrite README's results section and docs/results.md (beside another ``readme``: its results.md) from the
    summary and draw its overview figures (``figures/`` by default) from the same summary; with ``check``, only say
    whether both are up to date. Returns True when they are (or now are)."""
    summary = json.loads(summary_path.read_text())
    head, current, tail = _split(readme.read_text())
    wanted = readme_section(summary)
    page = RESULTS_PAGE if readme == README else readme.with_name(RESULTS_PAGE.name)  # docs/results.md, beside
    full = results_page(summary)
    if check:
        return current == wanted and page.exists() and page.read_text() == full
    readme.write_text(head + wanted + tail)
    runs.atomic_write_text(page, full)
    if summary.get("claims") and paths.REGISTERED_V1.exists() and summary_path == SUMMARY:
        from ..claims.render import v1_to_v2

        runs.atomic_write_text(paths.V1_TO_V2, v1_to_v2(json.loads(paths.REGISTERED_V1.read_text()), summary))
    from .. import plots

    folder = paths.FIGURES if figures is None else figures
    folder.mkdir(parents=True, exist_ok=True)
    from ..claims.render import CLAIMS_OVERVIEW, CLAIMS_OVERVIEW_TITLE, overview_table

    plots.render_to(folder / f"{CLAIMS_OVERVIEW}.png", plots.findings_overview, overview_table(summary),
                    seeds=summary.get("seeds"), title=CLAIMS_OVERVIEW_TITLE)
    for name, plot, args in seed_figures(summary):
        plots.render_to(folder / f"{name}.png", plot, *args)
    return True


def seed_figures(summary: Mapping[str, Any]) -> list[tuple[str, Any, tuple]]:
    """The figures over seeds a summary draws (name, plotting function, arguments): each registered finding's effect
    per seed when it holds two seeds or more, the rank shares when it holds a seed study. Notebook 10 and
    ``make readme`` draw them from the same data."""
    from ..claims.render import margins
    from ..plots import seeds as seed_plots

    out = []
    if len(summary.get("seeds", [])) > 1:
        out.append((MARGINS, seed_plots.margins_per_seed, (margins(summary.get("claims") or []),)))
    study = summary.get("seed_study") or {}
    if "shares" in study:
        taus = {r["metric"]: r["mean tau"] for r in study["kendall"]}
        out.append((RANKS, seed_plots.rank_shares, (study["shares"], taus, study["tau_stable"], len(study["seeds"]))))
    over = study.get("metric_trust") or {}
    if over.get("seeds"):
        from ..plots import trust as trust_plots
        from ..studies import trust

        out.append((TRUST, trust_plots.plot_trust_vs_published, (over["metrics"], trust.published(),
                                                                 len(over["seeds"]))))
    return out
