"""The HTML report of a profile's executed notebooks: the site builder.

``build(params)`` turns the executed notebooks of one training seed, ``runs/<profile>/seed-<s>/*.ipynb``, into
``report/<profile>/`` (``report/<profile>/seed-<s>/`` for a seed other than the profile's own): ``index.html`` is
notebook 10 (the findings across the papers, judged over every seed present, with this seed's own outcome beside
each), then one page per executed notebook, with a navigation bar between them. The pages
are nbconvert's (JupyterLab template) with every figure embedded and nothing fetched from the network: MathJax is
the copy packaged by ``jupyter_server_mathjax``, placed beside the pages, and the template drops require.js and
mermaid, which nbconvert otherwise loads from a CDN.

Pages are a reader's view: code inputs are folded away (a toggle in the navigation bar shows them, and
``?code`` in the address opens a page with them shown), papermill's injected-parameters cell is folded into the
notebook's own parameters cell (one cell, with the values the run used), each page opens with a provenance line
(profile, commit, seed, when it ran and how long it took, package versions; the front page lists every notebook's
time), every figure has an anchor where its notebook draws it (``#fig-<name>``), and the findings table on the
front page links each figure to that place.
"""

from __future__ import annotations

import html
import json
import re
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .. import config, parameters_cell, paths, runs
from ..config import Params
from .lint import GLOSSARY, GLOSSARY_PAGE, terms_by_page
from .sanitise import clean_html

REPORT = paths.ROOT / "report"
TEMPLATE_DIR = Path(__file__).parent
TEMPLATE = "workbook_html"
MATHJAX_DIR = "mathjax"
#: MathJax 2.7's configuration that ships with jupyter_server_mathjax: TeX in, HTML-CSS (or native MathML) out, with
#: the Safe extension nbconvert's own default adds: TeX in a received notebook or profile is data, so no \href to a
#: javascript: or data: URL, no \style or \class of its own.
MATHJAX_CONFIG = "TeX-AMS-MML_HTMLorMML-full,Safe"
INDEX = "index.html"


def report_dir(params: Params) -> Path:
    """``report/<profile>/`` for the profile's own seed, ``report/<profile>/seed-<s>/`` (its run store's name) for
    another."""
    folder = REPORT / params.profile
    return folder if runs.is_reference_seed(params) else folder / runs.store(params).name


def _title(notebook: Path) -> str:
    """A page's name in the navigation: '02_unlearning_gd' -> '02 unlearning · gd', '10_findings' -> '10 findings',
    an evaluation (runner eval) 'eval · <model>-<id>'."""
    if notebook.parent.parent.name == runs.EVAL:
        return f"eval · {notebook.parent.name}"
    stem = notebook.stem
    key, _, rest = stem.partition("_")
    if stem.startswith(runs.UNLEARNING + "_"):
        return f"{key} unlearning · {stem[len(runs.UNLEARNING) + 1:]}"
    return f"{key} {rest.replace('_', ' ')}"


def pages(params: Params) -> list[tuple[str, Path]]:
    """(page file, executed notebook) for every executed notebook of the run (profile and seed): notebook 10 is the
    index; the evaluations of one's own models (``eval/<model>-<id>/eval_model.ipynb``) come last. A store that
    holds only evaluations (runner eval without the workbook's notebooks) has no index among them: its index is the
    list of evaluations (:func:`evaluations_notebook`)."""
    folder = runs.store(params)
    executed = sorted(folder.glob("[0-9][0-9]_*.ipynb"))
    evaluated = [(f"{runs.EVAL}-{p.parent.name}.html", p) for p in runs.evaluations(params)]  # after the notebooks
    if not executed and evaluated:
        return evaluated  # the index is the list of evaluations (evaluations_notebook)
    if not executed:
        raise FileNotFoundError(f"no executed notebooks under {folder}: run them first "
                                f"(make notebooks PROFILE={params.profile})")
    front = [p for p in executed if p.stem == runs.FINDINGS]
    if not front:
        raise FileNotFoundError(f"notebook 10 has not run on profile {params.profile!r}, seed {params.seed}: it is the "
                                f"report's front page (make notebook NB=10 PROFILE={params.profile})")
    return [(INDEX, front[0])] + [(f"{p.stem}.html", p) for p in executed if p.stem != runs.FINDINGS] + evaluated


