"""Training seeds: ``seed S`` (every notebook before the findings notebook, for one seed, resumable), ``aggregate``
(the findings notebook over the seeds present) and ``seeds S1 S2 ...`` (both, the seeds side by side)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .. import config, paths
from .checks import checked_params, plan, prepare_stand_ins, set_overrides
from .door import AGGREGATE_CHECKS, before_kernel
from .execute import DEFAULT_TIMEOUT_S, run
from .lines import Refused, project_relative, run_label


def run_seed(profile: str, seed: int, overrides: dict[str, Any], timeout: int = DEFAULT_TIMEOUT_S,
             log: bool = False) -> int:
    """Every notebook before the findings notebook, for training seed ``seed`` of ``profile`` (with ``overrides``),
    each skipped where it already ran with the same commit and parameters: one seed's work, resumable. ``log``
    copies the runner's lines to ``runs/<profile>/seed-<s>/runner.log`` (seeds run side by side print there as
    they go). Returns 0, or 1 when a notebook failed."""
    import contextlib

    from papermill.exceptions import PapermillExecutionError

    from .. import runs

    checked = plan("all", profile, {**overrides, "seed": seed}, skip=(runs.FINDINGS,))
    logfile = paths.writable(runs.store(checked.params) / "runner.log", "a seed's runner log")
    logfile.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as stack:
        if log:
            handle = stack.enter_context(open(logfile, "a", buffering=1))
            stack.enter_context(contextlib.redirect_stdout(_Tee(sys.stdout, handle)))
        prepare_stand_ins(checked.params)
        stack.enter_context(runs.seed_at_work(checked.params))  # notebook 10 elsewhere leaves this seed out meanwhile
        try:
            for notebook in checked.notebooks:
                run(notebook, checked.params, checked.own, timeout, checked.changed, skip_done=True)
        except PapermillExecutionError as exc:
            print(f"{run_label(checked.params)} notebook failed in cell {exc.exec_count}: {exc.ename}: {exc.evalue}; see "
                  f"its executed copy under {project_relative(runs.store(checked.params) / 'failed')}/ (the last good one is "
                  "kept)", flush=True)
            return 1
    return 0


class _Tee:
    """A stream that writes to several (the terminal and a seed's log)."""

    def __init__(self, *streams):
        self.streams = streams

    def write(self, text: str) -> int:
        for stream in self.streams:
            stream.write(text)
        return len(text)

    def flush(self) -> None:
        for stream in self.streams:
            stream.flush()


#: The most seeds one command takes (a range such as 0-100000000000 used to exhaust memory).
MAX_SEEDS = 1000


def _seed_list(text: list[str]) -> list[int]:
    """Seeds as the command line gives them: ``0 1 2`` or ``0-5`` (both ends included)."""
    seeds: list[int] = []
    for word in text:
        low, sep, high = word.partition("-") if not word.startswith("-") else (word, "", "")
        try:
            first, last = (int(low), int(high)) if sep else (int(word), int(word))
        except ValueError:
            raise Refused(f"a seed is a whole number or a range like 0-5, got {word!r}") from None
        if not 0 <= first <= last < 2**32 or last - first >= MAX_SEEDS or len(seeds) + last - first >= MAX_SEEDS:
            raise Refused(f"seeds {word!r}: whole numbers from 0 to 2^32 - 1, in order, at most {MAX_SEEDS} of them "
                          "in one command")
        seeds += list(range(first, last + 1))
    if not seeds:
        raise Refused("name at least one seed")
    return list(dict.fromkeys(seeds))


def cmd_seed(args: argparse.Namespace) -> int:
    overrides = set_overrides(args)
    if "seed" in overrides:
        raise Refused("the seed is the command's argument (runner seed 3), not --set seed=...")
    [seed] = _seed_list([args.seed])
    return run_seed(args.profile, seed, overrides, args.timeout)


def aggregate(profile: str, overrides: dict[str, Any], timeout: int = DEFAULT_TIMEOUT_S) -> int:
    """The findings notebook, which judges every claim over the training seeds present under runs/<profile>/ or
    committed under results/<profile>/ (a fresh clone re-judges the committed seeds without training); on the default
    profile, then the README's results section from the summary it wrote (``make readme``)."""
    from papermill.exceptions import PapermillExecutionError

    from .. import runs

    if profile == config.BASE_PROFILE:
        from ..claims import freeze

        try:  # a missing or altered frozen registry is refused first, in one line, before any work
            if freeze.read() is None:
                raise freeze.FreezeError(f"{project_relative(freeze.FROZEN)} is missing: the {profile} profile's "
                                         "claims are judged on the frozen registry (#58); restore it from git")
        except freeze.FreezeError as exc:
            raise Refused(str(exc)) from None
    checked = plan(runs.FINDINGS[:2], profile, overrides)
    before_kernel(checked.params, AGGREGATE_CHECKS)
    try:
        run(checked.notebooks[0], checked.params, checked.own, timeout, checked.changed)
    except PapermillExecutionError as exc:
        print(f"\nnotebook failed in cell {exc.exec_count}: {exc.ename}: {exc.evalue}", file=sys.stderr)
        return 1
    if profile == config.BASE_PROFILE and not overrides:
        from .. import report

        report.write_readme()
        print("README results section written from docs/findings.json")
    return 0


def cmd_aggregate(args: argparse.Namespace) -> int:
    return aggregate(args.profile, set_overrides(args), args.timeout)


def cmd_freeze(args: argparse.Namespace) -> int:
    """docs/claims.frozen.json from the claims judged over the exploratory seeds (#56 item 9): once, never rewritten."""
    from .. import provenance
    from ..claims import extractors as effects
    from ..claims import freeze

    if args.profile != config.BASE_PROFILE:
        raise Refused(f"the registry is frozen on the {config.BASE_PROFILE} profile's seeds, not on {args.profile!r}")
    seeds = _seed_list(args.seeds)
    if freeze.FROZEN.exists():
        raise Refused(f"{freeze.FROZEN.name} exists: the registry is frozen once (remove it by hand, and say why, "
                      "to freeze again)")
    claims = effects.judge_claims(args.profile, seeds)
    document = freeze.freeze(claims, provenance.git_revision() or "unknown", seeds)
    print(f"[{args.profile}] froze {len(document['entries'])} registry entries and {len(document['effects'])} claims' "
          f"effects on seeds {', '.join(map(str, seeds))} at {document['revision'][:10]} into {project_relative(freeze.FROZEN)}")
    return 0


def cmd_seeds(args: argparse.Namespace) -> int:
    """Each seed's notebooks (:func:`run_seed`), the seeds side by side in up to ``jobs`` worker processes (each with
    its share of the cores), then the findings notebook over every seed present."""
    from .. import runs, workers

    overrides = set_overrides(args)
    if "seed" in overrides:
        raise Refused("the seeds are the command's arguments (runner seeds 0 1 2), not --set seed=...")
    seeds = _seed_list(args.seeds)
    params = checked_params(args.profile, overrides)  # refused here, once, before any seed starts
    for seed in seeds:
        checked_params(args.profile, {**overrides, "seed": seed})
    count = workers.workers_for(params.jobs, len(seeds))
    logs = runs.profile_dir(args.profile) / f"{runs.SEED_PREFIX}<s>" / "runner.log"
    print(f"[{args.profile}] seeds {', '.join(map(str, seeds))}: {count} side by side; each seed's progress in "
          f"{project_relative(logs)}", flush=True)
    codes = workers.side_by_side(run_seed, [(args.profile, seed, overrides, args.timeout, count > 1)
                                           for seed in seeds], params.jobs, desc="seeds")
    workers.release_workers()
    failed = [seed for seed, code in zip(seeds, codes) if code]
    if failed:
        print(f"[{args.profile}] seed(s) {', '.join(map(str, failed))} failed (their runner.log says where); the "
              f"findings are judged over the seeds that finished", file=sys.stderr, flush=True)
    code = aggregate(args.profile, overrides, args.timeout)
    return 1 if failed else code
