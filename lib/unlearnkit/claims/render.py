"""The registered claims judged over seeds as text and tables: the README's table, notebook 10's tables, tiles,
margins and key figures, and the v1 -> v2 verdict table under docs/, each read back from the one summary object
(:func:`unlearnkit.claims.summary.build`), so that no page can say more than the summary holds."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .. import runs
from .judge import CONSISTENT, INCONCLUSIVE, INCONSISTENT, NOT_TESTABLE
from .summary import RULE, seeds_span

#: The registered claims at a glance, above their table (``make readme`` draws it from the summary).
CLAIMS_OVERVIEW = f"{runs.FINDINGS}_claims"
#: One letter per seed's outcome, in the README's per-seed strings.
LETTERS = {CONSISTENT: "c", INCONSISTENT: "i", INCONCLUSIVE: "~", NOT_TESTABLE: "-"}


# --------------------------------------------------------------------------- text


def _cell(text: Any) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _num(x: Any) -> str:
    return "n/a" if x is None else f"{x:+.3g}"


def effect_text(row: Mapping[str, Any]) -> str:
    """The effect over seeds: mean [95 % t-interval] (n seeds), the sign test, the pooled support."""
    if row.get("mean") is None:
        return "no testable seed"
    text = f"{_num(row['mean'])}"
    if row.get("low") is not None:
        text += f" [{_num(row['low'])}, {_num(row['high'])}]"
    text += f" over {row['n']} seed{'s' if row['n'] != 1 else ''}; needs {row['effect']['side']} " \
            f"{row['effect']['no_effect']:g} by {row['minimal_effect']['value']:g}"
    if row.get("sign_n"):
        text += f"; sign test {row['sign_k']} of {row['sign_n']}, p = {row['sign_p']:.2g}"
    support = row.get("support") or (0, 0)
    if support[1]:
        text += f"; units on the paper's side {support[0]} of {support[1]}"
    return text


def needs_text(row: Mapping[str, Any]) -> str:
    """What a seed's effect needs to be consistent: the side of no effect and the minimal effect ("above 0 by at
    least 0.05"; "above 0.9" where the minimal effect is 0)."""
    effect, minimal = row["effect"], row["minimal_effect"]["value"]
    text = f"{effect['side']} {effect['no_effect']:g}"
    return text + (f" by at least {minimal:g}" if minimal else "")


def lean_text(row: Mapping[str, Any]) -> str:
    """The claim's lean in words (docs/metrics.md §8.3), beside its verdict; a summary written before the lean was
    judged says so."""
    return row.get("lean_text") or "not judged in this summary"


def seeds_text(row: Mapping[str, Any]) -> str:
    """Each seed's outcome and effect: "0 c +0.31; 1 ~ +0.02; 3 - (no model in the regime)"."""
    parts = []
    for r in row["per_seed"]:
        effect = "" if r.get("effect") is None else f" {r['effect']:+.3g}"
        why = f" ({r['reason']})" if r["outcome"] == NOT_TESTABLE and r.get("reason") else ""
        parts.append(f"{r['seed']} {LETTERS.get(r['outcome'], '?')}{effect}{why}")
    return "; ".join(parts)


#: What a row says when its quantity is the workbook's analogue of the paper's (the README's opening sentence names it).
ANALOGUE = "workbook analogue"


def analogue_text(row: Mapping[str, Any]) -> str:
    """" (workbook analogue: <why>)" for a claim measured on the workbook's analogue of the paper's quantity, else ""."""
    return f" ({ANALOGUE}: {row['analogue']})" if row.get("analogue") else ""


def amended_text(row: Mapping[str, Any]) -> str:
    """" (amended <date>: <why>)" for a claim whose quantity changed after some seeds were judged; else ""."""
    return "".join(f" [amended {a['date']}: {a['why']}; {a['known']}]"
                   for a in row.get("amended") or ())


