"""Profiles, typed parameters and the notebook runner: layered profiles merge, parameters are typed, source
notebooks are clean and declare the keys they read, and bad input is refused with a clear message."""

from __future__ import annotations

import json

import pytest
from unlearnkit import config, paths, runner


def test_source_notebooks_are_clean_and_declare_the_keys_they_read():
    notebooks = runner.source_notebooks()
    assert [p.stem[:2] for p in notebooks][:3] == ["00", "01", "02"]
    for path in notebooks:
        nb = json.loads(path.read_text())
        assert not runner.notebook_outputs(path), path.name
        assert sum("parameters" in c.get("metadata", {}).get("tags", []) for c in nb["cells"]) == 1, path.name
        assert runner.parameters_in_sync(path), f"{path.name}: run 'make sync-params'"
        declared = runner.declared_keys(nb)
        assert declared[0] == "profile" and len(declared) < len(config.PARAMETER_NAMES) // 2, path.name


def test_every_profile_loads_typed_and_holds_only_its_differences():
    default = config.load_profile("default")
    assert list(default) == list(config.PARAMETER_NAMES)
    for profile in config.profile_names():
        params = config.Params.load(profile)
        assert params.profile == profile and dict(params).keys() == default.keys()
        base = config.profile_base(profile)
        if base is None:
            continue
        layer = config.profile_layer(profile)
        merged_base = config.load_profile(base)
        repeated = [k for k, v in layer.items() if k != "extends" and merged_base[k] == v]
        assert not repeated, f"{profile}.yaml repeats what {base} already says: {repeated}"


def test_a_profile_extends_another_and_overrides_win(tmp_path, monkeypatch):
    import shutil

    for f in paths.PARAMS.glob("*.yaml"):
        (tmp_path / f.name).write_text(f.read_text())
    shutil.copytree(paths.PARAMS / config.RUNS, tmp_path / config.RUNS)  # the named runs, one file each
    (tmp_path / "small-paper.yaml").write_text("extends: paper\nn_samples: 16\n")
    monkeypatch.setattr(paths, "PARAMS", tmp_path)
    params = config.Params.load("small-paper", seed=3)
    assert params.model == "microsoft/phi-1_5" and params.n_samples == 16 and params.seed == 3
    assert params.eval_batch_size == config.Params.load("paper").eval_batch_size
    (tmp_path / "loop.yaml").write_text("extends: loop\n")
    with pytest.raises(ValueError, match="loops"):
        config.load_profile("loop")
    (tmp_path / "typo.yaml").write_text("n_sample: 16\n")
    with pytest.raises(KeyError, match="'n_sample' \\(did you mean n_samples\\?\\) in profile 'typo'.*default.yaml"):
        config.load_profile("typo")


def test_parameters_are_typed_and_unknown_ones_refused():
    with pytest.raises(TypeError, match="'n_samples'.*expected int"):
        config.Params.load("default", n_samples="many")
    with pytest.raises(TypeError, match="'hp_affirmative_prefix'"):
        config.Params.load("default", hp_affirmative_prefix=1)
    with pytest.raises(KeyError, match="n_sample"):
        config.as_params({"n_sample": 3})
    params = config.as_params({"profile": "smoke", "seed": 5})
    assert params.seed == 5 and params.n_samples == config.Params.load("smoke").n_samples
    assert params["seed"] == 5 and params.get("no such key", "fallback") == "fallback"
    with pytest.raises(KeyError, match="no parameter"):
        params["no such key"]
    assert params.replace(seed=6).seed == 6 and params.seed == 5


def test_notebook_params_take_the_profile_and_what_the_cell_changed():
    defaults = config.load_profile("default")
    smoke = config.Params.load("smoke")
    # as the runner injects them: the profile's values of the declared keys
    assert config.notebook_params({"profile": "smoke", "n_samples": smoke.n_samples}) == smoke
    # opened in Jupyter with the profile changed: untouched default values give way to the profile's
    assert config.notebook_params({"profile": "smoke", "n_samples": defaults["n_samples"]}).n_samples == smoke.n_samples
    # an edited value wins
    assert config.notebook_params({"profile": "smoke", "n_samples": 3}).n_samples == 3
    assert config.notebook_params({}).profile == "default"


