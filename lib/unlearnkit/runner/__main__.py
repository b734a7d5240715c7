"""``python -m unlearnkit.runner ...``: the runner's command line (:func:`unlearnkit.runner.cli.main`)."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