def set_headers(summary: Mapping[str, Any]) -> tuple[str, str] | None:
    """The two verdict columns' headers on a summary that judges the exploratory and confirmatory seeds apart
    (#58), e.g. ("confirmatory (seeds 6-11)", "exploratory (seeds 0-5)"); None where it does not."""
    sets = summary.get("sets")
    if not sets:
        return None
    confirmatory = (f"confirmatory (seeds {seeds_span(sets['confirmatory'])})" if sets["confirmatory"]
                    else "confirmatory")
    return confirmatory, f"exploratory (seeds {seeds_span(sets['exploratory'])})"


def effect_interval(brief: Mapping[str, Any]) -> str:
    """A verdict's effect as the tables show it: "+0.12 [+0.03, +0.21]" (mean [95 % t-interval]), or "no testable
    seed"."""
    if brief.get("mean") is None:
        return "no testable seed"
    interval = "" if brief.get("low") is None else f" [{_num(brief['low'])}, {_num(brief['high'])}]"
    return f"{_num(brief['mean'])}{interval}"


def _set_text(brief: Mapping[str, Any]) -> str:
    """One set's verdict, effect [interval] over its seeds, and lean."""
    effect = effect_interval(brief)
    if brief.get("mean") is not None:
        effect += f" over {brief['n']} seed{'s' if brief['n'] != 1 else ''}"
    return f"**{brief['verdict']}**, {effect}, leans {brief['lean']}"


def confirmatory_text(row: Mapping[str, Any]) -> str:
    """The confirmatory verdict with its effect [interval] and lean; "not run yet" before any confirmatory seed; the
    reason where the claim moved since the freeze (judged on the exploratory set only)."""
    sets = row.get("sets") or {}
    if sets.get("moved"):
        return f"judged on the exploratory seeds only: {sets['moved']}"
    return _set_text(sets["confirmatory"]) if sets.get("confirmatory") else "not run yet"


def exploratory_text(row: Mapping[str, Any]) -> str:
    """The exploratory verdict (seeds frozen with the registry) with its effect [interval] and lean."""
    e = (row.get("sets") or {}).get("exploratory")
    return _set_text(e) if e else ""


def power_text(row: Mapping[str, Any]) -> str:
    """What six new seeds can decide, from the exploratory seeds (:func:`unlearnkit.claims.judge.power`)."""
    return ((row.get("sets") or {}).get("power") or {}).get("words", "")


def pooled_text(row: Mapping[str, Any]) -> str:
    """The pooled effect over every seed, for reference only ("" before any confirmatory seed)."""
    p = (row.get("sets") or {}).get("pooled")
    if not p or p.get("mean") is None:
        return ""
    return f"pooled over {len(p['seeds'])} seeds, for reference only: {effect_interval(p)}"


def readme_lines(summary: Mapping[str, Any]) -> list[str]:
    """The README's table of the registered claims, and the list of those not testable here."""
    rows = summary.get("claims") or []
    if not rows:
        return []
    counted = ", ".join(f"{n} {verdict}" for verdict, n in (summary.get("claims_counts") or {}).items())
    lines = ["", "### The papers' claims, judged over seeds", "",
             f"Each row is a sentence of a paper, quoted (docs/claims.yaml), tested on the paper's own quantity (or, "
             f"where the row says so, the {ANALOGUE} of it) in the paper's direction. {RULE} Findings: {counted}. Per seed: c consistent, i inconsistent, "
             "~ inconclusive, - not testable.", "",
             f"![{CLAIMS_OVERVIEW}](figures/{CLAIMS_OVERVIEW}.png)", "",
             "| paper | claim, and the sentence it tests | effect over the seeds | needs | per seed | verdict | lean |"
             + (" six new seeds |" if summary.get("sets") else ""),
             "|---|---|---|---|---|---|---|" + ("---|" if summary.get("sets") else "")]
    for row in rows:
        kind = ("" if row["kind"] == "finding" else f" ({row['kind']})") + analogue_text(row)
        quote = f" — “{row['quote']}” ({row['section']})" if row.get("quote") else ""
        verdict = f"**{row['verdict']}**"
        if summary.get("sets", {}).get("confirmatory"):
            verdict += f" (confirmatory); exploratory: {exploratory_text(row)}"
            if pooled_text(row):
                verdict += f"; {pooled_text(row)}"
        lines.append(f"| {_cell(row['paper'])}, arXiv {row['arxiv']} | "
                     f"{_cell(row['claim'] + kind + quote + amended_text(row))} | "
                     f"{_cell(effect_text(row))} | {_cell(needs_text(row))} | {_cell(seeds_text(row))} | "
                     f"{_cell(verdict)} | {_cell(lean_text(row))} |"
                     + (f" {_cell(power_text(row))} |" if summary.get("sets") else ""))
    untested = summary.get("untested") or []
    if untested:
        lines += ["", "Registered, not tested here:", ""]
        lines += [f"- {r['paper']}: {r['claim']} ({r['status']})" for r in untested]
    return lines