def test_the_runner_injects_the_declared_keys_of_the_merged_profile():
    notebook = runner.find_notebook("02")
    injected = runner.injected_parameters(notebook, config.Params.load("smoke", beta=0.05), {"method": "npo"}, ["beta"])
    declared = runner.declared_keys(json.loads(notebook.read_text()))
    assert set(injected) == set(declared) | {"method", "beta", config.KEYS_SET} and injected[config.KEYS_SET] == ["beta"]
    assert injected["profile"] == "smoke" and injected["method"] == "npo" and injected["beta"] == 0.05
    assert injected["seed"] == config.Params.load("smoke").seed


def test_unknown_notebook_and_profile_are_refused(capsys):
    with pytest.raises(SystemExit) as exited:
        runner.find_notebook("42")
    assert exited.value.code == 2 and "no single notebook matches '42'" in capsys.readouterr().err
    with pytest.raises(ValueError, match="unknown profile 'huge'.*default"):
        config.load_profile("huge")
    for argv, message in ((["params", "--profile", "huge"], "unknown profile 'huge'"),
                          (["params", "--set", "seed"], "key=value"),
                          (["params", "--set", "sede=1"], "'sede' (did you mean seed?)")):
        with pytest.raises(SystemExit) as exited:
            runner.main(argv)
        err = capsys.readouterr().err
        assert exited.value.code == 2 and message in err and len(err.strip().splitlines()) == 1, err


def test_the_runner_prints_a_merged_profile(capsys):
    import yaml

    assert runner.main(["params", "--profile", "smoke", "--set", "seed=4"]) == 0
    printed = yaml.safe_load(capsys.readouterr().out)
    assert printed == dict(config.Params.load("smoke", seed=4))


def test_parameters_source_refuses_a_help_papermill_cannot_parse(tmp_path, monkeypatch):
    (tmp_path / "default.yaml").write_text("lr: 0.1\n")
    monkeypatch.setattr(paths, "PARAMS", tmp_path)
    monkeypatch.setitem(config.HELP, "lr", "step size (x = 2)")
    with pytest.raises(ValueError, match="holds ' = '"):
        runner.parameters_source()


# --------------------------------------------------------------------------- one validation at the front door


@pytest.mark.parametrize(("args", "message"), [
    (["00", "--set", "no_such_key=1"], "unknown parameter 'no_such_key': every parameter is declared"),
    (["05", "--set", "alhpa=0.05"], "unknown parameter 'alhpa' (did you mean alpha?)"),
    (["05", "--set", "alpha=0.7"], "parameter 'alpha' of profile 'smoke' is 0.7; it must be in (0, 0.5]"),
    (["05", "--set", "alpha=0"], "parameter 'alpha' of profile 'smoke' is 0; it must be in (0, 0.5]"),
    (["06", "--set", "leak_threshold=1.5"], "parameter 'leak_threshold' of profile 'smoke' is 1.5; it must be in [0, 1]"),
    (["05", "--set", "n_samples=0"], "parameter 'n_samples' of profile 'smoke' is 0; it must be in [1, 100000]"),
    (["00", "--set", "forget_split=forget99"], "parameter 'forget_split': 'forget99' is not a forget split of "
                                               "data source 'synthetic' (did you mean forget10?)"),
    (["01", "--set", "retain_splits=[retain9]"], "parameter 'retain_splits': 'retain9' is not a retain split"),
    (["02", "--set", "method=sgd"], "parameter 'method': unknown unlearning run 'sgd' (did you mean gd?)"),
    (["all", "--set", "methods=[ga, npo_e]"], "parameter 'methods': unknown unlearning run 'npo_e' (did you mean npo_eo?)"),
    (["06", "--set", "eo_method=npo_oe"], "parameter 'eo_method': unknown unlearning run 'npo_oe'"),
    (["01", "--set", "metod=npo"], "unknown parameter 'metod' (did you mean methods?)"),
])
def test_a_bad_parameter_is_refused_in_one_line_before_any_work(tmp_path, args, message, monkeypatch, capsys):
    """Exit code 2, one line on stderr, no kernel started and nothing written under runs/: through the runner's
    command line in this process (the command a user types is run once, below)."""
    import os

    import papermill
    from unlearnkit import lifetime

    runs_dir = tmp_path / "runs"
    monkeypatch.setattr(paths, "RUNS", runs_dir)
    for var in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", lifetime.RUNNER_PID_VARIABLE):  # main sets them: restored
        monkeypatch.setenv(var, os.environ.get(var, ""))

    def no_kernel(*_, **__):
        raise AssertionError("a kernel started")

    monkeypatch.setattr(papermill, "execute_notebook", no_kernel)
    try:
        code = runner.main([*args, "--profile", "smoke"])
    except SystemExit as exited:
        code = exited.code
    out, err = capsys.readouterr()
    assert code == 2, out + err
    assert err.strip() == err.strip().splitlines()[0], err  # one line
    assert message in err, err
    assert not runs_dir.exists() and out == ""


