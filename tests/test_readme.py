"""The front door: a README a newcomer can finish (the two commands on its first screen, at most 150 lines), every
link of the README, docs/ and the notebooks resolving (from the repository, and from `make lab`, which roots
JupyterLab there), and every number the README shows recomputed from docs/findings.json by a second path: the
per-seed effects and outcomes, through scipy, never the renderer."""

from __future__ import annotations

import json
import math
import re
import statistics
from pathlib import Path

import pytest
from scipy import stats
from unlearnkit import paths, report, runner
from unlearnkit.claims.freeze import FROZEN

README = paths.README
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")


def test_the_readme_is_short_and_opens_with_the_two_commands():
    lines = README.read_text().splitlines()
    assert len(lines) <= 150, f"README.md has {len(lines)} lines"
    first_screen = "\n".join(lines[:30])
    assert "make all" in first_screen and "make test" in first_screen
    assert not re.search(r"\b(?:commit|at) [0-9a-f]{7,}\b", README.read_text()), "a commit hash in the README's prose"


def _documents() -> list[tuple[Path, str]]:
    docs = [(README, README.read_text()), *((p, p.read_text()) for p in sorted((paths.ROOT / "docs").glob("*.md")))]
    for nb in runner.all_source_notebooks():
        cells = json.loads(nb.read_text())["cells"]
        docs.append((nb, "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")))
    return docs


def _anchors(path: Path) -> set[str]:
    text = path.read_text()
    if path.suffix == ".ipynb":
        text = "\n".join("".join(c["source"]) for c in json.loads(text)["cells"] if c["cell_type"] == "markdown")
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    return {report.github_slug(h) for h in re.findall(r"^#{1,6}\s+(.*?)\s*$", text, re.M)}


def broken_links(path: Path, text: str, root: Path) -> list[str]:
    """The relative links of one document that do not land on a file under ``root`` (and, with an anchor into a
    Markdown file or notebook, on one of its headings)."""
    broken = []
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    for match in LINK.finditer(text):
        target = match.group(1) or match.group(2)
        if re.match(r"[a-z]+:", target):
            continue
        file, _, anchor = target.partition("#")
        where = (path.parent / file).resolve() if file else path
        if not where.exists() or not where.is_relative_to(root):
            broken.append(f"{path.relative_to(root)}: {target}")
        elif anchor and where.suffix in (".md", ".ipynb") and anchor not in _anchors(where):
            broken.append(f"{path.relative_to(root)}: {target} (no such heading)")
    return broken


def test_every_link_of_the_readme_the_docs_and_the_notebooks_resolves():
    broken = [b for path, text in _documents() for b in broken_links(path, text, paths.ROOT)]
    assert broken == []


def test_make_lab_roots_jupyterlab_where_the_notebooks_links_land():
    """From `make lab` a notebook's link is served under JupyterLab's root: the repository, opened at notebooks/."""
    recipe = (paths.ROOT / "Makefile").read_text().split("\nlab:", 1)[1].split("\n\n", 1)[0]
    assert '--ServerApp.root_dir="$(CURDIR)"' in recipe and "/lab/tree/notebooks" in recipe
    linked = [text for path, text in _documents() if path.suffix == ".ipynb"]
    assert any("../docs/glossary.md" in text for text in linked)  # resolves under the root: the test above


def test_a_broken_link_is_found(tmp_path):
    page = tmp_path / "docs" / "page.md"
    page.parent.mkdir()
    (tmp_path / "docs" / "there.md").write_text("# A heading\n")
    text = "[ok](there.md#a-heading) [gone](missing.md) [bad](there.md#nope) [out](../../x.md) [web](https://x.org)"
    page.write_text(text)
    found = broken_links(page, text, tmp_path)
    assert [b.split(": ", 1)[1] for b in found] == ["missing.md", "there.md#nope (no such heading)", "../../x.md"]


# --------------------------------------------------------------------------- the README's numbers, a second path


def _recomputed(row: dict) -> dict:
    """A claim's verdict and effect from its per-seed records alone: the effect's mean and 95 % t-interval over the
    testable seeds, and the verdict by the one-sided 95 % Clopper-Pearson bound of the consistent (inconsistent)
    share against 1/2."""
    tested = [r for r in row["per_seed"] if r["outcome"] != "not testable"]
    n = len(tested)
    if n == 0:
        return {"verdict": "not testable here", "effect": None}
    effects = [r["effect"] for r in tested]

    def lower(k: int) -> float:
        return 0.0 if k == 0 else float(stats.beta.ppf(0.05, k, n - k + 1))

    consistent = sum(r["outcome"] == "consistent" for r in tested)
    inconsistent = sum(r["outcome"] == "inconsistent" for r in tested)
    verdict = ("reproduced" if lower(consistent) > 0.5 else "contradicted" if lower(inconsistent) > 0.5
               else "inconclusive")
    mean = statistics.fmean(effects)
    interval = None
    if n > 1:
        half = stats.t.ppf(0.975, n - 1) * statistics.stdev(effects) / math.sqrt(n)
        interval = (mean - half, mean + half)
    return {"verdict": verdict, "effect": (mean, interval, n)}