def _changes(then: Mapping[str, Any], now: Mapping[str, Any]) -> list[str]:
    """Why a claim's verdict or reading moved between two summaries: its registration (no effect, minimal effect,
    range, quantity), each amendment made since, and the seeds whose outcome changed."""
    why = []
    for label, get in (("no effect", lambda r: r["effect"]["no_effect"]), ("minimal effect",
                       lambda r: r["minimal_effect"]["value"]), ("side", lambda r: r["effect"]["side"]),
                       ("quantity", lambda r: r["effect"]["quantity"])):
        if get(then) != get(now):
            why.append(f"{label} {get(then)} -> {get(now)}" if label != "quantity" else "quantity re-registered")
    known = {a["date"] + a["why"] for a in then.get("amended") or ()}
    why += [f"amended {a['date']}: {a['why']}" for a in now.get("amended") or () if a["date"] + a["why"] not in known]
    before = {r["seed"]: r["outcome"] for r in then["per_seed"]}
    moved = [f"seed {r['seed']} {before.get(r['seed'], 'absent')} -> {r['outcome']}" for r in now["per_seed"]
             if before.get(r["seed"]) != r["outcome"]]
    if moved:
        why.append("per seed: " + ", ".join(moved))
    return why


def v1_to_v2(v1: Mapping[str, Any], summary: Mapping[str, Any]) -> str:
    """docs/verdicts-v1-to-v2.md: every registered claim's verdict in the archived first registration
    (docs/findings-registered-v1.json) beside its verdict and lean now, and why it changed."""
    then = {r["id"]: r for r in v1.get("claims") or []}
    lines = ["# Registered claims: first registration -> now", "",
             "Written by `make readme` (and `runner aggregate`) from docs/findings-registered-v1.json (docs/findings.json "
             "as it stood before issue #56, archived once) and docs/findings.json. The lean (docs/metrics.md §8.3) is "
             "new: the first registration did not judge it. Now is the verdict on the exploratory seeds, those the first "
             "registration was judged on; the confirmatory seeds' verdicts are the README's.", "",
             "| claim | verdict then | verdict now | lean now | why it changed |", "|---|---|---|---|---|"]
    for row in summary.get("claims") or []:
        explored = (row.get("sets") or {}).get("exploratory")
        if explored:  # like with like: the seeds both registrations were judged on
            seeds = set(explored["seeds"])
            row = {**row, "verdict": explored["verdict"], "lean": explored["lean"],
                   "per_seed": [r for r in row["per_seed"] if r["seed"] in seeds]}
        old = then.get(row["id"])
        if old is None:
            lines.append(f"| {row['id']} | (not registered) | **{row['verdict']}** | {row.get('lean', '')} | added |")
            continue
        why = _changes(old, row)
        moved = "" if old["verdict"] == row["verdict"] else "verdict moved; "
        lines.append(f"| {row['id']} | {old['verdict']} | **{row['verdict']}** | {row.get('lean', '')} | "
                     f"{_cell(moved + ('; '.join(why) or 'unchanged'))} |")
    gone = [cid for cid in then if cid not in {r["id"] for r in summary.get("claims") or []}]
    if gone:
        lines += ["", "Judged then, not now: " + ", ".join(gone) + "."]
    return "\n".join(lines) + "\n"