def test_a_bad_parameter_typed_as_a_command_is_refused_in_one_line_before_any_work(tmp_path):
    """The same, through the command a user types, in a process of its own."""
    import os
    import subprocess
    import sys

    runs_dir = tmp_path / "runs"
    env = {**os.environ, "UNLEARNKIT_RUNS": str(runs_dir)}
    done = subprocess.run([sys.executable, "-m", "unlearnkit.runner", "05", "--set", "alpha=0.7", "--profile", "smoke"],
                          env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.strip() == done.stderr.strip().splitlines()[0], done.stderr  # one line
    assert "parameter 'alpha' of profile 'smoke' is 0.7; it must be in (0, 0.5]" in done.stderr, done.stderr
    assert not runs_dir.exists() and done.stdout == ""


def test_the_front_door_merges_once_and_names_keys_a_notebook_does_not_read(capsys):
    checked = runner.plan("00", "smoke", {"alpha": 0.05, "seed": 3})
    assert checked.params == config.Params.load("smoke", alpha=0.05, seed=3) and checked.changed == ["alpha", "seed"]
    assert capsys.readouterr().err.strip().splitlines() == ["notebook 00 does not read alpha"]
    checked = runner.plan("02", "smoke", {"method": "npo", "unlearn_lr": 1e-4})
    assert checked.own == {"method": "npo"} and checked.params.unlearn_lr == 1e-4
    assert capsys.readouterr().err == ""  # notebook 02 reads unlearn_lr through the library
    runner.plan("all", "smoke", {"alpha": 0.05})
    assert capsys.readouterr().err == ""  # some notebook reads it
    # a key the notebook reads only through the library is added to its parameters cell, not passed as unknown
    notebook = runner.find_notebook("02")
    injected = runner.injected_parameters(notebook, checked.params, checked.own, checked.changed)
    cell = runner.execute._parameters_cell(runner.execute._parameterised(notebook, injected))
    assert "unlearn_lr = 0.0001" in cell["source"] and injected["unlearn_lr"] == 1e-4


def test_every_declared_constraint_names_a_declared_key_and_holds_on_every_profile():
    assert set(config.CONSTRAINTS) <= set(config.PARAMETER_NAMES)
    for profile in config.profile_names():
        params = config.Params.load(profile)  # constraints are checked when Params are made
        assert all(c.holds(params[k]) for k, c in config.CONSTRAINTS.items()), profile
    alpha = config.CONSTRAINTS["alpha"]
    assert [alpha.holds(v) for v in (0.5, 0.01, 0.0, 0.51, float("nan"), True, "0.1")] == [True, True] + [False] * 5
    with pytest.raises(ValueError, match="'lambda_r'.*0.5; it must be <= 0"):
        config.Params.load("smoke").replace(lambda_r=0.5)
    # an enumeration lists what the library itself accepts (config cannot import the modules that own the lists)
    from unlearnkit.metrics.sampling import SAMPLERS
    from unlearnkit.unlearning import ENTROPY_POSITIONS

    assert config.CONSTRAINTS["sampler"].choices == tuple(SAMPLERS)
    assert config.constraints.POSITIONS.choices == tuple(ENTROPY_POSITIONS)
    from unlearnkit.metrics.privacy import EXTRACTION_NO_MATCH, GRADNORM_REDUCTIONS

    assert config.CONSTRAINTS["gradnorm_reduction"].choices == tuple(GRADNORM_REDUCTIONS)
    assert config.CONSTRAINTS["extraction_no_match"].choices == tuple(EXTRACTION_NO_MATCH)


def test_every_notebook_reads_declared_sections():
    from unlearnkit import runs

    sections = config.parameter_sections()
    assert set(sections[""]) == {"profile", "seed", "jobs"}
    assert sum(map(len, sections.values())) == len(config.PARAMETER_NAMES)
    for notebook in runner.source_notebooks():
        assert set(runs.NOTEBOOK_SECTIONS[notebook.stem]) <= set(sections), notebook.name
        assert set(runner.checks._cell_keys(notebook)) <= runner.reads(notebook), notebook.name
    assert "alpha" not in runs.keys_read(runs.DATA_TOUR) and "unlearn_lr" in runs.keys_read(runs.LEAKAGE)


def test_each_kernel_gets_its_own_socket_folder(tmp_path):
    """jupyter_client's default IPC path (kernel-ipc-<n> in the working directory) is shared by kernels started at
    the same moment; the runner puts each kernel's sockets in a folder of its own."""
    from unlearnkit import runner

    first, second = (runner.execute._kernel_config(tmp_path / name)["KernelManager"] for name in ("a", "b"))
    assert first["transport"] == second["transport"] == "ipc"
    assert first["ip"] != second["ip"] and first["ip"].startswith(str(tmp_path / "a"))


def test_one_parameters_cell_parser_serves_the_runner_and_the_report():
    """The runner's declared names and the report's folded values come from one reading of a parameters cell:
    values keep their text, a comment is not part of a value, names below the marker are the notebook's own."""
    import nbformat
    from unlearnkit import parameters_cell as pc

    source = "\n".join(["# header", "profile = 'default'  # the profile", "seed = 0", "alpha = 0.01  # a = b in prose",
                        pc.OWN_PARAMETERS_MARKER, 'method = "npo"  # the run'])
    assert pc.cell_names({"source": source}) == (["profile", "seed", "alpha"], ["method"])
    assert pc.assignments(source) == {"profile": "'default'", "seed": "0", "alpha": "0.01", "method": '"npo"'}
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source, metadata={"tags": ["parameters"]}),
                nbformat.v4.new_code_cell('profile = "smoke"\nseed = 3\njobs = 1\nmethod = "ga"\n',
                                          metadata={"tags": [pc.INJECTED]}),
                nbformat.v4.new_code_cell("print(seed)")]
    pc.fold_injected(nb)
    assert len(nb.cells) == 2
    folded = nb.cells[0].source.splitlines()
    assert 'profile = "smoke"  # the profile' in folded and "seed = 3" in folded
    assert "alpha = 0.01  # a = b in prose" in folded and 'method = "ga"  # the run' in folded
    assert folded[-1] == "jobs = 1  # set for this run"