#: The page listing a store's evaluations (runner eval), beside the notebooks' pages.
EVALUATIONS_PAGE = "evaluations.html"


def evaluations_notebook(entries: Sequence[tuple[str, Path]]):
    """The index of the evaluations among ``entries`` as a one-cell notebook: a row per evaluation with its page,
    the model, the reference (and whether given as results) and its headline numbers (summary.json). A received
    store's names and numbers are data: escaped, and only finite numbers shown."""
    import math

    import nbformat

    def cell(text: object) -> str:
        return html.escape(str(text)).replace("|", "&#124;")

    keys = ("forget_quality", "model_utility", "privleak")
    rows = ["| evaluation | model | reference | " + " | ".join(keys) + " |", "|---|---|---|---|---|---|"]
    for file, notebook in entries:
        if notebook.parent.parent.name != runs.EVAL:
            continue
        folder = notebook.parent
        try:
            evaluated = json.loads((folder / "metrics.json").read_text())["meta"]["evaluated"]
            summary = json.loads((folder / "summary.json").read_text())
        except (OSError, ValueError, KeyError, TypeError):
            evaluated, summary = {}, {}
        reference = evaluated.get("reference") or "none"
        given = " (results)" if evaluated.get("reference_given_as") == "results" else ""
        numbers = [f"{v:.3g}" if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                   else "—" for v in (summary.get(k) if isinstance(summary, dict) else None for k in keys)]
        rows.append(f"| [{cell(folder.name)}]({file}) | {cell(evaluated.get('model', '?'))} | {cell(reference)}{given}"
                    f" | " + " | ".join(numbers) + " |")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(
        "# Your own models: the evaluations of this store\n\nEach `runner eval` of this profile and seed, its page "
        "linked; forget quality against TOFU's bar of 0.05, model utility and privleak as its summary.json holds "
        "them (— where not computed).\n\n" + "\n".join(rows))]
    return nb


