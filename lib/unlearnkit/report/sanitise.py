"""What a report page keeps of a notebook: nbconvert's sanitiser runs every Markdown cell and HTML output through
:func:`clean_html`, so a received notebook's markup is data (no script, no handler, no remote load)."""

from __future__ import annotations

import re
from typing import Any

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
