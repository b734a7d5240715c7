"""The registry of unlearning methods: one :class:`Method` per name, each defined in its own module of
:mod:`unlearnkit.unlearning.methods` (as open-unlearning keeps one trainer file per method).

A method is its two terms and what they need: the forget term, the retain term (or none), the keyword parameters of
:class:`~unlearnkit.unlearning.UnlearningLoss` it reads, whether it compares against a frozen reference model, which
sub-batches beyond ``forget`` and ``retain`` its batches must carry, and whether objective capping applies to it.
What every method shares (the reference model, the entropy term, capping, the weights, the forward cache, the logs)
stays in :class:`~unlearnkit.unlearning.UnlearningLoss`; a term is a function of the :class:`~.loss.Step` it is
computed in.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

import torch

from .. import config
from ..config import Constraint
from .data import BATCH_PARTS
from .shared import CAP_ON

#: A term of a loss: its value on one step (a scalar tensor), computed from the step's forward passes.
Term = Callable[[Any], torch.Tensor]  # of the step (loss.Step) it is computed in


@dataclass(frozen=True)
class Option:
    """A keyword parameter of ``UnlearningLoss``: its default, what a given value must be and how it is stored
    (``convert``). An option that is also a profile key (``beta``, ``rmu_layer``, ...) is read off the key's one
    declaration (:func:`declared`): its rule is the profile key's (``config.CONSTRAINTS``), so a value the front door
    lets through is one the loss takes; an option only the loss has (``npo_retain_term``) declares its own, of the
    same :class:`~unlearnkit.config.Constraint` type."""

    name: str
    default: Any
    convert: Callable[[Any], Any] | None = None
    constraint: Constraint | None = None
    doc: str = ""

    @property
    def rule(self) -> Constraint | None:
        """What a value must be: the profile key's constraint for an option that is a parameter, else its own."""
        return config.CONSTRAINTS.get(self.name, self.constraint)

    def value(self, given: Any) -> Any:
        rule = self.rule
        if rule is not None and not rule.holds(given):
            raise ValueError(f"{self.name} must be {rule.text}, got {given!r}")
        return given if self.convert is None else self.convert(given)


def positive(name: str, default: float, doc: str = "") -> Option:
    return Option(name, default, float, config.above(0), doc)


def number(name: str, default: float, doc: str = "") -> Option:
    return Option(name, default, float, Constraint("a number", config.is_number), doc)


def non_negative(name: str, default: float, doc: str = "", kind: type = float) -> Option:
    return Option(name, default, kind, config.above(0, inclusive=True), doc)


def one_of(name: str, default: str, choices: tuple[str, ...], doc: str = "") -> Option:
    return Option(name, default, None, config.one_of(*choices), doc)


def flag(name: str, default: bool, doc: str = "") -> Option:
    return Option(name, default, bool, Constraint("true or false", lambda v: isinstance(v, bool)), doc)


def count(name: str, default: int, doc: str = "") -> Option:
    return Option(name, default, int, config.COUNT, doc)


#: How a profile key's value is stored, by its annotation (a string, or a key that may be null, is stored as given).
_CONVERT: dict[str, Callable[[Any], Any]] = {"float": float, "int": int}


@cache
def _profile_defaults() -> dict[str, Any]:
    return config.profile_layer(config.BASE_PROFILE)


def declared(name: str, choices: tuple[str, ...] = ()) -> Option:
    """The option that is profile key ``name``, read off its one declaration, the field of
    :class:`~unlearnkit.config.Params`: its help, its constraint, its type (``convert``: float or int) and, as its
    default, the default profile's value (default.yaml gives every parameter's value: Params declares none in code,
    so the loss's defaults are the default profile's). ``choices``: the library's own list of an enumeration's
    values (:data:`~.shared.CAP_ON`), which must be the key's."""
    annotation = str(config.Params.__dataclass_fields__[name].type)
    constraint = config.CONSTRAINTS.get(name)
    if choices and (constraint is None or constraint.choices != tuple(choices)):
        raise ValueError(f"option {name!r}: the library takes {', '.join(choices)}, the profile key "
                         f"{constraint.text if constraint else 'any value'}")
    return Option(name, _profile_defaults()[name], _CONVERT.get(annotation), constraint, config.HELP[name])


#: Options more than one method reads (each method names those it uses in ``Method.parameters``).
SHARED_OPTIONS: tuple[Option, ...] = (
    Option("ref_model", None, doc="the frozen reference π_ref (a model, 'disable_adapters' or None)"),
    declared("beta"),
    declared("retain_weight"),
    declared("cap_delta"),
    declared("cap_on", CAP_ON),
)


