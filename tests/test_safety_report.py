"""An inert report (#59, docs/threat-model.md): a received notebook's Markdown, HTML and LaTeX outputs and a
profile's strings cannot arm a page. MathJax runs with its Safe extension (no \\href to javascript:, no \\style, no
\\class), an image is only a data:image/* one (no remote src: a tracking pixel), a link never carries data:, and an
inline style never an expression(). The page is checked on its HTML itself: no browser runs in CI."""

import html
import re

import nbformat
from unlearnkit import config, paths, report

LATEX_LINK = r"$\href{javascript:document.title='pwned'}{click}$ $\style{color:red}{y}$ $\class{MJX-evil}{z}$"
REMOTE_IMAGES = ('<img src="https://example.com/pixel.png"> <img src="//example.com/p2.png"> '
                 '<img src=" HTTP://example.com/p3.png"> ![pixel](https://example.com/p4.png)')
DATA_LINKS = ('<a href="data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==">one</a> '
              '<a href=" DATA:text/html,&lt;script&gt;alert(1)&lt;/script&gt;">two</a> '
              '[three](data:text/html,pwned) <a href="&#100;ata:text/html,x">four</a>')
STYLES = ('<span style="color: expression(alert(1))">e1</span> <span style="width: expr\\65 ssion(alert(2))">e2</span>'
          '<span style="color: red; background-color: url(https://example.com/x)">e3</span>')
#: A plain 1x1 PNG: the one kind of image a page keeps.
PIXEL = ("data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5E"
         "rkJggg==")
VECTORS = "\n\n".join([LATEX_LINK, REMOTE_IMAGES, DATA_LINKS, STYLES, f'<img src="{PIXEL}" alt="kept">'])


def _normalised(url: str) -> str:
    """A URL as a browser reads its scheme: entities decoded, whitespace and control characters dropped, lowercase."""
    return re.sub(r"[`\x00-\x20\x7f-\xa0\s]+", "", html.unescape(url)).lower()


def _attributes(page: str, name: str) -> list[str]:
    """Every value of attribute ``name`` in ``page``, quoted or not."""
    pattern = rf"\s{name}\s*=\s*(?:\"([^\"]*)\"|'([^']*)'|([^\s>]+))"
    return [next(g for g in m.groups() if g is not None) for m in re.finditer(pattern, page, re.I)]


def armed(page: str) -> list[str]:
    """What in ``page`` a browser would act on: MathJax without Safe, a javascript: or data: link, an image or script
    loaded from elsewhere, an expression() or url() in a style."""
    found = []
    configs = re.findall(r"<script[^>]*\ssrc=\"([^\"]*MathJax\.js[^\"]*)\"", page)
    found += [f"MathJax without Safe: {c}" for c in configs if "Safe" not in c.partition("config=")[2].split(",")]
    if not configs:
        found.append("no MathJax script")
    for url in map(_normalised, _attributes(page, "href")):
        if url.startswith(("javascript:", "data:", "vbscript:")):
            found.append(f"href {url[:40]}")
    for url in map(_normalised, _attributes(page, "src")):
        if not (url.startswith("data:image/") or re.fullmatch(r"mathjax/[\w/.-]+(\?[\w=,.-]*)?", url)):
            found.append(f"src {url[:40]}")
    for style in _attributes(page, "style"):
        css = html.unescape(style).lower()
        if re.search(r"expr|ssion|url\s*\(|\\", css):
            found.append(f"style {css[:60]}")
    return found


def test_a_page_carrying_every_vector_arms_none_of_them(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "RUNS", tmp_path / "runs")
    params = config.Params.load("smoke", probe_prefill_text=LATEX_LINK)
    store = tmp_path / "runs" / "smoke" / "seed-0"
    store.mkdir(parents=True)
    outputs = nbformat.v4.new_code_cell("x", outputs=[
        nbformat.v4.new_output("display_data", data={"text/latex": LATEX_LINK, "text/plain": "x"}),
        nbformat.v4.new_output("display_data", data={"text/html": VECTORS.replace("\n\n", "<br>"), "text/plain": "x"}),
        nbformat.v4.new_output("display_data", data={"text/markdown": VECTORS, "text/plain": "x"})])
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# Findings\n\nThe probe opens with `probe_prefill_text`.\n\n" + VECTORS),
                outputs]
    nbformat.write(nb, store / "10_findings.ipynb")

    index = report.build(params, tmp_path / "report")
    page = index.read_text()
    assert armed(page) == []
    assert (index.parent / "mathjax" / "extensions" / "Safe.js").is_file()  # the extension the configuration names
    # what is data stays on the page as text or as a kept image
    assert page.count(f'src="{PIXEL}"') == 3 and "click" in page and "e1" in page
    assert "color: red" in page  # an allowed declaration beside a dropped one is kept


def test_the_checker_sees_each_vector_on_a_page_that_carries_it_unfiltered():
    page = (f'<script src="mathjax/MathJax.js?config=TeX-AMS-MML_HTMLorMML-full"></script>{DATA_LINKS}'
            f'{REMOTE_IMAGES}{STYLES}<a href="javascript:alert(1)">j</a>')
    found = armed(page)
    assert found[0].startswith("MathJax without Safe")
    assert sum(f.startswith("href data:") for f in found) == 3 and "href javascript:alert(1)" in found
    assert sum(f.startswith("src ") for f in found) == 3
    assert sum(f.startswith("style ") for f in found) == 3
