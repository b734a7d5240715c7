"""What a declared parameter's value may be: :class:`Constraint` and its builders (ranges, enumerations, lists),
and the bounds the fields of :class:`~unlearnkit.config.Params` share."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Constraint:
    """What a parameter's value must be, where a wrong value would give a wrong result rather than an error:
    ``text`` for the message (\"in (0, 0.5]\"), ``test`` on the value."""

    text: str
    test: Callable[[Any], bool]
    choices: tuple[str, ...] = ()  # the allowed values of an enumeration, which the library's own lists must match

    def holds(self, value: Any) -> bool:
        try:
            return bool(self.test(value))
        except TypeError:
            return False


def is_number(value: Any) -> bool:
    """A finite int or float (not a bool): NaN and .inf pass no range check, since a notebook cannot use them."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def between(low: float, high: float, low_open: bool = False, high_open: bool = False) -> Constraint:
    def test(v: Any) -> bool:
        return is_number(v) and (low < v if low_open else low <= v) and (v < high if high_open else v <= high)

    def shown(x: float) -> str:
        return str(int(x)) if float(x).is_integer() else f"{x:g}"

    return Constraint(f"in {'(' if low_open else '['}{shown(low)}, {shown(high)}{')' if high_open else ']'}", test)


def above(low: float, inclusive: bool = False) -> Constraint:
    return Constraint(f"{'>=' if inclusive else '>'} {low:g}",
                      lambda v: is_number(v) and (v >= low if inclusive else v > low))


def at_most(high: float) -> Constraint:
    return Constraint(f"<= {high:g}", lambda v: is_number(v) and v <= high)


def one_of(*choices: str) -> Constraint:
    return Constraint(f"one of {', '.join(choices)}", lambda v: v in choices, tuple(choices))


def or_null(c: Constraint) -> Constraint:
    return Constraint(f"null or {c.text}", lambda v: v is None or c.holds(v))


def each(c: Constraint, non_empty: bool = False) -> Constraint:
    return Constraint(f"a{' non-empty' if non_empty else ''} list of values {c.text}",
                      lambda v: (bool(v) or not non_empty) and all(c.holds(x) for x in v))


#: A count: at least 1 and at most a million (a value that would hang or exhaust memory is refused, not run).
COUNT = between(1, 1_000_000)
NON_NEGATIVE, POSITIVE = above(0, inclusive=True), above(0)
#: Tighter bounds where a count multiplies work or memory: samples per question (the paper profile takes 1,024),
#: authors of the synthetic corpus, a batch, generated tokens.
#: authors: the generator's own range (data.synthetic.MIN_AUTHORS, MAX_AUTHORS; a test holds them equal).
SAMPLES, AUTHORS, BATCH, TOKENS = between(1, 100_000), between(10, 400), between(1, 65_536), between(1, 32_768)
QUESTIONS = between(10, 20)  # questions per synthetic author: data.synthetic's MIN/MAX_QUESTIONS_PER_AUTHOR
PROBABILITY, LEVEL = between(0, 1), between(0, 0.5, low_open=True)
SCHEDULES = one_of("linear", "cosine", "constant")
POSITIONS = one_of("answer", "all", "sampled")
QUANT = one_of("nf4", "int4", "int8")
POOL_VARIANT = one_of("forget", "paraphrased", "perturbed", "heldout")
SEED = between(0, 2**32 - 1)  # numpy's seeds; a negative seed used to pass here and fail in notebook 01