def test_the_calibration_tolerances_take_the_runs_seed_from_params():
    from unlearnkit.studies.calibration import Tolerances

    params = config.Params.load("smoke", seed=3, retain_tolerance=0.2)
    tolerances = Tolerances.of(params)
    assert (tolerances.seed, tolerances.retain) == (3, 0.2)
    assert tolerances.resamples == params.bootstrap_resamples and tolerances.confidence == params.criterion_confidence


def test_the_kernel_is_not_interrupted_on_its_way_out_but_is_while_it_runs(monkeypatch):
    """jupyter_client sends SIGINT before a shutdown request; a kernel answering a message then logged
    "KeyboardInterrupt caught in kernel" into the runner's output after a clean run."""
    import asyncio

    from jupyter_client.manager import AsyncKernelManager
    from unlearnkit.runner import execute

    sent = []

    async def interrupt(self):
        sent.append(self.shutting_down)

    monkeypatch.setattr(AsyncKernelManager, "_async_interrupt_kernel", interrupt)
    manager = execute.kernel_manager_class()()
    assert isinstance(manager, AsyncKernelManager)
    asyncio.run(manager._async_interrupt_kernel())  # a cell's timeout: the interrupt goes
    manager.shutting_down = True
    asyncio.run(manager._async_interrupt_kernel())  # the shutdown's: left out
    assert sent == [False]


def test_the_kernels_note_of_its_destroyed_control_task_is_dropped_and_nothing_else():
    """At a kernel's exit asyncio logs "Task was destroyed but it is pending!" for ipykernel's control task into a
    closed stderr: "--- Logging error ---" and a traceback after a clean run. The runner's kernels load an extension
    that drops that record alone."""
    import logging

    from unlearnkit.runner import execute, kernel

    assert "--IPKernelApp.extensions=unlearnkit.runner.kernel" in execute.KERNEL_ARGUMENTS
    kernel.load_ipython_extension(None)
    kernel.load_ipython_extension(None)  # once only
    logger = logging.getLogger("asyncio")
    (drop,) = [f for f in logger.filters if isinstance(f, kernel._DropShutdownTask)]
    try:
        def record(msg):
            return logging.LogRecord("asyncio", logging.ERROR, __file__, 1, msg, (), None)

        assert not drop.filter(record("Task was destroyed but it is pending!\ntask: <Task pending name='Task-45' "
                                      "coro=<Kernel.dispatch_control() running at kernelbase.py:372>>"))
        assert drop.filter(record("Task was destroyed but it is pending!\ntask: <Task pending coro=<mine()>>"))
        assert drop.filter(record("Exception in callback"))
    finally:
        logger.removeFilter(drop)