def _nav(entries: Sequence[tuple[str, Path]], here: str, params: Params) -> str:
    links = [f'<a href="{file}"{" class=here" if file == here else ""}>{html.escape(_title(nb))}</a>'
             for file, nb in entries]
    if any(nb.parent.parent.name == runs.EVAL for _, nb in entries):
        links.append(f'<a href="{EVALUATIONS_PAGE}"{" class=here" if here == EVALUATIONS_PAGE else ""}>evaluations</a>')
    links.append(f'<a href="{GLOSSARY_PAGE}"{" class=here" if here == GLOSSARY_PAGE else ""}>glossary</a>')
    return "".join(links) + (f'<span class="profile">profile: {html.escape(params.profile)} · seed '
                             f'{params.seed}</span>')


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a markdown heading (what links to docs/glossary.md#... name): lowercase, code ticks
    and punctuation dropped, spaces as hyphens."""
    import unicodedata

    text = heading.replace("`", "").strip().lower()
    return "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in "LMN").replace(" ", "-")


def glossary_notebook(path: Path | None = None):
    """docs/glossary.md as a one-cell notebook for the report's exporter, each heading preceded by the anchor GitHub
    gives it, so that a notebook's link to docs/glossary.md#term lands on the term in the report too; links to
    metrics.md point at docs/ beside the report."""
    import nbformat

    lines = []
    for line in (path or GLOSSARY).read_text().splitlines():
        match = re.match(r"^#{1,6}\s+(.*?)\s*$", line)
        if match:
            lines.append(f'<a id="{github_slug(match.group(1))}"></a>\n')
        lines.append(line.replace("](metrics.md", "](../../docs/metrics.md"))
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("\n".join(lines))]
    return nb


#: How the notebooks link the glossary, and what that link becomes in the report.
_GLOSSARY_LINK = re.compile(r"\((?:\.\./)?docs/glossary\.md")


def link_glossary(nb) -> None:
    """Point a notebook's links to docs/glossary.md at the report's glossary page."""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = _GLOSSARY_LINK.sub(f"({GLOSSARY_PAGE}", cell.source)


def named_settings(nb, params: Params) -> str:
    """The line under a page's introduction: the run's value of every parameter its prose names (as `key`), so a
    reader of the page, where code is hidden, sees what the text refers to; empty when it names none."""
    prose = " ".join(c.source for c in nb.cells if c.cell_type == "markdown")
    named = [k for k in dict.fromkeys(re.findall(r"`(\w+)`", prose)) if k in config.PARAMETER_NAMES and k != "profile"]
    if not named:
        return ""
    values = " · ".join(f"`{k}` = {html.escape(json.dumps(config.jsonable(params[k]), ensure_ascii=False))}"
                        for k in named)  # a value is text: '<img onerror=...>' in a profile shows as written
    return f"**This run's settings** named in the text: {values}"


def add_named_settings(nb, params: Params) -> None:
    """Insert :func:`named_settings` as a markdown cell after the notebook's first (its introduction)."""
    import nbformat

    line = named_settings(nb, params)
    if line and nb.cells:
        nb.cells.insert(1, nbformat.v4.new_markdown_cell(line, metadata={"tags": ["named-settings"]}))


def _footer(entries: Sequence[tuple[str, Path]], i: int) -> str:
    parts = []
    if i > 0:
        parts.append(f'<a href="{entries[i - 1][0]}">← {html.escape(_title(entries[i - 1][1]))}</a>')
    parts.append(f'<a href="{INDEX}">findings</a>')
    if i + 1 < len(entries):
        parts.append(f'<a href="{entries[i + 1][0]}">{html.escape(_title(entries[i + 1][1]))} →</a>')
    return "".join(parts)


def _mathjax(out: Path) -> None:
    import importlib.resources

    source = importlib.resources.files("jupyter_server_mathjax") / "static"
    target = out / MATHJAX_DIR
    if not (target / "MathJax.js").exists():
        # Localisations are fetched only for other languages than English; they are half of the package.
        shutil.copytree(str(source), target, ignore=shutil.ignore_patterns("localization"), dirs_exist_ok=True)


#: Where the runner records a run's wall time and provenance in an executed notebook's metadata.
_META = "unlearnkit"
#: Packages the provenance line names (the rest are in each notebook's metrics.json).
_PROVENANCE_PACKAGES = ("python", "torch", "transformers", "peft", "accelerate", "papermill")


def figure_anchor(name: str) -> str:
    return f"fig-{name}"


def _figures_by_bytes(params: Params) -> dict[str, str]:
    """base64 PNG -> figure name for the run's saved figures: how a figure shown before the runner tagged its
    outputs is recognised."""
    import base64

    folders = dict.fromkeys([runs.figures_dir(params), runs.store(params) / "figures"])
    return {base64.b64encode(p.read_bytes()).decode(): p.stem for folder in folders for p in sorted(folder.glob("*.png"))}


def figure_outputs(nb, by_bytes: Mapping[str, str]) -> list[tuple[int, int, str]]:
    """(cell, output, figure name) of every output that shows a saved figure: tagged by ``plots.draw`` in its
    metadata, else recognised by its bytes."""
    found = []
    for i, cell in enumerate(nb.cells):
        for j, output in enumerate(cell.get("outputs", [])):
            name = output.get("metadata", {}).get(_META, {}).get("figure")
            if name is None and "image/png" in output.get("data", {}):
                name = by_bytes.get("".join(output["data"]["image/png"].split()))
            if name:
                found.append((i, j, name))
    return found


def _anchor_figures(nb, placed: list[tuple[int, int, str]]) -> None:
    """Put an anchor before each figure output (later outputs first, so the indices hold)."""
    from nbformat.v4 import new_output

    for i, j, name in sorted(placed, reverse=True):
        anchor = new_output("display_data", data={"text/html": f'<a id="{figure_anchor(name)}" class="figure-anchor"></a>'})
        nb.cells[i].outputs.insert(j, anchor)


def _link_figures(nb, where: Mapping[str, str]) -> None:
    """In the findings table (notebook 10's HTML outputs), each figure name becomes a link to where it is drawn."""
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            html_text = output.get("data", {}).get("text/html")
            if not html_text:
                continue
            text = "".join(html_text) if isinstance(html_text, list) else html_text
            for name, page in where.items():
                link = f'<a href="{page}#{figure_anchor(name)}">{html.escape(name)}</a>'
                text = re.sub(rf">\s*{re.escape(name)}\s*</td>", f">{link}</td>", text)
            output["data"]["text/html"] = text


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min" if seconds >= 60 else f"{seconds:.0f} s"


def provenance(params: Params, stem: str, metadata: Mapping[str, Any]) -> dict[str, Any]:
    """Who made a page: profile, commit, seed, packages (the runner's record in the executed notebook's
    ``metadata``, else the notebook's metrics.json), when it ran and how long it took."""
    meta = metadata.get(_META, {})
    record = dict(meta.get("provenance") or {})
    if not record:
        try:
            stored = runs.read_metrics(params, stem)["meta"]
        except (FileNotFoundError, KeyError, ValueError):
            stored = {}
        record = {"git_revision": stored.get("git_revision"), "seed": stored.get("parameters", {}).get("seed"),
                  "packages": stored.get("packages", {})}
    timing = meta.get("timing") or {}
    return {"profile": params.profile, **record, "started": timing.get("started"), "wall_s": timing.get("wall_s")}


def provenance_line(record: Mapping[str, Any]) -> str:
    import datetime as dt

    parts = [f"profile <b>{html.escape(str(record['profile']))}</b>",
             f"commit <code>{html.escape(str(record.get('git_revision') or 'unknown'))}</code>",
             f"seed {html.escape(str(record.get('seed')))}"]
    if record.get("started"):
        when = dt.datetime.fromtimestamp(record["started"], dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        parts.append(f"ran {when}" + (f" in {_minutes(record['wall_s'])}" if record.get("wall_s") else ""))
    packages = record.get("packages") or {}
    named = [f"{k} {packages[k]}" for k in _PROVENANCE_PACKAGES if k in packages]
    if named:
        parts.append(html.escape(", ".join(named)))
    return " · ".join(parts)


def _times(entries: Sequence[tuple[str, Path]], records: Mapping[str, Mapping[str, Any]]) -> str:
    """The front page's list of every notebook's time."""
    items = [f'<a href="{file}">{html.escape(_title(nb))}</a> {_minutes(records[file]["wall_s"])}'
             for file, nb in entries if records[file].get("wall_s")]
    return ("time per notebook: " + " · ".join(items)) if items else ""


def build(params: Params, out: Path | None = None) -> Path:
    """Write the report of one run (profile and seed) and return its index page."""
    import nbformat
    from nbconvert import HTMLExporter

    out = out or report_dir(params)
    out.mkdir(parents=True, exist_ok=True)
    _mathjax(out)
    exporter = HTMLExporter(template_name=TEMPLATE, extra_template_basedirs=[str(TEMPLATE_DIR)])
    exporter.sanitize_html = True  # a received notebook's HTML outputs and Markdown are data: no script, no handler
    exporter.register_filter("clean_html", clean_html)
    exporter.mathjax_url = f"{MATHJAX_DIR}/MathJax.js?config={MATHJAX_CONFIG}"
    entries = pages(params)
    notebooks = {file: nbformat.read(notebook, as_version=4) for file, notebook in entries}
    for nb in notebooks.values():
        parameters_cell.fold_injected(nb)  # before the figures are found: it removes a cell
        link_glossary(nb)
    by_bytes = _figures_by_bytes(params)
    placed = {file: figure_outputs(nb, by_bytes) for file, nb in notebooks.items()}
    where: dict[str, str] = {}
    for file, _ in [*entries[1:], entries[0]]:  # a figure's place is where its notebook draws it; 08 shows copies
        for _, _, name in placed[file]:
            where.setdefault(name, file)
    records = {file: provenance(params, notebook.stem, notebooks[file].metadata) for file, notebook in entries}
    for nb in notebooks.values():
        add_named_settings(nb, params)
    placed = {file: figure_outputs(nb, by_bytes) for file, nb in notebooks.items()}  # cells moved by one
    for i, (file, notebook) in enumerate(entries):
        nb = notebooks[file]
        _anchor_figures(nb, [p for p in placed[file] if where.get(p[2]) == file])
        if file == INDEX:
            _link_figures(nb, where)
        nb.metadata["title"] = f"{_title(notebook)} ({params.profile}, seed {params.seed})"
        line = provenance_line(records[file])
        if file == INDEX:
            line += "<br>" + _times(entries, records)
        body, _ = exporter.from_notebook_node(nb, resources={
            "workbook_nav": _nav(entries, file, params), "workbook_footer": _footer(entries, i),
            "workbook_provenance": line, "metadata": {"name": notebook.stem}})
        runs.atomic_write_text(out / file, body)
    glossary = glossary_notebook()
    glossary.metadata["title"] = "Glossary"
    body, _ = exporter.from_notebook_node(glossary, resources={
        "workbook_nav": _nav(entries, GLOSSARY_PAGE, params), "workbook_footer": f'<a href="{INDEX}">findings</a>',
        "workbook_provenance": "docs/glossary.md: every term and symbol the pages print", "metadata": {"name": "glossary"}})
    runs.atomic_write_text(out / GLOSSARY_PAGE, body)
    if any(nb.parent.parent.name == runs.EVAL for _, nb in entries):
        listed = evaluations_notebook(entries)
        listed.metadata["title"] = f"Evaluations ({params.profile}, seed {params.seed})"
        body, _ = exporter.from_notebook_node(listed, resources={
            "workbook_nav": _nav(entries, EVALUATIONS_PAGE, params), "workbook_footer": f'<a href="{INDEX}">findings</a>',
            "workbook_provenance": "runner eval: every evaluation of this store", "metadata": {"name": "evaluations"}})
        for page in (EVALUATIONS_PAGE, *(() if any(f == INDEX for f, _ in entries) else (INDEX,))):
            runs.atomic_write_text(out / page, body)
    if out == report_dir(params) and runs.publishes(params) and runs.is_reference_seed(params):
        write_printed_terms(out, notebook_pages(entries))
    return out / INDEX


def notebook_pages(entries: Sequence[tuple[str, Path]]) -> list[str]:
    """The pages of :func:`pages` that show the numbered notebooks (the findings notebook's is the index), not an
    evaluation of one's own model."""
    return [file for file, notebook in entries if notebook.name[:2].isdigit()]


def write_printed_terms(folder: Path, names: Sequence[str]) -> Path:
    """Write docs/printed-terms.json: every term each notebook page (``names``) of the default profile's report
    (``folder``) prints, so that a checkout without the default runs (CI) still checks each against the glossary
    (tests/test_glossary.py). Written only when its content changes; ``make all`` keeps it current and a stale copy
    shows in ``git status``."""
    text = json.dumps({"about": PRINTED_TERMS_ABOUT, "pages": terms_by_page(folder, names)}, indent=1,
                      ensure_ascii=False) + "\n"
    if not paths.PRINTED_TERMS.exists() or paths.PRINTED_TERMS.read_text(encoding="utf-8") != text:
        runs.atomic_write_text(paths.PRINTED_TERMS, text)
    return paths.PRINTED_TERMS


PRINTED_TERMS_ABOUT = ("The column headers and symbols each page of the default profile's report prints (make report "
                       "writes this file); tests/test_glossary.py checks every one against docs/glossary.md.")
