"""What a received run folder, notebook or profile holds is data (#46, docs/threat-model.md): the report shows it as
text, never as active markup, and keeps the findings table's colours."""

import re

import nbformat
import pandas as pd
import pytest
from unlearnkit import config, paths, report
from unlearnkit.report import claims

HOSTILE_HTML = '<script>document.title="pwned"</script><img src=x onerror="document.title=\'pwned\'">'
HOSTILE_VALUE = "<img src=x onerror=alert('pwned')>"


def _executed(cells):
    nb = nbformat.v4.new_notebook()
    nb.cells = cells
    return nb


def _active(page: str) -> list[str]:
    """Markup that would run: an event handler, a javascript: URL, a script carrying the planted payload."""
    found = [t for t in re.findall(r"<[a-zA-Z][^>]*\son\w+\s*=", page)
             if 'class="code-toggle"' not in t]  # the template's own show-code button
    found += re.findall(r"javascript:", page, re.I)
    found += [s for s in re.findall(r"<script[^>]*>(.*?)</script>", page, re.S) if "pwned" in s]
    found += re.findall(r"<iframe|<object|<embed", page, re.I)
    return found


def test_a_report_from_hostile_notebooks_and_parameters_shows_text_and_keeps_the_colours(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "RUNS", tmp_path / "runs")
    params = config.Params.load("smoke", probe_prefill_text=HOSTILE_VALUE)
    store = tmp_path / "runs" / "smoke" / "seed-0"
    store.mkdir(parents=True)
    table = claims.styled(pd.DataFrame({"claim": [HOSTILE_VALUE], "verdict": ["reproduced"]}))
    findings = nbformat.v4.new_code_cell("table", outputs=[nbformat.v4.new_output(
        "display_data", data={"text/html": table.to_html(), "text/plain": "table"})])
    nbformat.write(_executed([nbformat.v4.new_markdown_cell("# Findings\n\n" + HOSTILE_HTML), findings]),
                   store / "09_findings.ipynb")
    hostile = nbformat.v4.new_code_cell("x", outputs=[nbformat.v4.new_output(
        "display_data", data={"text/html": HOSTILE_HTML, "application/javascript": "document.title='pwned'",
                              "text/markdown": HOSTILE_HTML, "text/plain": "x"})])
    nbformat.write(_executed([nbformat.v4.new_markdown_cell("# Robustness\n\nThe prefill probe opens with "
                                                            "`probe_prefill_text`."), hostile]),
                   store / "08_robustness.ipynb")

    index = report.build(params, tmp_path / "report")
    pages = {p.name: p.read_text() for p in index.parent.glob("*.html")}
    assert set(pages) >= {"index.html", "08_robustness.html"}
    for name, page in pages.items():
        assert _active(page) == [], name
    # the parameter is shown as the text it is, and the Styler's cell text too
    assert "&lt;img src=x onerror=alert('pwned')&gt;" in pages["08_robustness.html"].replace("&#x27;", "'")
    assert "&lt;img src=x onerror" in pages["index.html"]
    # the findings table keeps its colours
    assert re.search(r"<style>[^<]*#T_\w+_row0_col1 \{background-color: #d9f0d3", pages["index.html"])


def test_a_stylers_style_block_keeps_colour_rules_only():
    css = ("#T_a_row0_col1 {background-color: #d9f0d3; text-align: left}\n"
           "#T_a_row1_col1 {background: url(http://example.com/x.png)}\n"
           "body {color: red}\n"
           "#T_a_row2_col1 {color: expression(alert(1))}")
    cleaned = report.clean_html(f"<style>{css}</style><table id='T_a'></table>")
    assert "#T_a_row0_col1 {background-color: #d9f0d3; text-align: left}" in cleaned
    assert "url(" not in cleaned and "body" not in cleaned and "expression" not in cleaned


def _notebook(path, code):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell('profile = "smoke"', metadata={"tags": ["parameters"]}),
                nbformat.v4.new_code_cell(code)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    return path


def test_a_failed_run_keeps_the_last_good_executed_notebook_and_says_where_the_failed_one_is(tmp_path, monkeypatch):
    from papermill.exceptions import PapermillExecutionError
    from unlearnkit import runner, runs

    monkeypatch.setattr(paths, "RUNS", tmp_path / "runs")
    params = config.Params.load("smoke")
    good = runner.run_notebook(_notebook(tmp_path / "00_try.ipynb", "print('good')"), params, timeout=120)
    before = good.read_bytes()
    assert "good" in before.decode() and runs.executed_notebook(params, "00_try") == good
    with pytest.raises(PapermillExecutionError) as e:
        runner.run_notebook(_notebook(tmp_path / "00_try.ipynb", "raise ValueError('boom')"), params, timeout=120)
    assert good.read_bytes() == before  # the last good copy, untouched
    failed = runner.failed_copy(good)
    assert "boom" in failed.read_text() and "failed" in "".join(getattr(e.value, "__notes__", []))
    assert not list(good.parent.glob(".*.running.ipynb"))
    runner.run_notebook(_notebook(tmp_path / "00_try.ipynb", "print('again')"), params, timeout=120)
    assert "again" in good.read_text() and not failed.exists()  # a later success supersedes the failure