def frame(rows: Sequence[Mapping[str, Any]]):
    """The claims as a table for notebook 10 and its report page (the README's columns)."""
    import pandas as pd

    return pd.DataFrame([{"paper": f"{r['paper']} (arXiv {r['arxiv']})",
                          "claim": r["claim"] + ("" if r["kind"] == "finding" else f" ({r['kind']})")
                          + amended_text(r),
                          "quote": f"“{r['quote']}” ({r['section']})" if r.get("quote") else "",
                          "effect over the seeds": effect_text(r), "needs": needs_text(r),
                          "per seed": seeds_text(r), "verdict": r["verdict"], "lean": lean_text(r),
                          "figure": figure(r) or "",
                          **({"exploratory": exploratory_text(r).replace("**", ""), "six new seeds": power_text(r)}
                             if r.get("sets") else {})} for r in rows])


def styled(table):
    """The claims table with its verdicts coloured, text left-aligned and wrapped."""
    colours = {"reproduced": "background-color: #d9f0d3", "contradicted": "background-color: #f8d0cc",
               "inconclusive": "background-color: #fee8b0", "not testable here": "color: #777"}
    return (table.style.hide(axis="index").format(escape="html").map(lambda v: colours.get(v, ""), subset=["verdict"])
            .set_properties(**{"text-align": "left", "white-space": "normal", "vertical-align": "top"}))


def unit_frame(rows: Sequence[Mapping[str, Any]]):
    """Per claim about several units (methods, formats, runs, models): each unit's outcome and effect on each seed,
    the table behind the pooled support (never a silent "every")."""
    import pandas as pd

    table = []
    for r in rows:
        by_unit: dict[str, dict[str, str]] = {}
        for s in r["per_seed"]:
            for u in s.get("units", []):
                effect = "" if u.get("effect") is None else f" {u['effect']:+.3g}"
                why = f" ({u['reason']})" if u["outcome"] == NOT_TESTABLE and u.get("reason") else ""
                by_unit.setdefault(u["name"], {})[f"seed {s['seed']}"] = f"{LETTERS.get(u['outcome'], '?')}{effect}{why}"
        for name, cells in by_unit.items():
            table.append({"claim": r["id"], "unit": name, **cells})
    return pd.DataFrame(table)


#: Below five testable seeds no claim can be decided: its tile says what the seeds agree on.
AGREE = {CONSISTENT: "consistent on every testable seed", INCONSISTENT: "inconsistent on every testable seed"}
CLAIMS_OVERVIEW_TITLE = ("The papers' quoted claims, by their verdict over the seeds (below five testable seeds, what "
                         "the seeds agree on){over} (tile: the claim, the notebook that tests it)")


def tile(row: Mapping[str, Any]) -> str:
    """A claim's tile in the overview: its verdict where five testable seeds or more could decide it, else what its
    testable seeds agree on."""
    from .judge import SEEDS_FOR_A_VERDICT

    counted = [r["outcome"] for r in row["per_seed"] if r["outcome"] != NOT_TESTABLE]
    if not counted:
        return "not testable here"
    if len(counted) >= SEEDS_FOR_A_VERDICT:
        return row["verdict"]
    return AGREE.get(counted[0], "inconclusive or mixed") if len(set(counted)) == 1 else "inconclusive or mixed"


#: A claim id's prefix that names its paper (the row already says it); any other prefix names the method it tests.
PAPER_PREFIXES = ("setup", "tofu", "ou", "wang", "joshi", "scholten", "hu", "zhang", "deeb", "doshi", "workbook")