#: What a clean run printed when papermill was called directly (docs/running.md) and not through the runner (#62).
KERNEL_EXIT_NOISE = ("Traceback", "KeyboardInterrupt", "Logging error", "Task was destroyed")


@pytest.mark.slow
def test_papermill_called_directly_ends_a_clean_run_quietly(tmp_path):
    """papermill as docs/running.md shows it (the merged profile written to a file, then ``papermill --cwd notebooks
    -k python3 -f``), on a notebook that does what the workbook's do: imports the library and runs work in its worker
    processes. jupyter_client sends the kernel's process group a SIGINT before it shuts the kernel down; each idle
    worker died of it with a "Traceback ... KeyboardInterrupt" in the caller's terminal, and asyncio's note of the
    control task ipykernel leaves pending could print a "Logging error". The runner's own kernels were quiet already."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    import nbformat

    notebook = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                                 "language": "python"}})
    notebook.cells = [nbformat.v4.new_code_cell("profile = 'default'", metadata={"tags": ["parameters"]}),
                      nbformat.v4.new_code_cell("import os\nfrom unlearnkit import workers"),
                      nbformat.v4.new_code_cell("pids = workers.side_by_side(os.getpid, [(), ()], jobs=2)\n"
                                                "assert os.getpid() not in pids, pids  # ran in the workers")]
    source, executed, profile = tmp_path / "workers.ipynb", tmp_path / "out.ipynb", tmp_path / "smoke.yaml"
    nbformat.write(notebook, source)
    library = str(paths.ROOT / "lib")  # the kernel imports this checkout's library, whatever the venv has installed
    env = {**os.environ, "UNLEARNKIT_RUNS": str(tmp_path / "runs"),
           "PYTHONPATH": os.pathsep.join(p for p in (library, os.environ.get("PYTHONPATH")) if p)}
    merged = subprocess.run([sys.executable, "-m", "unlearnkit.runner", "params", "--profile", "smoke"], env=env,
                            capture_output=True, text=True, timeout=300, cwd=paths.ROOT)
    assert merged.returncode == 0, merged.stderr[-3000:]
    profile.write_text(merged.stdout)
    papermill = Path(sys.executable).with_name("papermill")
    done = subprocess.run([str(papermill), "--cwd", "notebooks", "-k", "python3", "-f", str(profile), str(source),
                           str(executed)], env=env, capture_output=True, text=True, timeout=900, cwd=paths.ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    for noise in KERNEL_EXIT_NOISE:
        assert noise not in done.stderr, f"{noise!r} in papermill's stderr:\n{done.stderr[-3000:]}"


def _interrupted_while_idle(queue) -> None:
    import os
    import signal
    import time

    from unlearnkit import workers

    workers._idle_ignores_interrupt()  # the initializer side_by_side hands loky
    os.kill(os.getpid(), signal.SIGINT)  # jupyter_client's SIGINT to the kernel's process group, to an idle worker
    time.sleep(0.2)
    during = workers._in_worker(signal.getsignal, (signal.SIGINT,), 1, {}, {})
    queue.put((during[0] if isinstance(during, tuple) else during) is signal.default_int_handler)


def test_an_idle_worker_survives_the_shutdown_interrupt_and_a_task_still_can_be_interrupted():
    """The deterministic half of the test above (whose noise is a race): a worker whose initializer ran ignores the
    SIGINT jupyter_client sends the kernel's process group, and a task it runs has Python's own handler back, so
    Ctrl-C or a cell's timeout still interrupts work. Without the initializer the process dies of the signal."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    worker = ctx.Process(target=_interrupted_while_idle, args=(queue,))
    worker.start()
    worker.join(120)
    assert worker.exitcode == 0, f"the idle worker died of SIGINT (exit code {worker.exitcode})"
    assert queue.get(timeout=5) is True, "a task ran without Python's SIGINT handler"