@dataclass(frozen=True)
class Method:
    """One unlearning method.

    ``forget`` / ``retain``: its terms (``retain`` None: no retain term; ``retain_switch`` names a boolean option
    that turns it off). ``parameters``: every option of ``UnlearningLoss`` it reads beyond the common ones, in the
    order its run record lists them; ``options``: those it introduces itself. ``needs_reference``: it compares
    against π_ref. ``batch_parts``: sub-batches it needs beyond ``forget`` and ``retain`` (:data:`BATCH_PARTS`).
    ``cappable``: objective capping applies (its forget term reads ``cap_delta``). ``layer_parameter``: the option
    naming the decoder layer whose output its terms read (the trained model's forward passes record it).
    ``check(loss, model)``: raise before the first step when ``model`` cannot be trained with it.
    ``forget_reads`` / ``retain_reads``: the sub-batches each term sends through the trained model,
    ``forget_reference`` / ``retain_reference`` through π_ref (:func:`step_parts`; tests hold the terms to them).
    ``source``: where open-unlearning (locuslab/open-unlearning) defines it; ``paper``: who proposed it.
    """

    name: str
    summary: str
    forget: Term
    retain: Term | None = None
    parameters: tuple[str, ...] = ()
    options: tuple[Option, ...] = ()
    needs_reference: bool = False
    batch_parts: tuple[str, ...] = ()
    cappable: bool = False
    retain_switch: str | None = None
    layer_parameter: str | None = None
    check: Callable[[Any, Any], None] | None = None
    forget_reads: tuple[str, ...] = ("forget",)
    retain_reads: tuple[str, ...] = ("retain",)
    forget_reference: tuple[str, ...] = ()
    retain_reference: tuple[str, ...] = ()
    source: str = ""
    paper: str = ""

    def has_retain_term(self, options: Mapping[str, Any]) -> bool:
        """Whether the loss has a retain term with these option values (``options[retain_switch]``)."""
        if self.retain is None:
            return False
        return self.retain_switch is None or bool(options[self.retain_switch])

    def _validate(self, known: Mapping[str, Option]) -> None:
        def need(ok: bool, what: str) -> None:
            if not ok:
                raise ValueError(f"method {self.name!r}: {what}")

        declared = {o.name for o in self.options}
        unknown = [p for p in self.parameters if p not in known and p not in declared]
        need(not unknown, f"parameters {unknown} are neither shared options nor its own")
        need(not (declared - set(self.parameters)), "its own options must be among its parameters")
        need(("ref_model" in self.parameters) == self.needs_reference, "ref_model is a parameter iff it needs π_ref")
        need(("retain_weight" in self.parameters) == (self.retain is not None),
             "retain_weight is a parameter iff it has a retain term")
        need({"cap_delta", "cap_on"} <= set(self.parameters) if self.cappable
             else not {"cap_delta", "cap_on"} & set(self.parameters), "cap_delta and cap_on iff cappable")
        need(self.retain_switch is None or self.retain_switch in self.parameters, "its retain switch is a parameter")
        need(self.layer_parameter is None or self.layer_parameter in self.parameters, "its layer is a parameter")
        need(set(self.batch_parts) <= set(BATCH_PARTS), f"batch parts must be among {', '.join(BATCH_PARTS)}")
        need(self.needs_reference or not (self.forget_reference or self.retain_reference),
             "only a method with π_ref sends sub-batches through it")


#: Every method by name, in the order they were registered (the order of :data:`unlearning.METHODS`).
REGISTRY: dict[str, Method] = {}
#: Every keyword option of ``UnlearningLoss`` beyond the common ones: the shared ones, then each method's own.
OPTIONS: dict[str, Option] = {o.name: o for o in SHARED_OPTIONS}


def register(method: Method) -> Method:
    """Add ``method`` (and the options it introduces) to the registry; returns it."""
    if method.name in REGISTRY:
        raise ValueError(f"method {method.name!r} is registered already")
    for option in method.options:
        if option.name in OPTIONS and OPTIONS[option.name] != option:
            raise ValueError(f"method {method.name!r} redeclares option {option.name!r}")
    method._validate(OPTIONS)
    REGISTRY[method.name] = method
    OPTIONS.update({o.name: o for o in method.options})
    return method


def method_spec(name: str) -> Method:
    """The registered method ``name``; a ValueError lists the valid ones."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown unlearning method {name!r}; valid methods: {', '.join(REGISTRY)}") from None


def method_table():
    """Every registered method as notebook 02 shows it, from the registry itself: its loss, whether it has a retain
    term and compares against a frozen reference π_ref, its own options with their defaults, the paper and where
    open-unlearning defines it (so a method added to the registry is in the table without an edit)."""
    import pandas as pd

    rows = []
    for m in REGISTRY.values():
        own = ", ".join(f"{o.name} = {o.default!r}" for o in m.options)
        rows.append({"method": m.name, "loss": m.summary, "retain term": "yes" if m.retain is not None else "no",
                     "π_ref": "yes" if m.needs_reference else "no", "its options (default)": own or "none",
                     "paper": m.paper, "open-unlearning": m.source or "not there"})
    return pd.DataFrame(rows).set_index("method")


def option_values(method: Method, settings: Mapping[str, Any]) -> dict[str, Any]:
    """The values of ``method``'s parameters in ``settings``, defaults where it names none."""
    return {p: settings.get(p, OPTIONS[p].default) for p in method.parameters}


def step_parts(settings: Mapping[str, Any]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The sub-batches one step of ``UnlearningLoss(**settings)`` sends through the trained model (each then gets a
    backward) and through the frozen reference, each at most once through each: what a cost estimate counts
    (``benchmarks/paper_cost.py``). The entropy term reads the forget (or, with ``entropy_positions="sampled"``,
    the sampled) and the retain logits when its weight is non-zero."""
    method = method_spec(settings["method"])
    retain = method.has_retain_term(option_values(method, settings))
    trained = list(dict.fromkeys([*method.forget_reads, *(method.retain_reads if retain else ())]))
    reference = list(dict.fromkeys([*method.forget_reference, *(method.retain_reference if retain else ())]))
    for key, weight in (("forget", "lambda_f"), ("retain", "lambda_r")):
        if settings.get(weight):
            if key == "forget" and settings.get("entropy_positions") == "sampled":
                key = "forget_sampled"
            if key not in trained:
                trained.append(key)
    return tuple(trained), tuple(reference)