def short_name(claim_id: str) -> str:
    """A claim's tile label: its id without the paper (the row names it), the method kept where it is one."""
    prefix, _, rest = claim_id.partition(".")
    words = [] if prefix in PAPER_PREFIXES else [prefix]
    if rest != "claim":
        words.append(rest)
    return " ".join(words).replace("_", " ")


def overview_table(summary: Mapping[str, Any]):
    """The claims of a summary as the overview figure reads them (paper, short name, notebook, verdict, tile)."""
    import pandas as pd

    return pd.DataFrame([{"paper": r["paper"], "short": short_name(r["id"]),
                          "notebook": r["notebook"], "verdict": r["verdict"], "tile": tile(r)}
                         for r in summary.get("claims") or []])


#: The figure that shows each registered claim, as its notebook draws it (the README's figure column, notebook 10's
#: key figures); a claim not named here has none of its own.
FIGURES = {
    "setup.target_in_regime": f"{runs.FINETUNE}_metrics",
    "tofu.baselines_fail": f"{runs.UNLEARNING}_ga_trajectory",
    "npo.better_tradeoff_than_ga": f"{runs.UNLEARNING}_npo_trajectory",
    "simnpo.beats_npo": f"{runs.UNLEARNING}_simnpo_trajectory",
    "rmu.keeps_utility": f"{runs.UNLEARNING}_rmu_trajectory",
    "undial.claim": f"{runs.UNLEARNING}_undial_trajectory",
    "altpo.claim": f"{runs.UNLEARNING}_altpo_trajectory",
    "ceu.claim": f"{runs.UNLEARNING}_ceu_trajectory",
    "dpo.idk_tofu": f"{runs.UNLEARNING}_dpo_trajectory",
    "npo_eo.keeps_utility": f"{runs.UNLEARNING}_npo_eo_trajectory",
    "ou.mia_beyond_rouge": f"{runs.UNLEARNING}_ou_summary",
    "ou.privleak_retain_near_zero": f"{runs.UNLEARNING}_ou_summary",
    "wang.controls_regulate": f"{runs.CONTROLS}_controls_per_method",
    "wang.ga_short_at_large_splits": f"{runs.CONTROLS}_splits",
    "joshi.other_formats": f"{runs.FORMATS}_kept",
    "scholten.greedy_understates": f"{runs.LEAKAGE}_greedy_vs_samples",
    "scholten.table1_spread": f"{runs.ENTROPY}_table1",
    "scholten.eo_removes_spread": f"{runs.ENTROPY}_regime_eo",
    "scholten.adaptive_temperature": f"{runs.ENTROPY}_adaptive",
    "scholten.lambda_r_diversity": f"{runs.ENTROPY}_diversity",
    "scholten.sampling_toxicity_exceeds_greedy": f"{runs.ALIGNMENT}_binary_bounds",
    "hu.relearning_jogs_memory": f"{runs.ROBUSTNESS}_relearning",
    "zhang.quantisation_restores": f"{runs.ROBUSTNESS}_quantisation",
    "workbook.quantisation_across_buckets": f"{runs.ROBUSTNESS}_quantisation",
    "deeb.rtt_recovers": f"{runs.ROBUSTNESS}_rtt",
    "doshi.shots_and_rephrasing": f"{runs.ROBUSTNESS}_probes",
}


def figure(row: Mapping[str, Any]) -> str | None:
    """The figure that shows a claim (:data:`FIGURES`), or None."""
    return FIGURES.get(row["id"])


def key_figures(rows: Sequence[Mapping[str, Any]]) -> dict[str, list[str]]:
    """Each figure that shows a judged claim, in the claims' order, with the claims it shows."""
    out: dict[str, list[str]] = {}
    for row in rows:
        if figure(row):
            out.setdefault(figure(row), []).append(row["id"])
    return out


