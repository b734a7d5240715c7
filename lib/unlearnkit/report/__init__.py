"""The HTML report of a profile's executed notebooks, and the README's results section, one module per job:
:mod:`~unlearnkit.report.site` builds the pages (``build``), :mod:`~unlearnkit.report.sanitise` keeps a page's
markup inert (``clean_html``), :mod:`~unlearnkit.report.lint` checks a written page, :mod:`~unlearnkit.report.readme`
writes the README's results section from ``docs/findings.json`` and :mod:`~unlearnkit.report.summary` keeps that
summary (which seeds may replace it); the registered claims' text comes from :mod:`unlearnkit.claims.render`. This
face re-exports their names: ``report.build``, ``report.write_readme``, ...
"""

from .lint import (
    GLOSSARY,
    external_resources,
    glossary_gaps,
    glossary_terms,
    page_problems,
    printed_terms,
    terms_by_page,
    undefined,
)
from .readme import (
    END,
    MARGINS,
    RANKS,
    README,
    README_FIGURES,
    SEED_SPREAD,
    START,
    SUMMARY,
    effect_cell,
    read_seed_spread,
    readme_section,
    results_body,
    results_page,
    seed_figures,
    seed_study_section,
    spread_section,
    story,
    write_readme,
)
from .sanitise import ALLOWED_ATTRIBUTES, ALLOWED_CSS, ALLOWED_PROTOCOLS, ALLOWED_TAGS, clean_html
from .site import (
    GLOSSARY_PAGE,
    INDEX,
    MATHJAX_CONFIG,
    MATHJAX_DIR,
    REPORT,
    TEMPLATE,
    TEMPLATE_DIR,
    add_named_settings,
    build,
    figure_anchor,
    figure_outputs,
    github_slug,
    glossary_notebook,
    link_glossary,
    named_settings,
    notebook_pages,
    pages,
    provenance,
    provenance_line,
    report_dir,
    write_printed_terms,
)
from .summary import committed_summary, write_summary

__all__ = [
    "GLOSSARY", "external_resources", "glossary_gaps", "glossary_terms", "page_problems", "printed_terms",
    "terms_by_page", "undefined", "END", "MARGINS", "RANKS", "README", "README_FIGURES", "SEED_SPREAD", "START",
    "SUMMARY", "effect_cell", "read_seed_spread", "readme_section", "results_body", "results_page", "seed_figures",
    "seed_study_section", "spread_section", "story", "write_readme", "ALLOWED_ATTRIBUTES", "ALLOWED_CSS",
    "ALLOWED_PROTOCOLS", "ALLOWED_TAGS", "clean_html", "GLOSSARY_PAGE", "INDEX", "MATHJAX_CONFIG", "MATHJAX_DIR",
    "REPORT", "TEMPLATE", "TEMPLATE_DIR", "add_named_settings", "build", "figure_anchor", "figure_outputs",
    "github_slug", "glossary_notebook", "link_glossary", "named_settings", "notebook_pages", "pages", "provenance",
    "provenance_line", "report_dir", "write_printed_terms", "committed_summary", "write_summary",
]
