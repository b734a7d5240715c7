"""benchmarks/workbook_profile.py on executed notebooks made by hand: the kernel start and import seconds of a
notebook, and the before/after comparison of two run stores (notebook 02's runs as one span)."""

from __future__ import annotations

import importlib.util
import json
import sys

from unlearnkit import paths


def _load_benchmark():
    path = paths.ROOT / "benchmarks" / "workbook_profile.py"
    spec = importlib.util.spec_from_file_location("workbook_profile", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _notebook(folder, stem, started, cells, outside):
    """An executed notebook: ``cells`` (kind, seconds) run back to back from ``started``, papermill's duration
    ``outside`` seconds longer than the cells', and the runner's timing record."""
    wall = sum(seconds for _, seconds in cells) + outside
    nb = {"metadata": {"papermill": {"duration": wall},
                       "unlearnkit": {"timing": {"started": started, "wall_s": wall, "cpu_s": wall, "cores": 1,
                                                 "stations": {"training": 0.0, "generation": 0.0,
                                                              "scoring": 0.0, "other": wall}}}},
          "cells": [{"cell_type": kind, "source": "", "metadata": {"papermill": {"duration": seconds}}}
                    for kind, seconds in cells]}
    (folder / f"{stem}.ipynb").write_text(json.dumps(nb))


def test_start_seconds_are_papermills_time_outside_the_cells_and_the_import_cell(tmp_path):
    bench = _load_benchmark()
    _notebook(tmp_path, "00_tour", 0.0, [("markdown", 0.0), ("code", 3.0), ("code", 10.0)], outside=4.0)
    timing = bench.notebook_timing(tmp_path / "00_tour.ipynb")
    assert timing["start_s"] == 7.0 and timing["wall_s"] == 17.0


def test_before_and_after_by_notebook_with_notebook_02s_runs_as_one_span(tmp_path):
    bench = _load_benchmark()
    before, after = tmp_path / "before", tmp_path / "after"
    before.mkdir(), after.mkdir()
    _notebook(before, "01_finetune", 0.0, [("code", 100.0)], outside=0.0)
    _notebook(before, "02_unlearning_ga", 100.0, [("code", 50.0)], outside=0.0)
    _notebook(before, "02_unlearning_npo", 100.0, [("code", 80.0)], outside=0.0)  # side by side with ga
    _notebook(after, "01_finetune", 0.0, [("code", 75.0)], outside=0.0)
    _notebook(after, "02_unlearning_ga", 75.0, [("code", 40.0)], outside=0.0)
    _notebook(after, "02_unlearning_npo", 115.0, [("code", 20.0)], outside=0.0)  # after ga
    rows = {r["notebook"]: r for r in bench.compare_table(bench.profile_table(before), bench.profile_table(after))}
    assert rows["01_finetune"]["ratio"] == 0.75
    assert rows["02 (2 runs)"]["before_s"] == 80.0 and rows["02 (2 runs)"]["after_s"] == 60.0
    whole = rows["all notebooks, elapsed"]
    assert (whole["before_s"], whole["after_s"], whole["ratio"]) == (180.0, 135.0, 0.75)
