"""``python -m unlearnkit.report build --profile default [--seed S]`` writes report/<profile>/ (report/<profile>/seed-<S>/
for a seed other than the profile's own); ``... readme [--check]`` rewrites (or checks) README's results section from
docs/findings.json."""

from __future__ import annotations

import argparse
import sys
import time

from .. import config, paths
from . import build, external_resources, write_readme


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m unlearnkit.report", description=__doc__)
    parser.add_argument("target", choices=["build", "readme"])
    parser.add_argument("--profile", default=config.BASE_PROFILE)
    parser.add_argument("--seed", type=int, default=None, help="build: the training seed (default: the profile's)")
    parser.add_argument("--check", action="store_true", help="readme: fail if the section is out of date")
    args = parser.parse_args(argv)
    if args.target == "readme":
        if write_readme(check=args.check):
            print("README results section: up to date" if args.check else "README results section written")
            return 0
        print("README's results section differs from docs/findings.json: run 'make readme'", file=sys.stderr)
        return 1
    started = time.time()
    try:
        params = config.Params.load(args.profile, **({} if args.seed is None else {"seed": args.seed}))
    except (ValueError, KeyError, TypeError) as exc:
        print(exc, file=sys.stderr)
        return 2
    try:
        index = build(params)
    except FileNotFoundError as exc:
        print(exc, file=sys.stderr)
        return 1
    loads = sorted({url for page in index.parent.glob("*.html") for url in external_resources(page.read_text())})
    if loads:
        print(f"warning: the report would load from the network: {', '.join(loads)}", file=sys.stderr)
    pages = len(list(index.parent.glob("*.html")))
    print(f"report of {pages} pages in {time.time() - started:.0f} s: {index.relative_to(paths.ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
