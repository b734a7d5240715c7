"""``runner eval``'s progress in the terminal: the kernel notes the start and end of every suite, long step and
station span in a progress log (:func:`unlearnkit.stations.note_progress`), and the runner prints them as they come,
each with its time: a line at the start and end of every suite (with its estimate) and step, and, when a step runs
long, a line every :data:`HEARTBEAT_S` seconds saying what it is doing."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .. import stations

#: At most this many seconds without a line while a step runs: then a line says which step and span it is in.
HEARTBEAT_S = 30.0
#: What the terminal calls the time before the kernel's first event (its start and the notebook's imports).
KERNEL_STARTING = "starting the kernel"
#: How often the runner reads the progress log.
POLL_S = 0.5
#: The progress log's name in the evaluation's folder (kept: when each step started and ended).
PROGRESS_LOG = "progress.jsonl"
#: The station spans' names as the terminal says them.
STATION_WORDS = {"generation": "generating", "scoring": "scoring", "training": "training", stations.WORKERS: "workers"}


def _duration(seconds: float) -> str:
    return f"{seconds / 60:.1f} min" if seconds >= 90 else f"{seconds:.0f} s"


def read_events(log: Path) -> list[dict[str, Any]]:
    """Every event of a progress log, in order (a line cut short at the end is left out)."""
    if not log.exists():
        return []
    events = []
    for line in log.read_text().splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            continue
    return events


def longest_silence(events: Sequence[Mapping[str, Any]], since: float | None = None) -> tuple[float, str]:
    """The longest time between two events of the log (from ``since`` to the first, if given), and the step it
    ended in: the time a terminal that printed every event would have stayed silent."""
    times = [since] if since is not None else []
    times += [e["t"] for e in events]
    if len(times) < 2:
        return 0.0, ""
    gaps = [(b - a, i) for i, (a, b) in enumerate(zip(times, times[1:]))]
    gap, i = max(gaps)
    ended = events[i - (1 if since is not None else 0) + 1]
    return gap, f"{ended['event']} of {ended['step']}" + (f" ({ended['detail']})" if ended.get("detail") else "")


class Forwarder:
    """Prints the events of a progress log as they come (:meth:`poll`), prefixed by ``label`` and the time; suites
    (``suites``) start with their estimate (``estimates``, seconds) and end with their time beside it."""

    def __init__(self, log: Path, label: str, suites: Sequence[str], estimates: Mapping[str, float] | None = None,
                 heartbeat_s: float = HEARTBEAT_S, out=None):
        self.log, self.label, self.suites = log, label, tuple(suites)
        self.estimates = dict(estimates or {})
        self.heartbeat_s, self.out = heartbeat_s, out
        self.offset = 0
        #: The station spans begun and not ended, innermost last: what the step is computing now.
        self.spans: list[tuple[str, float]] = []
        self.last_printed = time.time()
        #: The steps begun and not ended, outermost first: until the kernel's first event, its start and imports.
        self.open_steps: list[tuple[str, float]] = [(KERNEL_STARTING, self.last_printed)]

    def say(self, text: str, when: float | None = None) -> None:
        import sys

        when = time.time() if when is None else when
        print(f"{self.label} {time.strftime('%H:%M:%S', time.localtime(when))} {text}", file=self.out or sys.stdout,
              flush=True)
        self.last_printed = time.time()

    def _event(self, e: Mapping[str, Any]) -> None:
        step, event = e["step"], e["event"]
        if self.open_steps and self.open_steps[0][0] == KERNEL_STARTING:
            self.say(f"kernel ready in {_duration(e['t'] - self.open_steps.pop(0)[1])}", e["t"])
        if step in STATION_WORDS:  # a station span: what the step is doing, said only by a heartbeat
            if event == "start":
                self.spans.append((STATION_WORDS[step] + (f" ({e['detail']})" if e.get("detail") else ""), e["t"]))
            elif self.spans:
                self.spans.pop()
            return
        indent = "  " * (len(self.open_steps) if event == "start" else max(len(self.open_steps) - 1, 0))
        if event == "start":
            self.open_steps.append((step, e["t"]))
            estimate = self.estimates.get(step)
            self.say(f"{indent}{step}: start" + (f" (estimated {_duration(estimate)})" if estimate else ""), e["t"])
            return
        if self.open_steps and self.open_steps[-1][0] == step:
            self.open_steps.pop()
        took = e.get("seconds", 0.0)
        estimate = self.estimates.get(step)
        said = "done" if event == "end" else "failed"
        self.say(f"{indent}{step}: {said} in {_duration(took)}" + (f" (estimated {_duration(estimate)})"
                                                                   if estimate else ""), e["t"])

    def poll(self) -> None:
        """Print the events written since the last poll, and a heartbeat if a step has run ``heartbeat_s`` unsaid."""
        if self.log.exists():
            with open(self.log, "rb") as f:
                f.seek(self.offset)
                chunk = f.read()
            whole = chunk[: chunk.rfind(b"\n") + 1]
            self.offset += len(whole)
            for line in whole.decode("utf-8", "replace").splitlines():
                try:
                    self._event(json.loads(line))
                except (ValueError, KeyError, TypeError):
                    continue
        now = time.time()
        if self.open_steps and now - self.last_printed >= self.heartbeat_s:
            step, since = self.open_steps[-1]
            estimate = self.estimates.get(self.open_steps[0][0])
            suite_in = now - self.open_steps[0][1]
            doing = f", {self.spans[-1][0]} for {_duration(now - self.spans[-1][1])}" if self.spans else ""
            self.say("  " * len(self.open_steps) + f"{step}: {_duration(now - since)} in{doing}"
                     + (f" ({self.open_steps[0][0]} {_duration(suite_in)} of about {_duration(estimate)})"
                        if estimate else ""))


@contextmanager
def forwarded(log: Path, label: str, suites: Sequence[str], estimates: Mapping[str, float] | None = None,
              heartbeat_s: float = HEARTBEAT_S) -> Iterator[Forwarder]:
    """While the block runs, the kernels it starts write their progress to ``log`` (a new file) and a thread prints
    it (:class:`Forwarder`); the last events are printed before the block ends."""
    log.unlink(missing_ok=True)
    forwarder = Forwarder(log, label, suites, estimates, heartbeat_s)
    done = threading.Event()

    def loop() -> None:
        while not done.wait(POLL_S):
            forwarder.poll()

    thread = threading.Thread(target=loop, name="progress", daemon=True)
    before = os.environ.get(stations.PROGRESS_LOG_VARIABLE)
    os.environ[stations.PROGRESS_LOG_VARIABLE] = str(log)  # the kernel inherits it
    thread.start()
    try:
        yield forwarder
    finally:
        done.set()
        thread.join()
        forwarder.poll()
        if before is None:
            os.environ.pop(stations.PROGRESS_LOG_VARIABLE, None)
        else:
            os.environ[stations.PROGRESS_LOG_VARIABLE] = before
