"""The quote registry (``docs/claims.yaml``): every claim the workbook tests, as its paper states it.

A claim is a record: the paper (with its arXiv id), the section, a **verbatim quote** of the sentence tested, the
workbook's reading of it, the **effect quantity** on the paper's own scale with the **side** of its null on which the
paper puts it, the **minimal effect** that counts (with its reason), the unit, the **preconditions** under which it is
testable, and what the former seed 0 showed (the registry was written knowing it). A claim whose ``status`` says why
it cannot be tested here (and what testing it would cost) is listed, never judged; a number without a claim is a
measurement, shown in its notebook and never counted. :mod:`unlearnkit.claims.judge` reads a claim's effect with this
record; docs/metrics.md §8.3 states the rule.

Every claim can fail: each states the range its effect can take (``effect.range: [lo, hi]``, null for an unbounded
end, never null on a scale that is bounded: a share, an AUC, a correlation, a scale whose bounds it names), and an
entry whose consistent or inconsistent region (beyond the minimal effect on either side of no effect) lies outside
that range is refused at load (:func:`reachable`). A minimal effect of 0 is refused too: with it, a seed an epsilon
either side of no effect is consistent or inconsistent, so every seed near the boundary is a coin flip.

The file is data: read with ``yaml.safe_load``, checked field by field, never executed. For the three papers whose full
text lies in ``../shared/papers`` (:data:`unlearnkit.paths.PAPERS`), :func:`quote_problems` checks each quote against the
file, byte for byte, and the file against the digest the registry records.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from .. import paths
from .judge import SIDES

#: What a claim record may be (absent: a finding).
FINDING, SETUP_CHECK, WORKBOOK_QUESTION = "finding", "setup check", "workbook question"
KINDS = (FINDING, SETUP_CHECK, WORKBOOK_QUESTION)
#: How a multi-unit claim's seed effect is pooled from its units.
POOLS = ("mean", "share")
SCHEMA_VERSION = 1
_REQUIRED = ("id", "paper", "claim", "notebook", "effect", "minimal_effect", "unit")


class RegistryError(ValueError):
    """A registry that is not well formed; the message names the claim and the field, in one line."""


@dataclass(frozen=True)
class Paper:
    key: str
    cite: str
    title: str
    arxiv: str
    file: str | None = None
    sha256: str | None = None


@dataclass(frozen=True)
class Claim:
    """One registered claim (see the module's docstring for the fields)."""

    id: str
    paper: Paper
    section: str
    quote: str | None
    claim: str
    notebook: str
    quantity: str
    scale: str
    side: str
    null: float
    minimal_effect: float
    minimal_reason: str
    unit: str
    #: The values the effect can take, (lo, hi); None: unbounded on that side.
    range: tuple[float | None, float | None] = (None, None)
    kind: str = FINDING
    pool: str | None = None
    preconditions: tuple[str, ...] = ()
    replaces: tuple[str, ...] = ()
    status: str | None = None
    seed0_known: str = ""
    quote_seen_at: str | None = None
    #: Each amendment made after some seeds were judged: its date, the quantity before, why, and what was known.
    amended: tuple[Mapping[str, str], ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)
    #: Why the effect is the workbook's analogue of the paper's quantity (another scale, task or data), or None where it
    #: is the paper's own quantity: every table says so beside the claim.
    analogue: str | None = None

    @property
    def testable(self) -> bool:
        """A finding or setup check with no status saying why it cannot be tested here."""
        return self.status is None and (self.quote is not None or self.kind == SETUP_CHECK)

    @property
    def counted(self) -> bool:
        """Whether the claim is a finding the verdict table counts (setup checks gate, workbook questions are the
        workbook's own)."""
        return self.kind == FINDING and self.testable


@dataclass(frozen=True)
class Registry:
    schema_version: int
    registered: str
    frozen: str
    papers: Mapping[str, Paper]
    claims: tuple[Claim, ...]

    def __getitem__(self, claim_id: str) -> Claim:
        for c in self.claims:
            if c.id == claim_id:
                return c
        raise KeyError(f"no claim {claim_id!r} in {paths.shown(paths.CLAIMS)}")

    def replacing(self, former_key: str) -> Claim | None:
        """The claim that replaces a former finding (its key in docs/findings.json of schema 0), if any."""
        for c in self.claims:
            if former_key in c.replaces:
                return c
        return None


def _fail(where: str, message: str) -> RegistryError:
    return RegistryError(f"{paths.shown(paths.CLAIMS)}: {where}: {message}")


def _number(value: Any, where: str, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _fail(where, f"{name} must be a number, not {value!r}")
    return float(value)


#: Words of a scale that bound it: such an effect's range may not have a null end.
BOUNDED_WORDS = ("0 to 1", "-1 to 1", "to 100", "auc", "correlation", "pearson", "share of questions",
                 "share of greedy-safe", "share of pairs", "share of runs")


def reachable(low: float | None, high: float | None, side: str, null: float, minimal: float) -> list[str]:
    """The outcomes a claim's effect cannot reach within its range [low, high] (None: unbounded): consistent needs
    at least ``minimal`` from ``null`` on the paper's side (beyond it where ``minimal`` is 0), inconsistent as much on
    the other side (:func:`unlearnkit.claims.judge.outcome_of`)."""
    def beyond(bound: float | None, edge: float, up: bool) -> bool:
        if bound is None:
            return True
        return (bound > edge if up else bound < edge) or (bound == edge and minimal > 0)

    toward_high = side == "above"
    consistent = beyond(high, null + minimal, True) if toward_high else beyond(low, null - minimal, False)
    inconsistent = beyond(low, null - minimal, False) if toward_high else beyond(high, null + minimal, True)
    return [name for name, ok in (("consistent", consistent), ("inconsistent", inconsistent)) if not ok]


def _range(effect: Mapping[str, Any], where: str, side: str, null: float, minimal: float):
    raw = effect.get("range", "missing")
    if raw == "missing":
        raise _fail(where, "effect needs its range [lo, hi] (null for an unbounded end): every claim must be able to fail")
    if not isinstance(raw, Sequence) or isinstance(raw, str) or len(raw) != 2:
        raise _fail(where, f"effect range {raw!r}: a list [lo, hi]")
    low, high = (None if v is None else _number(v, where, "effect range") for v in raw)
    if any(w in str(effect["scale"]).lower() for w in BOUNDED_WORDS) and (low is None or high is None):
        raise _fail(where, f"effect range {raw!r}: the scale {effect['scale']!r} is bounded, so neither end may be null")
    if low is not None and high is not None and not low < high:
        raise _fail(where, f"effect range {raw!r}: lo must be below hi")
    if (low is not None and null < low) or (high is not None and null > high):
        raise _fail(where, f"effect no_effect {null:g} lies outside its range {raw!r}")
    unreachable = reachable(low, high, side, null, minimal)
    if unreachable:
        raise _fail(where, f"cannot come out {' or '.join(unreachable)}: with no effect {null:g}, side {side} and "
                           f"minimal effect {minimal:g}, that region lies outside the range {raw!r}")
    return low, high


def _claim(raw: Mapping[str, Any], papers: Mapping[str, Paper]) -> Claim:
    where = f"claim {raw.get('id', '?')!r}"
    missing = [k for k in _REQUIRED if k not in raw]
    if missing:
        raise _fail(where, f"missing {', '.join(missing)}")
    if raw["paper"] not in papers:
        raise _fail(where, f"paper {raw['paper']!r} is not one of the registry's papers")
    kind = raw.get("kind", FINDING)
    if kind not in KINDS:
        raise _fail(where, f"kind {kind!r}: one of {', '.join(KINDS)}")
    effect, minimal = raw["effect"], raw["minimal_effect"]
    if not isinstance(effect, Mapping) or not {"quantity", "scale", "side", "no_effect"} <= set(effect):
        raise _fail(where, "effect needs quantity, scale, side and no_effect")
    if effect["side"] not in SIDES:
        raise _fail(where, f"effect side {effect['side']!r}: one of {', '.join(SIDES)}")
    if not isinstance(minimal, Mapping) or not {"value", "reason"} <= set(minimal) or not str(minimal["reason"]).strip():
        raise _fail(where, "minimal_effect needs a value and its reason")
    value = _number(minimal["value"], where, "minimal_effect value")
    if value < 0:
        raise _fail(where, f"minimal_effect value {value} is negative")
    if value == 0:
        raise _fail(where, "minimal_effect value 0: every seed would be a coin flip at no effect; give the smallest "
                           "distance from it that counts, on either side")
    null = _number(effect["no_effect"], where, "effect no_effect")
    bounds = _range(effect, where, str(effect["side"]), null, value)
    quote, status = raw.get("quote"), raw.get("status")
    if kind == FINDING and not quote and not status:
        raise _fail(where, "a finding needs its verbatim quote (no quote, no finding: give a status saying why)")
    pool = raw.get("pool")
    if pool is not None and pool not in POOLS:
        raise _fail(where, f"pool {pool!r}: one of {', '.join(POOLS)}")
    amended = raw.get("amended") or ()
    if not isinstance(amended, Sequence) or isinstance(amended, str) or not all(
            isinstance(a, Mapping) and {"date", "before", "why", "known"} <= set(a) for a in amended):
        raise _fail(where, "amended is a list of {date, before, why, known}: an amendment says what was known")
    analogue = raw.get("analogue")
    if analogue is not None and (not isinstance(analogue, str) or not analogue.strip()):
        raise _fail(where, "analogue is the reason the quantity is the workbook's analogue of the paper's, in words")
    known = {*_REQUIRED, "kind", "section", "quote", "quote_seen_at", "replaces", "pool", "preconditions", "status",
             "seed0_known", "amended", "analogue"}
    return Claim(str(raw["id"]), papers[raw["paper"]], str(raw.get("section") or ""), quote, str(raw["claim"]),
                 str(raw["notebook"]), str(effect["quantity"]), str(effect["scale"]), str(effect["side"]),
                 null, value, str(minimal["reason"]), str(raw["unit"]), bounds, kind,
                 pool, tuple(str(p) for p in raw.get("preconditions") or ()),
                 tuple(str(k) for k in raw.get("replaces") or ()), status, str(raw.get("seed0_known", "")),
                 raw.get("quote_seen_at"), tuple({k: str(v) for k, v in a.items()} for a in amended),
                 {k: v for k, v in raw.items() if k not in known}, analogue)


def parse(data: Any) -> Registry:
    """A registry from the mapping ``yaml.safe_load`` gives (:class:`RegistryError` on anything malformed)."""
    if not isinstance(data, Mapping) or "claims" not in data or "papers" not in data:
        raise _fail("top level", "needs papers and claims")
    if data.get("schema_version") != SCHEMA_VERSION:
        raise _fail("top level", f"schema_version {data.get('schema_version')!r}; this code reads {SCHEMA_VERSION}")
    papers = {}
    for key, p in data["papers"].items():
        if not isinstance(p, Mapping) or not {"cite", "title", "arxiv"} <= set(p):
            raise _fail(f"paper {key!r}", "needs cite, title and arxiv")
        papers[key] = Paper(key, str(p["cite"]), str(p["title"]), str(p["arxiv"]), p.get("file"), p.get("sha256"))
    claims = tuple(_claim(c, papers) for c in data["claims"])
    ids = [c.id for c in claims]
    doubled = sorted({i for i in ids if ids.count(i) > 1})
    if doubled:
        raise _fail("claims", f"ids registered twice: {', '.join(doubled)}")
    replaced = [k for c in claims for k in c.replaces]
    doubled = sorted({k for k in replaced if replaced.count(k) > 1})
    if doubled:
        raise _fail("claims", f"former findings replaced twice: {', '.join(doubled)}")
    return Registry(SCHEMA_VERSION, str(data.get("registered", "")), str(data.get("frozen", "")), papers, claims)


def read(path: str | Path | None = None) -> Registry:
    """The registry in ``path`` (default: docs/claims.yaml)."""
    path = Path(path) if path is not None else paths.CLAIMS
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        raise RegistryError(f"{paths.shown(path)} is not valid YAML: {str(e).splitlines()[0]}") from None
    return parse(data)


@lru_cache(maxsize=1)
def load() -> Registry:
    """The committed registry, read once."""
    return read()


def _paper_texts(paper: Paper, folder: Path) -> Sequence[str]:
    """The pieces of a paper's full text a quote must lie within: its lines, or, for the one-line JSON file, its
    abstract and each section's content."""
    raw = (folder / str(paper.file)).read_text(encoding="utf-8")
    if raw.lstrip().startswith("{"):
        doc = json.loads(raw)
        return [str(doc.get("abstract", ""))] + [str(s.get("content", "")) for s in doc.get("sections", [])]
    return raw.splitlines()


def quote_problems(registry: Registry, folder: str | Path | None = None) -> list[str]:
    """Every quote of a paper whose full text lies in ``folder`` (default :data:`paths.PAPERS`) that is not a verbatim
    substring of one line (or JSON section) of it, and every such file whose digest differs from the registry's."""
    folder = Path(folder) if folder is not None else paths.PAPERS
    problems = []
    texts: dict[str, Sequence[str]] = {}
    for key, paper in registry.papers.items():
        if not paper.file:
            continue
        path = folder / paper.file
        if not path.exists():
            problems.append(f"paper {key}: {paper.file} is not in {folder}")
            continue
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        if paper.sha256 and digest != paper.sha256:
            problems.append(f"paper {key}: {paper.file} has sha256 {digest}, the registry records {paper.sha256}")
        texts[key] = _paper_texts(paper, folder)
    for c in registry.claims:
        if c.quote and c.paper.key in texts and not any(c.quote in t for t in texts[c.paper.key]):
            problems.append(f"claim {c.id}: its quote is not verbatim in {c.paper.file}: {c.quote[:80]!r}...")
    return problems
