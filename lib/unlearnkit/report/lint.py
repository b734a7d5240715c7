"""The checks of a written report page: what a reader should never see (:func:`page_problems`), the terms the
glossary does not define (:func:`glossary_gaps`) and anything the page would load from the network
(:func:`external_resources`)."""

from __future__ import annotations

import re
from pathlib import Path

from .. import paths

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
#: docs/glossary.md as a page of the report, linked from every page's navigation.
GLOSSARY_PAGE = "glossary.html"
#: A table is a findings or summary table when one of its column headers is one of these. Every header of a table in
#: an output must be a term of the glossary; a table the notebook's own prose writes (markdown) is checked only when
#: it is a findings or summary table.
_SUMMARY_MARKERS = {"verdict", "forget_quality", "model_utility", "greedy_safe_share", "over the seeds"}
_SYMBOL = re.compile(r"\bM_(?:[A-Za-z]+|μ|σ)")
#: Headers that carry a step, a run, a question or a count, and the generic name the glossary gives each (after a
#: seed's ``seed <s>``): ``step 2`` (notebook 03's answers along a run), ``npo (after)`` (notebook 02's answers),
#: ``rmu@25, q3 (sd 0.05)`` (notebook 05's bounds against n), ``retain shots ×2`` (notebook 08's probes), ``leak@4``
#: (notebook 09's leak@k table).
_GENERIC = ((re.compile(r"^step \d+$"), "step <t>"),
            (re.compile(r"^\S+ \(after\)$"), "<run> (after)"),
            (re.compile(r"^.+, q\d+ \(sd [\d.]+\)$"), "<model>, q<i> (sd <s>)"),
            (re.compile(r"^(retain|forget) shots ×\d+$"), r"\1 shots ×<k>"),
            (re.compile(r"^leak@\d+$"), "leak@<k>"))


def glossary_terms(path: Path = GLOSSARY) -> set[str]:
    """The terms docs/glossary.md defines, lowercased: its headings and every term it writes as code."""
    text = path.read_text()
    found = set(re.findall(r"`([^`\n]+)`", text)) | {h.strip() for h in re.findall(r"^#{2,4}\s+(.*)$", text, re.M)}
    return {t.strip().lower() for t in found}


def _generic(term: str) -> str:
    """A header as the glossary names it: a seed's column as ``seed <s>``, and a step's, a run's, a question's or a
    number of shots' as :data:`_GENERIC` says."""
    term = re.sub(r"^seed \d+", "seed <s>", term.strip())
    for pattern, name in _GENERIC:
        term = pattern.sub(name, term)
    return term.lower()


def printed_terms(page: str) -> list[str]:
    """The terms a report page prints that the glossary must define, as printed: the symbols M_… in its visible text,
    and the column headers of every table in its outputs (and of the findings and summary tables its markdown
    writes), numbers left out."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(page, "html.parser")
    terms: set[str] = set()
    for block in soup.select(".jp-RenderedMarkdown, .jp-OutputArea-output"):
        terms |= set(_SYMBOL.findall(block.get_text(" ")))
        output = "jp-OutputArea-output" in block.get("class", [])
        for table in block.select("table"):
            headers = [th.get_text(" ").strip() for th in table.select("thead th")]
            if output or _SUMMARY_MARKERS & {h.lower() for h in headers}:
                terms |= {h for h in headers if h and not re.fullmatch(r"[-+.\deE%]+", h)}
    return sorted(terms)


def glossary_gaps(page: str, known: set[str]) -> list[str]:
    """The terms a page prints (:func:`printed_terms`) that the glossary (``known``, :func:`glossary_terms`) does not
    define, a header that carries a step, a run, a question or a count looked up by its generic name."""
    return undefined(printed_terms(page), known)


def undefined(terms, known: set[str]) -> list[str]:
    """Those of ``terms`` (as printed) that the glossary (``known``) does not define."""
    return sorted(t for t in terms if _generic(t) not in known)


def terms_by_page(folder: Path, names=None) -> dict[str, list[str]]:
    """The pages of a written report (``folder``; those of ``names`` where given, else all but the glossary's own
    page) with the terms each prints (:func:`printed_terms`)."""
    chosen = sorted(names) if names is not None else [p.name for p in sorted(folder.glob("*.html"))
                                                       if p.name != GLOSSARY_PAGE]
    return {name: printed_terms((folder / name).read_text(encoding="utf-8")) for name in chosen}


#: Attributes through which a page would load something: none of them may point off the machine.
_LOADED = re.compile(r"""(?:\bsrc\s*=\s*["']?|<link\b[^>]*\bhref\s*=\s*["']?|url\(\s*["']?|@import\s+["'])"""
                     r"""\s*((?:https?:)?//[^"')\s>]+)""", re.I)


def external_resources(page: str) -> list[str]:
    """Every URL a page would load from the network (scripts, images, stylesheets, fonts); links a reader may
    follow (``<a href>``) are not loads."""
    return _LOADED.findall(page)