def _lean(row: dict, want: dict) -> str:
    """The lean by the rule of docs/metrics.md §8.3, recomputed: the t-interval wholly on one side of no effect, or
    the exact sign test at p < 0.05 (scipy's binomtest, not the judge's)."""
    if want["effect"] is None:
        return "none"
    sign = 1 if row["effect"]["side"] == "above" else -1
    gaps = [sign * (r["effect"] - row["effect"]["no_effect"]) for r in row["per_seed"]
            if r["outcome"] != "not testable" and r.get("effect") is not None]
    k, n = sum(g > 0 for g in gaps), sum(g != 0 for g in gaps)
    p = stats.binomtest(k, n, 0.5).pvalue if n else 1.0
    interval = want["effect"][1]
    bounds = sorted(sign * (b - row["effect"]["no_effect"]) for b in interval) if interval else None
    toward = (bounds is not None and bounds[0] > 0) or (p < 0.05 and 2 * k > n)
    away = (bounds is not None and bounds[1] < 0) or (p < 0.05 and 2 * k < n)
    return "with" if toward and not away else "against" if away and not toward else "none"


def _close(shown: str, value: float) -> bool:
    """A number printed with three significant digits is the value, rounded."""
    return math.isclose(float(shown), value, rel_tol=6e-3, abs_tol=1e-9)


SET_CELL = re.compile(r"\*\*([a-z ]+)\*\*, (no testable seed|([-+][\d.e+-]+)(?: \[([-+][\d.e+-]+), ([-+][\d.e+-]+)\])? "
                      r"over (\d+) seeds?), leans (with|against|none)")


def _set_cell(text: str) -> dict | None:
    """A verdict column's cell ("**reproduced**, +0.998 [+0.995, +1] over 6 seeds, leans with"), parsed; None for
    "not run yet"."""
    if text == "not run yet":
        return None
    m = SET_CELL.fullmatch(text)
    assert m, text
    effect = None if m.group(2) == "no testable seed" else (m.group(3), m.group(4), m.group(5), int(m.group(6)))
    return {"verdict": m.group(1), "effect": effect, "lean": m.group(7)}


def _readme_rows() -> dict[str, dict]:
    """The README's claims table: per claim the needs, the confirmatory and exploratory cells (parsed), the lean in
    words and the power of six new seeds."""
    section = README.read_text().split(report.START, 1)[1].split(report.END, 1)[0]
    start = section.index("| paper | finding | needs | confirmatory")
    table = section[start:].split("\n\n", 1)[0].strip().splitlines()[2:]
    rows = {}
    for line in table:
        cells = [c.strip() for c in line.strip("|").split(" | ")]
        rows[cells[1].split(":", 1)[0]] = {"needs": cells[2], "confirmatory": _set_cell(cells[3]),
                                           "exploratory": _set_cell(cells[4]), "lean": cells[5], "power": cells[6]}
    return rows


def test_every_number_the_readme_shows_follows_from_the_summary_by_a_second_path():
    summary = json.loads(paths.SUMMARY.read_text())
    rows = _readme_rows()
    claims = {c["id"]: c for c in summary["claims"]}
    assert set(rows) == set(claims), "the README's table and the summary name other claims"
    exploratory, confirmatory = summary["sets"]["exploratory"], summary["sets"]["confirmatory"]
    assert exploratory == json.loads(FROZEN.read_text())["seeds"]
    for cid, shown in rows.items():
        row = claims[cid]
        for name, seeds in (("exploratory", exploratory), ("confirmatory", confirmatory)):
            cell = shown[name]
            if name == "confirmatory" and not seeds:
                assert cell is None, cid
                continue
            subset = {**row, "per_seed": [r for r in row["per_seed"] if r["seed"] in seeds]}
            want = _recomputed(subset)
            assert cell["verdict"] == want["verdict"], (cid, name)
            assert cell["lean"] == _lean(subset, want), (cid, name)
            if want["effect"] is None:
                assert cell["effect"] is None, (cid, name)
                continue
            mean, interval, n = want["effect"]
            assert _close(cell["effect"][0], mean) and cell["effect"][3] == n, (cid, name)
            if interval:
                assert _close(cell["effect"][1], interval[0]) and _close(cell["effect"][2], interval[1]), (cid, name)
        headline = shown["confirmatory"] or shown["exploratory"]
        assert row["verdict"] == headline["verdict"], cid
        effect, minimal = row["effect"], row["minimal_effect"]["value"]
        assert shown["needs"].startswith(f"{effect['side']} {effect['no_effect']:g}"), cid
        assert (f"by at least {minimal:g}" in shown["needs"]) == (minimal > 0), cid
        assert shown["lean"].startswith({"with": "leans with", "against": "leans against", "none": "no lean"}[
            headline["lean"]]), cid
        assert shown["power"] == row["sets"]["power"]["words"], cid
    # the story's counts and names, from the recomputed verdicts of the findings (setup checks and questions apart)
    headline_seeds = confirmatory or exploratory
    verdicts = {cid: _recomputed({**c, "per_seed": [r for r in c["per_seed"] if r["seed"] in headline_seeds]})["verdict"]
                for cid, c in claims.items() if c["kind"] == "finding"}
    story = README.read_text().split("## What the findings say", 1)[1].split("| paper |", 1)[0]
    told = re.search(r"the (\d+) quoted findings come to: ([^.(]+?)(?: \(on the exploratory seeds: ([^.)]+)\))?\.", story)
    assert told and int(told.group(1)) == len(verdicts)

    def counted(words: str) -> dict[str, int]:
        return {v: int(k) for k, v in re.findall(r"(\d+) ([a-z ]+?)(?:,|$)", words)}

    assert counted(told.group(2)) == {v: list(verdicts.values()).count(v) for v in set(verdicts.values())}
    # with confirmatory seeds, the exploratory set's counts follow in brackets, recomputed from seeds 0-5 alone
    assert (told.group(3) is not None) == bool(confirmatory)
    if confirmatory:
        explored = [_recomputed({**c, "per_seed": [r for r in c["per_seed"] if r["seed"] in exploratory]})["verdict"]
                    for c in claims.values() if c["kind"] == "finding"]
        assert counted(told.group(3)) == {v: explored.count(v) for v in set(explored)}
    for verdict in ("reproduced", "contradicted", "not testable here"):
        named = re.search(rf"\*\*{verdict.capitalize()}\*\*: ([^*]+?)\.(?: \*\*|\n|$)", story)
        expected = sorted(cid for cid, v in verdicts.items() if v == verdict)
        assert sorted(re.findall(r"([\w.]+) \(", named.group(1)) if named else []) == expected, verdict
    seeds = re.search(r"training seeds? ([\d, ]+) of", story).group(1)
    assert [int(s) for s in seeds.split(", ")] == sorted(headline_seeds)