def test_a_write_that_fails_leaves_the_good_file_and_no_temp_file(tmp_path, monkeypatch):
    import os

    from unlearnkit import runs

    path = tmp_path / "metrics.json"
    runs.atomic_write_text(path, '{"good": 1}')

    def full(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError, match="No space"):
        runs.atomic_write_text(path, '{"new": 2}')
    assert path.read_text() == '{"good": 1}' and [p.name for p in tmp_path.iterdir()] == ["metrics.json"]


def test_a_truncated_or_altered_weight_file_is_not_a_saved_model_and_an_old_folder_gets_a_digest(
        tiny_model, tiny_tokenizer, template, tmp_path):
    import json
    import os

    from unlearnkit import models

    folder = models.save_model(tiny_model, tiny_tokenizer, tmp_path / "m", template)
    weights = folder / "model.safetensors"
    assert models.is_saved_model(folder) and json.loads((folder / models.DIGEST).read_text())["model.safetensors"]

    data = weights.read_bytes()
    os.utime(weights, ns=(1, 1))  # touched, not changed: hashed once, the record refreshed
    assert models.weights_intact(folder)
    assert json.loads((folder / models.DIGEST).read_text())["model.safetensors"]["mtime_ns"] == 1

    weights.write_bytes(data[:-100])  # truncated
    assert not models.is_saved_model(folder)
    weights.write_bytes(data[:-4] + b"\0\0\0\1")  # same size, altered
    assert not models.weights_intact(folder)

    weights.write_bytes(data)
    (folder / models.DIGEST).unlink()  # saved before digests existed: a digest is computed, no retrain
    assert models.weights_intact(folder) and (folder / models.DIGEST).exists()
    (folder / models.DIGEST).unlink()
    weights.write_bytes(data[:-100])  # ...unless the file is shorter than its own header says
    assert not models.weights_intact(folder) and not models.safetensors_complete(weights)


def test_a_corrupt_result_file_is_named_and_costs_only_its_own_claims(tmp_path, monkeypatch):
    from unlearnkit import registry, results, runs
    from unlearnkit.studies import effects

    monkeypatch.setattr(paths, "RUNS", tmp_path)
    seed = results.SeedResults("smoke", 0)
    store = runs.store(seed.params)
    (store / runs.FINETUNE).mkdir(parents=True)
    (store / runs.FINETUNE / "metrics.json").write_text('{"target": ')  # truncated
    with pytest.raises(results.CorruptResult, match="01_tofu_finetune/metrics.json is not valid JSON"):
        seed.metrics(runs.FINETUNE)
    found = effects.effect_on_seed(registry.load()["setup.target_in_regime"], seed)
    assert found.outcome == "not testable" and "unreadable" in found.reason


def test_a_process_of_a_runner_ends_when_the_runner_is_killed(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    runner_stand_in = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    env = {**os.environ, "UNLEARNKIT_RUNNER_PID": str(runner_stand_in.pid)}
    # a kernel or worker: imports the library, then works for far longer than the test waits
    child = subprocess.Popen([sys.executable, "-c", "import unlearnkit, time; time.sleep(120)"], env=env)
    try:
        time.sleep(3)
        assert child.poll() is None  # alive while the runner is
        runner_stand_in.send_signal(signal.SIGKILL)  # no handler sees it
        runner_stand_in.wait()
        assert child.wait(timeout=30) == 70
    finally:
        for p in (runner_stand_in, child):
            if p.poll() is None:
                p.kill()


def test_two_runners_never_write_one_executed_notebook_at_once(tmp_path, monkeypatch, capsys):
    from unlearnkit import runner

    monkeypatch.setattr(paths, "RUNS", tmp_path / "runs")
    params = config.Params.load("smoke")
    source = _notebook(tmp_path / "00_try.ipynb", "print('good')")
    out = runner.run_notebook(source, params, timeout=120)
    with runner.output_lock(out):  # another runner, mid-run
        with pytest.raises(SystemExit) as e:
            runner.run_notebook(source, params, timeout=120)
    assert e.value.code == 2 and "another runner is writing" in capsys.readouterr().err
    assert not list(out.parent.glob(".*.stations.*.jsonl"))
