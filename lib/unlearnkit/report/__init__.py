"""The HTML report of a profile's executed notebooks, and the README's results section.

``build(params)`` turns the executed notebooks of one training seed, ``runs/<profile>/seed-<s>/*.ipynb``, into
``report/<profile>/`` (``report/<profile>/seed-<s>/`` for a seed other than the profile's own): ``index.html`` is
notebook 09 (the findings across the papers, judged over every seed present, with this seed's own outcome beside
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

``readme_section`` writes the README's results section from the committed summary ``docs/findings.json`` (which
notebook 09 writes on the default profile, from a set of seeds that includes the committed file's), so that README
and results cannot drift; ``python -m unlearnkit.report readme --check`` fails when they have.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .. import config, parameters_cell, paths, runs
from ..claims import Verdict
from ..config import Params
from ..studies import verdicts

REPORT = paths.ROOT / "report"
TEMPLATE_DIR = Path(__file__).parent
TEMPLATE = "workbook_html"
MATHJAX_DIR = "mathjax"
#: MathJax 2.7's configuration that ships with jupyter_server_mathjax: TeX in, HTML-CSS (or native MathML) out.
MATHJAX_CONFIG = "TeX-AMS-MML_HTMLorMML-full"
INDEX = "index.html"
#: docs/glossary.md as a page of the report, linked from every page's navigation.
GLOSSARY_PAGE = "glossary.html"


def report_dir(params: Params) -> Path:
    """``report/<profile>/`` for the profile's own seed, ``report/<profile>/seed-<s>/`` (its run store's name) for
    another."""
    folder = REPORT / params.profile
    return folder if runs.is_reference_seed(params) else folder / runs.store(params).name


def _title(notebook: Path) -> str:
    """A page's name in the navigation: '02_unlearning_gd' -> '02 unlearning · gd', '09_findings' -> '09 findings',
    an evaluation (runner eval) 'eval · <model>-<id>'."""
    if notebook.parent.parent.name == runs.EVAL:
        return f"eval · {notebook.parent.name}"
    stem = notebook.stem
    key, _, rest = stem.partition("_")
    if stem.startswith(runs.UNLEARNING + "_"):
        return f"{key} unlearning · {stem[len(runs.UNLEARNING) + 1:]}"
    return f"{key} {rest.replace('_', ' ')}"


def pages(params: Params) -> list[tuple[str, Path]]:
    """(page file, executed notebook) for every executed notebook of the run (profile and seed): notebook 09 is the
    index; the evaluations of one's own models (``eval/<model>-<id>/eval_model.ipynb``) come last. A store that
    holds only evaluations (runner eval without the workbook's notebooks) has its first evaluation as the index."""
    folder = runs.store(params)
    executed = sorted(folder.glob("[0-9][0-9]_*.ipynb"))
    evaluated = [(f"{runs.EVAL}-{p.parent.name}.html", p) for p in runs.evaluations(params)]  # after the notebooks
    if not executed and evaluated:
        return [(INDEX, evaluated[0][1]), *evaluated[1:]]
    if not executed:
        raise FileNotFoundError(f"no executed notebooks under {folder}: run them first "
                                f"(make notebooks PROFILE={params.profile})")
    front = [p for p in executed if p.stem == runs.FINDINGS]
    if not front:
        raise FileNotFoundError(f"notebook 09 has not run on profile {params.profile!r}, seed {params.seed}: it is the "
                                f"report's front page (make notebook NB=09 PROFILE={params.profile})")
    return [(INDEX, front[0])] + [(f"{p.stem}.html", p) for p in executed if p.stem != runs.FINDINGS] + evaluated


def _nav(entries: Sequence[tuple[str, Path]], here: str, params: Params) -> str:
    links = [f'<a href="{file}"{" class=here" if file == here else ""}>{html.escape(_title(nb))}</a>'
             for file, nb in entries]
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
    """In the findings table (notebook 09's HTML outputs), each figure name becomes a link to where it is drawn."""
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
    return out / INDEX


#: The markup a page keeps from a notebook (nbconvert's sanitiser runs every Markdown cell and HTML output through
#: :func:`clean_html`): text, tables, links, headings and the inline styles of a pandas Styler's cells, never a script,
#: an event handler, a frame, a form or a URL other than http(s), mailto, a page anchor or a data: image.
ALLOWED_TAGS = frozenset({"a", "abbr", "b", "blockquote", "br", "caption", "code", "col", "colgroup", "dd", "del",
                          "details", "div", "dl", "dt", "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "img",
                          "kbd", "li", "ol", "p", "pre", "s", "small", "span", "strong", "sub", "summary", "sup",
                          "table", "tbody", "td", "tfoot", "th", "thead", "tr", "u", "ul"})
ALLOWED_ATTRIBUTES = {"*": ["class", "id", "style", "title"], "a": ["href", "name", "rel", "target"],
                      "img": ["src", "alt", "width", "height"], "td": ["colspan", "rowspan"],
                      "th": ["colspan", "rowspan", "scope"], "ol": ["start"]}
ALLOWED_PROTOCOLS = frozenset({"http", "https", "mailto", "data"})
ALLOWED_CSS = frozenset({"background-color", "color", "text-align", "white-space", "vertical-align", "font-weight",
                         "font-style", "border", "border-collapse", "padding", "width", "max-width", "min-width"})
#: One rule of a pandas Styler's <style> block: an id selector of the Styler's own (#T_...) and allowed declarations
#: whose values are plain colours, keywords or lengths (no url(), no expression, no @import).
_STYLER_RULE = re.compile(r"\s*(#T_[\w-]+(?:\s+(?:th|td|tr|thead|tbody))?(?:\s*,\s*#T_[\w-]+(?:\s+(?:th|td|tr|thead|tbody))?)*)"
                          r"\s*\{([^{}<>]*)\}\s*")
_DECLARATION = re.compile(r"\s*([a-z-]+)\s*:\s*([#\w\s.,%()-]*)\s*")
_STYLE_BLOCK = re.compile(r"<style[^>]*>(.*?)</style>", re.S | re.I)


def _styler_css(css: str) -> str:
    """The rules of a Styler's <style> block that are only colours and layout on its own ids; the rest dropped."""
    kept = []
    for rule in re.finditer(r"[^{}]*\{[^{}]*\}", css):
        m = _STYLER_RULE.fullmatch(rule.group(0))
        if not m:
            continue
        declarations = [d for d in m.group(2).split(";") if d.strip()]
        parsed = [_DECLARATION.fullmatch(d) for d in declarations]
        if all(p and p.group(1) in ALLOWED_CSS and "url" not in p.group(2).lower()
               and "expression" not in p.group(2).lower() for p in parsed):
            kept.append(f"{m.group(1)} {{{'; '.join(d.strip() for d in declarations)}}}")
    return "\n".join(kept)


def clean_html(element: Any) -> str:
    """``element`` (HTML or Markdown rendered to HTML) with only :data:`ALLOWED_TAGS` and their allowed attributes,
    inline styles limited to :data:`ALLOWED_CSS` (bleach with its CSS sanitiser), and a Styler's <style> block
    reduced to its safe rules, so the findings table keeps its colours and nothing in it is active."""
    import bleach
    from bleach.css_sanitizer import CSSSanitizer

    text = element.decode() if isinstance(element, bytes) else str(element)
    styles = [_styler_css(m.group(1)) for m in _STYLE_BLOCK.finditer(text)]
    text = _STYLE_BLOCK.sub("", text)
    cleaned = bleach.clean(text, tags=ALLOWED_TAGS, attributes=ALLOWED_ATTRIBUTES, protocols=ALLOWED_PROTOCOLS,
                           css_sanitizer=CSSSanitizer(allowed_css_properties=ALLOWED_CSS), strip=True,
                           strip_comments=True)
    kept = "".join(f"<style>\n{css}\n</style>" for css in styles if css)
    return kept + cleaned


#: What a page must not show a reader: a local filesystem path, a pathlib repr, a Python warning.
_LOCAL_PATH = re.compile(r"(?<![\w.~/])/(?:work|root|home|Users|tmp|private|mnt|var|opt|srv)/[\w.-]")
_PATH_REPR = re.compile(r"\b(?:Posix|Windows)Path\(")
_WARNING = re.compile(r"\b[A-Z]\w*Warning\b|^Warning:|warnings\.warn\(", re.M)
_HEADINGS = ("h1", "h2", "h3", "h4")


def page_problems(page: str) -> list[str]:
    """What a reader of a report page should never see, each in a line: a local filesystem path or a pathlib repr in
    any visible text (markdown and outputs), a Python warning in an output, and a section (a heading) with nothing
    under it in the reader view (its code cells have no output and no text follows before the next heading)."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(page, "html.parser")
    for tag in soup(["style", "script"]):
        tag.decompose()
    problems: list[str] = []
    cells = soup.select("div.jp-Cell")
    for cell in cells:
        classes = cell.get("class", [])
        visible = ([cell.select_one(".jp-RenderedMarkdown") or cell] if "jp-MarkdownCell" in classes
                   else cell.select(".jp-OutputArea-output"))
        for block in visible:
            text = block.get_text(" ")
            for pattern, what in ((_LOCAL_PATH, "a local path"), (_PATH_REPR, "a pathlib repr")):
                found = pattern.search(text)
                if found:
                    problems.append(f"{what}: {text[max(0, found.start() - 40):found.end() + 40].strip()!r}")
            if "jp-CodeCell" in classes and block.get("data-mime-type") == "application/vnd.jupyter.stderr":
                found = _WARNING.search(text)
                if found:
                    problems.append(f"a warning: {text[found.start():found.start() + 120].strip()!r}")
    heading, level, filled = None, 0, True
    for cell in cells:
        classes = cell.get("class", [])
        if "jp-MarkdownCell" in classes:
            for node in (cell.select_one(".jp-RenderedMarkdown") or cell).children:
                name = getattr(node, "name", None)
                if name in _HEADINGS:
                    deeper = int(name[1]) > level  # a section whose first content is a subsection is not empty
                    if heading is not None and not filled and not deeper:
                        problems.append(f"an empty section: {heading!r}")
                    heading, level, filled = node.get_text(" ").strip().rstrip("¶").strip(), int(name[1]), False
                elif (node.get_text(" ") if name else str(node)).strip():
                    filled = True
        elif cell.select(".jp-OutputArea-output"):
            filled = True
    if heading is not None and not filled:
        problems.append(f"an empty section: {heading!r}")
    return problems


GLOSSARY = paths.ROOT / "docs" / "glossary.md"
#: A table is a findings or summary table when one of its column headers is one of these: every header of such a
#: table must be a term of the glossary.
_SUMMARY_MARKERS = {"verdict", "forget_quality", "model_utility", "greedy_safe_share", "over the seeds"}
_SYMBOL = re.compile(r"\bM_(?:[A-Za-z]+|μ|σ)")


def glossary_terms(path: Path = GLOSSARY) -> set[str]:
    """The terms docs/glossary.md defines, lowercased: its headings and every term it writes as code."""
    text = path.read_text()
    found = set(re.findall(r"`([^`\n]+)`", text)) | {h.strip() for h in re.findall(r"^#{2,4}\s+(.*)$", text, re.M)}
    return {t.strip().lower() for t in found}


def _generic(term: str) -> str:
    """A header as the glossary names it: a seed's column as ``seed <s>``."""
    return re.sub(r"^seed \d+", "seed <s>", term.strip()).lower()


def glossary_gaps(page: str, known: set[str]) -> list[str]:
    """The symbols M_… in a page's visible text, and the column headers of its findings and summary tables, that
    the glossary (``known``, :func:`glossary_terms`) does not define."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(page, "html.parser")
    gaps: set[str] = set()
    for block in soup.select(".jp-RenderedMarkdown, .jp-OutputArea-output"):
        gaps |= {s for s in _SYMBOL.findall(block.get_text(" ")) if s.lower() not in known}
        for table in block.select("table"):
            headers = [th.get_text(" ").strip() for th in table.select("thead th")]
            if _SUMMARY_MARKERS & {h.lower() for h in headers}:
                gaps |= {h for h in headers if h and not re.fullmatch(r"[-+.\deE%]+", h)
                         and _generic(h) not in known}
    return sorted(gaps)


#: Attributes through which a page would load something: none of them may point off the machine.
_LOADED = re.compile(r"""(?:\bsrc\s*=\s*["']?|<link\b[^>]*\bhref\s*=\s*["']?|url\(\s*["']?|@import\s+["'])"""
                     r"""\s*((?:https?:)?//[^"')\s>]+)""", re.I)


def external_resources(page: str) -> list[str]:
    """Every URL a page would load from the network (scripts, images, stylesheets, fonts); links a reader may
    follow (``<a href>``) are not loads."""
    return _LOADED.findall(page)


# --------------------------------------------------------------------------- the README's results section

README, SUMMARY, SEED_SPREAD = paths.README, paths.SUMMARY, paths.SEED_SPREAD
FORMER_SUMMARY, OLD_TO_NEW = paths.FORMER_SUMMARY, paths.OLD_TO_NEW
START, END = "<!-- results:start (make readme writes this section from docs/findings.json) -->", "<!-- results:end -->"
#: Notebook 09's figure of every verdict, above the table; the figures the README shows under it, when the summary
#: names them.
OVERVIEW = f"{runs.FINDINGS}_overview"
#: Notebook 09's figures over seeds, drawn from the summary too: each finding's margin per seed (two seeds or more),
#: and how the methods rank on each seed (the seed study).
MARGINS, RANKS = f"{runs.FINDINGS}_margins", f"{runs.FINDINGS}_rank_stability"
README_FIGURES = (f"{runs.CONTROLS}_controls_per_method", f"{runs.FORMATS}_kept",
                  f"{runs.LEAKAGE}_greedy_vs_samples", f"{runs.ALIGNMENT}_binary_bounds")


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _spread_text(spread: Mapping[str, Any]) -> str:
    """A deciding quantity over the seeds, for the table: mean [interval] and what it needs."""
    def f(x: Any) -> str:
        return "n/a" if x is None else f"{x:.3g}"

    text = f"{spread['name']} {f(spread['mean'])}"
    if spread.get("seeds", 0) > 1:
        text += f" [{f(spread['low'])}, {f(spread['high'])}]"
    if spread.get("threshold_mean") is not None:
        text += f" (needs {spread['direction']} {f(spread['threshold_mean'])})"
    return text


def seeds_cell(row: Mapping[str, Any]) -> str:
    """What the seeds of one finding show, in the README's words: the outcome of each seed, the deciding quantities
    over them (mean, with a 95 % bootstrap interval over seeds when there are several) and, for one seed, its numbers."""
    per_seed = row.get("per_seed", [])
    outcomes = "; ".join(f"seed {r['seed']}: {r['outcome']}" for r in per_seed)
    judged = [s for s in row.get("spreads", []) if s.get("threshold_mean") is not None]
    parts = [row.get("text") or "", outcomes]
    if judged:
        parts.append("; ".join(_spread_text(s) for s in judged))
    if len(per_seed) == 1:
        parts.append(per_seed[0].get("text", ""))
    return ". ".join(p for p in parts if p)


def readme_section(summary: Mapping[str, Any]) -> str:
    """The results section, from a findings summary (notebook 09's ``docs/findings.json``)."""
    rows = summary["findings"]
    counts = ", ".join(f"{n} {verdict}" for verdict, n in summary["counts"].items())
    seeds = summary.get("seeds", [])
    lines = [START, "", f"## Results on the `{summary['profile']}` profile", "",
             "Computed by the notebooks, judged over training seeds by notebook 09 (`docs/findings.json`), written "
             "here by `make readme`; a test fails if this section and the summary differ. The verdicts judge the "
             "papers' findings at this profile's scale: a tiny model trained from scratch on a synthetic corpus, on "
             f"2 CPU cores, over training seed{'s' if len(seeds) != 1 else ''} {', '.join(map(str, seeds))}. "
             f"{summary.get('rule', '')} In all: {counts}.", "",
             "| paper | finding | over the seeds | verdict | figure |", "|---|---|---|---|---|"]
    if summary.get("claims"):
        from . import claims as claim_text

        lines[4] = (f"Computed by the notebooks, judged over training seeds by notebook 09 (`docs/findings.json`), "
                    f"written here by `make readme`; a test fails if this section and the summary differ. The "
                    f"verdicts judge the papers' claims at this profile's scale: a tiny model trained from scratch on "
                    f"a synthetic corpus, on 2 CPU cores, over training seed{'s' if len(seeds) != 1 else ''} "
                    f"{', '.join(map(str, seeds))}, each drawing its own corpus.")
        lines[5:5] = [*claim_text.readme_lines(summary), "", "### The former findings, at their former bars", "",
                      "The findings these claims replace (docs/verdicts-old-to-new.md), judged over the same seeds "
                      f"by the former rule: {summary.get('rule', '')} In all: {counts}.", ""]
    for row in rows:
        figure = f"[{row['figure']}](figures/{row['figure']}.png)" if row.get("figure") else ""
        lines.append(f"| {_cell(row['paper'])} | {_cell(row['claim'])} | {_cell(seeds_cell(row))} | "
                     f"**{row['verdict']}** | {figure} |")
    named = {row.get("figure") for row in rows}
    shown = [name for name in README_FIGURES if name in named]
    at = lines.index("| paper | finding | over the seeds | verdict | figure |")
    lines[at:at] = [f"![{OVERVIEW}](figures/{OVERVIEW}.png)", ""]
    if len(seeds) > 1:
        lines += ["", "Each finding's deciding quantity on each seed, as its margin from the threshold the claim sets "
                  "(above the line: on the claim's side); a finding whose dots straddle the line sits on it.", "",
                  f"![{MARGINS}](figures/{MARGINS}.png)"]
    lines += seed_study_section(summary.get("seed_study"))
    lines += spread_section(read_seed_spread())
    if shown:
        lines += ["", *[f"![{name}](figures/{name}.png)" for name in shown]]
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
    for label in spread["variants"]:
        ratios = [r[f"{label}: shift / range"] for r in spread["table"] if r.get(f"{label}: shift / range") is not None]
        finite = [x for x in ratios if x != float("inf")]
        median = statistics.median(finite) if finite else float("nan")
        beyond = sum(x > 1 for x in ratios)
        lines.append(f"| {label} | {median:.2f} | {beyond} of {len(spread['table'])} | "
                     f"{_cell('; '.join(spread['changes'].get(label, [])) or 'none')} |")
    return lines


def seed_study_section(study: Mapping[str, Any] | None) -> list[str]:
    """The README's lines on the seed study (docs/metrics.md §8.2): the workbook's own questions, with its answers
    computed from the summary; nothing when the summary has none."""
    from ..studies import seeds as seed_study

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
    return lines + ["", f"![{RANKS}](figures/{RANKS}.png)"]


def _split(readme: str) -> tuple[str, str, str]:
    if START not in readme or END not in readme:
        raise ValueError(f"README.md lacks the results markers {START!r} ... {END!r}")
    head, rest = readme.split(START, 1)
    body, tail = rest.split(END, 1)
    return head, START + body + END, tail


def overview_table(summary: Mapping[str, Any]):
    """The findings of a summary as the overview figure reads them (paper, short name, notebook, verdict)."""
    import pandas as pd

    from ..studies.verdicts import tile

    return pd.DataFrame([{**{k: row.get(k, "") for k in ("paper", "short", "notebook", "verdict")},
                          "tile": tile(Verdict.from_dict(row))} for row in summary["findings"]])


def write_readme(summary_path: Path = SUMMARY, readme: Path = README, check: bool = False,
                 figures: Path | None = None) -> bool:
    """Rewrite README's results section from the summary and draw its overview figure (``figures/`` by default)
    from the same summary; with ``check``, only say whether the section is up to date. Returns True when the README
    is (or now is) up to date."""
    summary = json.loads(summary_path.read_text())
    head, current, tail = _split(readme.read_text())
    wanted = readme_section(summary)
    if check:
        return current == wanted
    readme.write_text(head + wanted + tail)
    if summary.get("claims") and FORMER_SUMMARY.exists() and summary_path == SUMMARY:
        from . import claims as claim_text

        runs.atomic_write_text(OLD_TO_NEW, claim_text.old_to_new(json.loads(FORMER_SUMMARY.read_text()), summary))
    from .. import plots

    folder = paths.FIGURES if figures is None else figures
    folder.mkdir(parents=True, exist_ok=True)
    plots.render_to(folder / f"{OVERVIEW}.png", plots.findings_overview, overview_table(summary),
                    seeds=summary.get("seeds"))
    if summary.get("claims"):
        from . import claims as claim_text

        plots.render_to(folder / f"{claim_text.CLAIMS_OVERVIEW}.png", plots.findings_overview,
                        claim_text.overview_table(summary), seeds=summary.get("seeds"),
                        title=claim_text.CLAIMS_OVERVIEW_TITLE)
    for name, plot, args in seed_figures(summary):
        plots.render_to(folder / f"{name}.png", plot, *args)
    return True


def seed_figures(summary: Mapping[str, Any]) -> list[tuple[str, Any, tuple]]:
    """The figures over seeds a summary draws (name, plotting function, arguments): each finding's margin per seed
    when it holds two seeds or more, the rank shares when it holds a seed study. Notebook 09 and ``make readme``
    draw them from the same data."""
    from ..plots import seeds as seed_plots
    from ..studies import seeds as seed_study

    out = []
    if len(summary.get("seeds", [])) > 1:
        judged = [Verdict.from_dict(row) for row in summary["findings"]]
        out.append((MARGINS, seed_plots.margins_per_seed, (seed_study.margins(judged),)))
    study = summary.get("seed_study") or {}
    if "shares" in study:
        taus = {r["metric"]: r["mean tau"] for r in study["kendall"]}
        out.append((RANKS, seed_plots.rank_shares, (study["shares"], taus, study["tau_stable"], len(study["seeds"]))))
    return out


def committed_summary(profile: str, path: Path = SUMMARY) -> dict[str, Any] | None:
    """The committed summary (docs/findings.json) when ``profile`` is the one it is written for, else None."""
    if profile != config.BASE_PROFILE:
        return None
    return verdicts.read_summary(path)


def write_summary(profile: str, judged: Sequence[Verdict], path: Path = SUMMARY,
                  seed_study: Mapping[str, Any] | None = None, claims: Sequence[Any] | None = None) -> str:
    """Notebook 09 on the default profile writes the committed summary beside the committed figures, but only from a
    set of seeds that includes the committed file's seeds (a one-seed run never replaces a six-seed table); other
    profiles keep theirs under runs/. Returns what it did, in a sentence."""
    if profile != config.BASE_PROFILE:
        return "not the default profile: no README summary"
    seeds = sorted({s for v in judged for s in v.seeds})
    committed = verdicts.read_summary(path)
    if not verdicts.may_replace(committed, seeds):
        kept = ", ".join(map(str, verdicts.summary_seeds(committed)))
        return (f"{path.relative_to(paths.ROOT) if path.is_relative_to(paths.ROOT) else path} kept: it is judged "
                f"over seeds {kept}, these findings over {', '.join(map(str, seeds)) or 'none'} (run the missing seeds "
                f"to replace it)")
    path.parent.mkdir(parents=True, exist_ok=True)
    runs.atomic_write_text(path, json.dumps(config.jsonable(verdicts.summary(profile, judged, seed_study, claims)),
                                              indent=1, ensure_ascii=False) + "\n")
    return f"summary for the README: {paths.shown(path)} (seeds {', '.join(map(str, seeds))})"