@pytest.mark.parametrize("broken", ["verdict", "mean"])
def test_the_second_path_catches_a_summary_that_says_more_than_its_seeds(broken):
    summary = json.loads(paths.SUMMARY.read_text())
    row = next(c for c in summary["claims"] if c["verdict"] == "reproduced")
    headline = row["sets"][row["sets"]["judged_on"]]["seeds"]  # the headline verdict is its set's (#58)
    row = {**row, "per_seed": [r for r in row["per_seed"] if r["seed"] in headline]}
    if broken == "verdict":
        row["per_seed"][0]["outcome"] = "inconclusive"  # five of six consistent cannot reproduce
        assert _recomputed(row)["verdict"] != row["verdict"]
    else:
        row["per_seed"][0]["effect"] += 10 * abs(row["mean"]) + 1
        assert not _close(f"{row['mean']:+.3g}", _recomputed(row)["effect"][0])


def test_the_first_registration_is_archived_and_the_v1_to_v2_table_follows_from_it():
    """docs/findings-registered-v1.json is the registered claims' summary before issue #56 (no lean judged, the
    shares tested against 0) and docs/verdicts-v1-to-v2.md is what the renderer writes from it and the summary now."""
    from unlearnkit.claims.render import v1_to_v2

    v1 = json.loads(paths.REGISTERED_V1.read_text())
    now = json.loads(paths.SUMMARY.read_text())
    assert all("lean" not in r for r in v1["claims"])
    greedy = next(r for r in v1["claims"] if r["id"] == "scholten.greedy_understates")
    assert greedy["effect"]["no_effect"] == 0.0 and greedy["minimal_effect"]["value"] == 0.19
    table = paths.V1_TO_V2.read_text()
    assert table == v1_to_v2(v1, now)
    row = next(line for line in table.splitlines() if line.startswith("| scholten.greedy_understates |"))
    assert "no effect 0.0 -> 0.19" in row and "amended 2026-11-28" in row
    assert len([line for line in table.splitlines() if line.startswith("| ") and "|---" not in line]) == \
        len(now["claims"]) + 1


def test_the_readmes_opening_sentence_is_true_of_every_row_analogue_or_not():
    """The README's opening says every finding is tested on the paper's own quantity or, where its row says
    "workbook analogue", on the workbook's analogue of it (#56 item 3): every claim the registry marks as an analogue
    says so, with its reason, in its README row, and no row says so that the registry does not mark."""
    from unlearnkit.claims import registry
    from unlearnkit.claims.render import ANALOGUE

    readme = (paths.ROOT / "README.md").read_text(encoding="utf-8")
    opening = readme.split("\n\n")[1]
    analogues = {c.id: c.analogue for c in registry.load().claims if c.analogue}
    assert analogues, "no claim marked: then the opening's clause on analogues would be idle"
    assert ANALOGUE in " ".join(opening.split()) and "paper's own quantity" in opening
    rows = {line.split("|")[2].strip().split(":")[0]: line for line in readme.splitlines()
            if line.startswith("| ") and line.count("|") > 7 and "." in line.split("|")[2]}
    for claim_id, row in rows.items():
        if claim_id in analogues:
            assert f"({ANALOGUE}: {analogues[claim_id]})" in row, claim_id
        else:
            assert ANALOGUE not in row, claim_id
    assert set(analogues) <= set(rows) | {c.id for c in registry.load().claims if not c.testable}
