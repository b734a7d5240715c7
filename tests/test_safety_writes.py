"""A received store writes nowhere else, and a full disk destroys nothing (#59 items 1 and 4): a symlink below a seed's
folder (a notebook's folder, figures/, the .running and lock files) leads no write outside the store, and a figure or
an executed notebook cut short by a full disk leaves the last whole file in place. Each test plants the link or the
failing disk and looks at the folder outside (or the old file) first: on the commit before the fix that is what fails."""

from __future__ import annotations

import builtins
import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from unlearnkit import config, paths, runs
from unlearnkit.plots import drawing


def _written(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.fixture
def store(tmp_path, monkeypatch):
    """A run store of its own (runs/) beside a folder outside it, which must stay empty."""
    monkeypatch.setattr(paths, "RUNS", tmp_path / "runs")
    (tmp_path / "outside").mkdir()
    return tmp_path / "runs"


def _smoke_seed(store: Path) -> tuple[config.Params, Path]:
    params = config.Params.load("smoke")
    seed = store / "smoke" / f"seed-{params.seed}"
    seed.mkdir(parents=True)
    return params, seed


def test_a_linked_notebook_folder_below_a_seed_receives_nothing(tmp_path):
    """The probe of #59 as it was run: runs/smoke/seed-0/00_data_tour a link elsewhere, then ``runner 00``."""
    outside = tmp_path / "outside"
    outside.mkdir()
    seed = tmp_path / "runs" / "smoke" / "seed-0"
    seed.mkdir(parents=True)
    (seed / "00_data_tour").symlink_to(outside)
    env = {**os.environ, "UNLEARNKIT_RUNS": str(tmp_path / "runs"), "TQDM_DISABLE": "1"}
    done = subprocess.run([sys.executable, "-m", "unlearnkit.runner", "00", "--profile", "smoke"], env=env,
                          capture_output=True, text=True, timeout=600)
    assert _written(outside) == [], f"written outside the store through the link: {_written(outside)}"
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "symlink" in lines[0] and "00_data_tour" in lines[0], done.stderr
    assert not (seed / "00_data_tour.ipynb").exists()  # refused before any kernel started


def test_a_linked_figures_folder_receives_no_figure(store):
    import matplotlib.pyplot as plt

    params, seed = _smoke_seed(store)
    outside = store.parent / "outside"
    (seed / "figures").symlink_to(outside)
    fig = plt.figure()
    try:
        drawing.save_fig(fig, "00_probe", params)
    except ValueError as exc:
        refused = str(exc)
    else:
        refused = ""
    finally:
        plt.close(fig)
    assert _written(outside) == [], f"a figure written outside the store: {_written(outside)}"
    assert "symlink" in refused and "figures" in refused


@pytest.mark.parametrize("mark", [".running", ".00_data_tour.lock", "models/.base.lock"])
def test_a_linked_lock_or_running_mark_creates_nothing_at_its_target(store, mark):
    """``open(path, "a")`` follows a link: a dangling one made its target."""
    from unlearnkit.runner import execute

    params, seed = _smoke_seed(store)
    outside = store.parent / "outside"
    link = seed / mark
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(outside / "made-by-the-lock")
    take = {".running": lambda: runs.seed_at_work(params),
            ".00_data_tour.lock": lambda: execute.output_lock(seed / "00_data_tour.ipynb"),
            "models/.base.lock": lambda: runs.file_lock(seed / "models" / ".base.lock")}[mark]
    try:
        held = take()
        with held:
            pass
    except ValueError as exc:
        refused = str(exc)
    else:
        refused = ""
    assert _written(outside) == [], f"the lock made a file outside the store: {_written(outside)}"
    assert "symlink" in refused


def test_a_seed_whose_running_mark_is_a_link_is_refused_when_asked_whether_it_runs(store):
    """Asking opened the mark for appending, through a link too (nothing was written there: no vector of its own
    before the fix, but a question that follows a link is refused like a write)."""
    params, seed = _smoke_seed(store)
    outside = store.parent / "outside"
    (outside / "target").write_text("theirs")
    (seed / runs.RUNNING_MARK).symlink_to(outside / "target")
    with pytest.raises(ValueError, match="symlink"):
        runs.in_progress("smoke", params.seed)
    assert (outside / "target").read_text() == "theirs"


class _FillingDisk:
    """Files opened for writing under ``folder`` take ``room`` bytes in all, then fail as a full disk does, midway
    through a write (what is written before the failure stays in the file, as on a real disk)."""

    def __init__(self, folder: Path, room: int, after: int = 0, match: str = ""):
        self.folder, self.room, self.after, self.match = str(folder), room, after, match
        self.opened = 0
        self.real_open = builtins.open

    def open(self, file, mode="r", *args, **kwargs):
        handle = self.real_open(file, mode, *args, **kwargs)
        name = os.fspath(file) if isinstance(file, (str, os.PathLike)) else ""
        if any(m in mode for m in "wxa") and name.startswith(self.folder) and self.match in Path(name).name:
            self.opened += 1
            if self.opened > self.after:
                return _Full(handle, self)
        return handle


class _Full:
    def __init__(self, handle, disk: _FillingDisk):
        self._handle, self._disk = handle, disk

    def write(self, data):
        room = self._disk.room
        if len(data) > room:
            self._handle.write(data[:room])
            self._handle.flush()
            self._disk.room = 0
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self._disk.room -= len(data)
        return self._handle.write(data)

    def __getattr__(self, name):
        return getattr(self._handle, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._handle.close()


def test_a_full_disk_leaves_the_previous_figure_whole(store, monkeypatch):
    import matplotlib.pyplot as plt

    params, seed = _smoke_seed(store)

    def figure(label):
        fig = plt.figure(figsize=(4, 3))
        fig.gca().plot([0, 1, 2], [2, 0, 1], label=label)
        fig.gca().legend()
        return fig

    fig = figure("old")
    path = drawing.save_fig(fig, "00_probe", params)
    plt.close(fig)
    old = path.read_bytes()
    disk = _FillingDisk(path.parent, room=600)
    monkeypatch.setattr(builtins, "open", disk.open)
    fig = figure("new, on a full disk")
    try:
        with pytest.raises(OSError) as failed:
            drawing.save_fig(fig, "00_probe", params)
    finally:
        plt.close(fig)
        monkeypatch.undo()
    assert len(path.read_bytes()) == len(old), f"the previous figure was cut to {len(path.read_bytes())} bytes"
    assert path.read_bytes() == old
    assert failed.value.errno == errno.ENOSPC and failed.value.filename and Path(failed.value.filename) == path
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]  # no temporary file left behind


_TINY = {"cells": [
    {"cell_type": "code", "id": "parameters", "metadata": {"tags": ["parameters"]}, "execution_count": None,
     "outputs": [],
     "source": "profile = 'smoke'\nseed = 0"},
    *({"cell_type": "code", "id": f"cell-{i}", "metadata": {}, "execution_count": None, "outputs": [],
       "source": f"x{i} = {i}\nx{i}"}
      for i in range(4))],
    "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
    "nbformat": 4, "nbformat_minor": 5}


def test_a_full_disk_mid_run_keeps_a_whole_failed_copy_and_names_the_file(store, monkeypatch):
    """papermill writes the executed copy after each cell: a write cut short by a full disk must leave a whole
    notebook in failed/, and the error must name the file it could not write."""
    from unlearnkit.runner import execute

    params, seed = _smoke_seed(store)
    notebook = store.parent / "99_tiny.ipynb"
    notebook.write_text(json.dumps(_TINY))
    out = seed / "99_tiny.ipynb"
    disk = _FillingDisk(seed, room=300, after=3, match=".running")  # the fourth write of the running copy fails
    monkeypatch.setattr(builtins, "open", disk.open)
    try:
        with pytest.raises(OSError) as failed:
            execute.run_notebook(notebook, params, timeout=120, out=out)
    finally:
        monkeypatch.undo()
    copy = execute.failed_copy(out)
    assert copy.exists(), "no failed copy kept"
    json.loads(copy.read_text())  # a whole notebook, not JSON cut short
    assert not out.exists()
    assert failed.value.errno == errno.ENOSPC and failed.value.filename
    assert "99_tiny" in Path(failed.value.filename).name


def test_the_door_refuses_a_link_anywhere_below_a_seed_before_anything_is_written(store):
    """A link deep in a received store (a model's folder a trainer would write into) is refused when the store is
    first named, in one line, before a library writes through it."""
    params, seed = _smoke_seed(store)
    outside = store.parent / "outside"
    (seed / "models" / "base").mkdir(parents=True)
    (seed / "models" / "base" / "checkpoint-1").symlink_to(outside)
    try:
        folder = runs.store(params)  # what a notebook names before a trainer writes its checkpoint there
        (folder / "models" / "base" / "checkpoint-1" / "optimizer.pt").write_bytes(b"state")
    except ValueError as exc:
        refused = str(exc)
    else:
        refused = ""
    assert _written(outside) == [], f"a checkpoint written outside the store: {_written(outside)}"
    assert "\n" not in refused and "runs/smoke/seed-0/models/base/checkpoint-1" in refused
    (seed / "models" / "base" / "checkpoint-1").unlink()
    assert runs.store(params) == seed


def test_a_store_whose_root_is_a_link_is_written_as_usual(tmp_path, monkeypatch):
    moved = tmp_path / "other-disk" / "runs"
    moved.mkdir(parents=True)
    (tmp_path / "runs").symlink_to(moved)
    monkeypatch.setattr(paths, "RUNS", tmp_path / "runs")  # as spelled, not resolved
    params = config.Params.load("smoke")
    with runs.seed_at_work(params):
        runs.atomic_write_text(runs.store(params) / "00_data_tour" / "probe.json", "{}")
    assert (moved / "smoke" / f"seed-{params.seed}" / "00_data_tour" / "probe.json").read_text() == "{}"
