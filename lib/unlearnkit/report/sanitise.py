"""What a report page keeps of a notebook: nbconvert's sanitiser runs every Markdown cell and HTML output through
:func:`clean_html`, so a received notebook's markup is data (no script, no handler, no remote load: an image is a
data:image/* one, a link never data:, a style never expression() or url())."""

from __future__ import annotations

import html
import re
from typing import Any

#: The markup a page keeps from a notebook (nbconvert's sanitiser runs every Markdown cell and HTML output through
#: :func:`clean_html`): text, tables, links, headings and the inline styles of a pandas Styler's cells, never a script,
#: an event handler, a frame, a form, a link other than http(s), mailto or a page anchor, or an image other than a
#: data:image/* one.
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
#: CSS functions an inline style may call: colours. Any other (expression(), url(), var(), ...) drops its declaration.
ALLOWED_CSS_FUNCTIONS = frozenset({"rgb", "rgba", "hsl", "hsla"})


def _normal(url: str) -> str:
    """``url`` as a browser reads its scheme: entities decoded (bleach keeps them as written), whitespace, control and
    non-ASCII characters dropped, lowercase."""
    return re.sub(r"[^\x00-\x7f]", "", re.sub(r"[`\x00-\x20\x7f-\xa0\s]+", "", html.unescape(url))).lower()


def _attribute(tag: str, name: str, value: str) -> bool:
    """Whether attribute ``name`` of ``tag`` is kept: those of :data:`ALLOWED_ATTRIBUTES`, an image's ``src`` only
    as a data:image/* URL (never a remote one: a tracking pixel), a link's ``href`` never a data: one."""
    if name not in ALLOWED_ATTRIBUTES.get(tag, ()) and name not in ALLOWED_ATTRIBUTES["*"]:
        return False
    if tag == "img" and name == "src":
        return _normal(value).startswith("data:image/")
    if tag == "a" and name == "href":
        return not _normal(value).startswith("data:")
    return True


def _calls(tokens) -> bool:
    """Whether CSS ``tokens`` hold a url() or call a function other than a colour's, at any depth."""
    for token in tokens:
        if token.type == "url" or token.type == "function" and token.lower_name not in ALLOWED_CSS_FUNCTIONS:
            return True
        inner = getattr(token, "arguments", None) or getattr(token, "content", None)
        if isinstance(inner, list) and _calls(inner):
            return True
    return False


def _css_sanitizer():
    """bleach's CSS sanitiser (the properties of :data:`ALLOWED_CSS`) that also drops a declaration whose value calls
    a function other than a colour's: ``expression(`` or ``url(``, escaped or not (tinycss2 reads the escapes)."""
    import tinycss2
    from bleach.css_sanitizer import CSSSanitizer

    class Inert(CSSSanitizer):
        def sanitize_css(self, style: str) -> str:
            kept = [d for d in tinycss2.parse_declaration_list(style) if d.type != "declaration" or not _calls(d.value)]
            return super().sanitize_css(tinycss2.serialize(kept))

    return Inert(allowed_css_properties=ALLOWED_CSS)


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
    """``element`` (HTML or Markdown rendered to HTML) with only :data:`ALLOWED_TAGS` and their allowed attributes
    (:func:`_attribute`), inline styles limited to :data:`ALLOWED_CSS` calling no function but a colour's, and a Styler's <style> block
    reduced to its safe rules, so the findings table keeps its colours and nothing in it is active."""
    import bleach

    text = element.decode() if isinstance(element, bytes) else str(element)
    styles = [_styler_css(m.group(1)) for m in _STYLE_BLOCK.finditer(text)]
    text = _STYLE_BLOCK.sub("", text)
    cleaned = bleach.clean(text, tags=ALLOWED_TAGS, attributes=_attribute, protocols=ALLOWED_PROTOCOLS,
                           css_sanitizer=_css_sanitizer(), strip=True, strip_comments=True)
    kept = "".join(f"<style>\n{css}\n</style>" for css in styles if css)
    return kept + cleaned