def _shift(x: Any, sign: float, null: float) -> float | None:
    return None if x is None else sign * (x - null)


def margins(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Each finding's effect on each testable seed as its margin from no effect, signed so that the paper's side
    is up (``effect - no effect`` for a claim that needs above, its negative for below), each seed's outcome, and
    the mean margin with its 95 % t-interval over the seeds (the summary's, shifted the same way): what
    :func:`unlearnkit.plots.seeds.margins_per_seed` draws. Where the confirmatory seeds are judged apart from the
    exploratory ones (#58), ``sets`` holds each set's seeds, mean and interval (None where one seed gives none).
    Findings with fewer than two testable seeds are left out."""
    out = []
    for r in rows:
        tested = [s for s in r["per_seed"] if s["outcome"] != NOT_TESTABLE and s.get("effect") is not None]
        if r["kind"] != "finding" or len(tested) < 2:
            continue
        sign, null = (1.0 if r["effect"]["side"] == "above" else -1.0), r["effect"]["no_effect"]
        row = {"key": r["id"], "notebook": r["notebook"], "short": short_name(r["id"]), "verdict": r["verdict"],
               "quantity": f"effect - {null:g}" if sign > 0 else f"{null:g} - effect", "unit": "paper's side up",
               "seeds": [s["seed"] for s in tested], "margins": [_shift(s["effect"], sign, null) for s in tested],
               "outcomes": [s["outcome"] for s in tested], **_shifted(r, sign, null)}
        sets = r.get("sets") or {}
        if sets.get("confirmatory"):  # both sets judged (#58): each set's mean and interval, drawn apart
            row["sets"] = [{"name": name, "seeds": list(sets[name]["seeds"]), **_shifted(sets[name], sign, null)}
                           for name in ("exploratory", "confirmatory")]
        out.append(row)
    return out


def _shifted(brief: Mapping[str, Any], sign: float, null: float) -> dict[str, float | None]:
    """A verdict's mean and 95 % t-interval as margins (:func:`margins`' shift), the interval's ends in order and
    holding the mean; an interval not defined (one seed) stays None."""
    mean, low, high = (_shift(brief.get(k), sign, null) for k in ("mean", "low", "high"))
    if mean is None or low is None or high is None:
        return {"mean": mean, "low": None, "high": None}
    return {"mean": mean, "low": min(low, high, mean), "high": max(low, high, mean)}


# --------------------------------------------------------------------------- one seed, one notebook


def seed_frame(profile: str, seed: int, notebook: str):
    """The registered claims a notebook tests, on one seed, in the README's words: the claim, this seed's outcome,
    its effect, what the claim needs (side, no effect, minimal effect) and why a seed is not testable. Each
    notebook's last cell shows it; notebook 10 judges the same claims over every seed. ``notebook`` is the
    notebook's name (``02_unlearning`` for each of its runs)."""
    import pandas as pd

    from ..results import SeedResults
    from . import extractors

    base = runs.UNLEARNING if notebook.startswith(runs.UNLEARNING) else notebook
    stored = SeedResults(profile, seed)
    rows = []
    for claim in extractors.judged_claims():
        if claim.notebook != base:
            continue
        result = extractors.effect_on_seed(claim, stored)
        row = {"claim": claim.claim + ("" if claim.kind == "finding" else f" ({claim.kind})"), "id": claim.id,
               "outcome": result.outcome, "effect": _num(result.effect),
               "needs": needs_text({"effect": {"side": claim.side, "no_effect": claim.null},
                                    "minimal_effect": {"value": claim.minimal_effect}}),
               "why": f"not testable: {result.reason}" if result.outcome == NOT_TESTABLE else ""}
        won, tested = result.support
        if tested:
            row["effect"] += f" ({won} of {tested} units on the paper's side)"
        rows.append(row)
    return pd.DataFrame(rows, columns=["claim", "id", "outcome", "effect", "needs", "why"])
