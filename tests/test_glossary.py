"""Every term the default profile's report prints is defined in docs/glossary.md, checked without the default runs.

The default report prints tables the smoke report never reaches (notebook 04's table of facts on which the formats
disagree is empty on smoke, so its ``qa`` column was printed, and undefined, on default only). ``make report`` on the
default profile writes every term each page prints into docs/printed-terms.json (``make all`` keeps it current; a
stale copy shows in ``git status``, and tests/test_notebooks.py compares it with the report where the default runs of
this commit are present); these tests read it on a clean checkout, as CI has one."""

from __future__ import annotations

import json
import re

import pytest
from unlearnkit import paths, report


@pytest.fixture(scope="module")
def printed() -> dict[str, list[str]]:
    return json.loads(paths.PRINTED_TERMS.read_text(encoding="utf-8"))["pages"]


def test_every_term_the_default_report_prints_is_in_the_glossary(printed):
    known = report.glossary_terms()
    assert {page: report.undefined(terms, known) for page, terms in printed.items()
            if report.undefined(terms, known)} == {}


def test_the_inventory_covers_every_numbered_notebook_of_the_default_report(printed):
    """One page per numbered notebook (02 one per unlearning run, 10 the index), each with the terms it prints: a file
    written from a partial report would leave notebooks unchecked."""
    keys = {p.stem[:2] for p in paths.NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")}
    shown = {name[:2] for name in printed if name != report.INDEX}
    assert report.INDEX in printed and shown == keys - {"10"}, sorted(printed)
    assert len([name for name in printed if name.startswith("02_unlearning_")]) >= 10
    assert all(terms for name, terms in printed.items() if not name.startswith("00_")), printed
    # the header this test was written for: on default only, notebook 04 prints TOFU's Q&A verdict beside the formats
    assert "qa" in printed["04_format_eval.html"]


def test_a_term_whose_entry_is_removed_is_reported(printed, tmp_path):
    """The check bites: the glossary without the entry (and index line) of ``qa``, or of any other printed header,
    leaves that term undefined."""
    text = paths.ROOT.joinpath("docs", "glossary.md").read_text(encoding="utf-8")
    without = re.sub(r"\n### `qa` \(where the formats disagree\)\n.*?(?=\n### |\n---)", "\n", text, flags=re.S)
    without = without.replace("- [`qa`](#qa-where-the-formats-disagree)\n", "")
    assert without != text
    glossary = tmp_path / "glossary.md"
    glossary.write_text(without, encoding="utf-8")
    assert report.undefined(printed["04_format_eval.html"], report.glossary_terms(glossary)) == ["qa"]
    # any other printed header: the first backticked heading that names one alone
    term = next(t for terms in printed.values() for t in terms if f"\n### `{t}`\n" in text)
    glossary.write_text(text.replace(f"\n### `{term}`\n", "\n### removed\n").replace(f"`{term}`", "removed"),
                        encoding="utf-8")
    assert term in report.undefined([term], report.glossary_terms(glossary))


def test_printed_terms_reads_every_output_table_and_the_summary_tables_of_markdown():
    """What the inventory and the smoke report's check read of a page: output tables' headers and symbols M_… in any
    visible text; a markdown table only when it is a findings or summary table; numbers are not terms."""
    page = ('<div class="jp-OutputArea-output"><table><thead><tr><th>qa</th><th>0.5</th><th>mcqa</th></tr></thead>'
            '</table>M_bin is 0.2</div>'
            '<div class="jp-RenderedMarkdown"><table><thead><tr><th>prose</th></tr></thead></table></div>'
            '<div class="jp-RenderedMarkdown"><table><thead><tr><th>claim</th><th>verdict</th></tr></thead></table>'
            '</div>')
    assert report.printed_terms(page) == ["M_bin", "claim", "mcqa", "qa", "verdict"]
    assert report.undefined(report.printed_terms(page), {"qa", "mcqa", "m_bin", "verdict"}) == ["claim"]
    assert report.undefined(["step 12", "npo (after)"], {"step <t>", "<run> (after)"}) == []
