"""What is wrong with an input, found before any work: every problem collected, one line each, and refused together
(the runner's front door turns them into exit code 2, :func:`unlearnkit.runner.door.before_kernel`). A check that
finds one problem raises a ValueError with one line; one that finds several raises :class:`Problems`."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator


class Problems(ValueError):
    """Several problems found at once, one line each (``lines``)."""

    def __init__(self, lines: Iterable[str]):
        self.lines = list(dict.fromkeys(lines))
        super().__init__("\n".join(self.lines))


def problem_lines(exc: BaseException) -> list[str]:
    """The lines an exception says: each of :class:`Problems`, else its message's first line (a library's message may
    run on; the line is what a user reads)."""
    if isinstance(exc, Problems):
        return list(exc.lines)
    text = str(exc).strip() or type(exc).__name__
    return [text.splitlines()[0]]


class Collected:
    """Problems gathered from several checks: ``with found.check(): ...`` records what a check raises and goes on;
    :meth:`raise_any` raises them all as one :class:`Problems`."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    @contextlib.contextmanager
    def check(self, prefix: str = "") -> Iterator[None]:
        try:
            yield
        except (ValueError, FileNotFoundError) as exc:
            self.lines += [f"{prefix}{line}" for line in problem_lines(exc)]

    def raise_any(self) -> None:
        if self.lines:
            raise Problems(self.lines)
