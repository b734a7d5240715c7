"""runner eval: every metric of the workbook on a model of one's own (issue #48). The front door refuses in one line
what it cannot evaluate honestly (a prompt format not stated, data not named, a retain model of another base), prints
the cost of each suite first, and writes only under the store's eval/ folder."""

from __future__ import annotations

import json
import os
import re

import pytest
from unlearnkit import config, models, paths, runner, runs
from unlearnkit.data.synthetic import generate_synthetic_tofu
from unlearnkit.ownmodel import cost as own_cost
from unlearnkit.ownmodel import outputs as own_results
from unlearnkit.ownmodel import reference as own_reference
from unlearnkit.ownmodel import suites as own_model

pytestmark = pytest.mark.usefixtures("tiny_model_threads")


@pytest.fixture()
def store(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "RUNS", tmp_path / "runs")
    monkeypatch.setenv(models.STATED_TEMPLATES_VARIABLE, "{}")  # restored after the test, whatever it states
    return tmp_path


@pytest.fixture()
def plain_folder(tiny_model, tiny_tokenizer, store):
    """A model saved as a user's own: save_pretrained, no unlearnkit.json."""
    return models.save_plain_model(tiny_model, tiny_tokenizer, store / "my-model")


@pytest.fixture()
def tofu_folder(store):
    generate_synthetic_tofu(store / "tofu", n_authors=10, questions_per_author=10, seed=0)
    return store / "tofu"


def _eval(argv, monkeypatch, capsys):
    """runner eval up to the kernel: the request checked and the estimate printed; what would run is returned."""
    started = {}
    monkeypatch.setattr(runner.evaluate, "run_notebook", lambda notebook, params, **kw: started.update(kw, params=params))
    with pytest.raises(SystemExit) as e:
        code = runner.main(["eval", "--profile", "smoke", *argv])
        raise SystemExit(code)
    out = capsys.readouterr()
    return e.value.code, out.out, out.err.strip(), started


def test_a_folder_that_does_not_state_its_prompt_format_is_refused_with_the_choices(plain_folder, tofu_folder,
                                                                                     monkeypatch, capsys):
    code, _, err, started = _eval(["--model", str(plain_folder), "--data", str(tofu_folder)], monkeypatch, capsys)
    assert code == 2 and not started and len(err.splitlines()) == 1
    assert "does not say its prompt format" in err and "--template" in err and "phi" in err and "chat" in err


def test_a_foreign_model_needs_its_data_named(plain_folder, monkeypatch, capsys):
    code, _, err, started = _eval(["--model", str(plain_folder), "--template", "phi"], monkeypatch, capsys)
    assert code == 2 and not started and "--data is required" in err


@pytest.mark.parametrize("argv, message", [
    (["--suite", "tofu,bogus"], "unknown suite bogus"),
    (["--template", "nonesuch"], "unknown prompt template 'nonesuch'"),
    (["--reference", "no/such/folder/here"], "does not exist"),
    (["--model", "nobody-here/no-such-model-xyz"], "not in the local Hub cache, and the runner is offline"),
    (["--data", "nobody-here/NO-SUCH-DATA"], "is a Hub data set that is not in the local cache"),
    (["--revision", "v1.0"], "names a version of a Hub model;"),
    (["--model", "nobody-here/no-such-model-xyz", "--revision", "v1.0"], "not in the local Hub cache"),
])
def test_bad_requests_are_refused_in_one_line(argv, message, plain_folder, tofu_folder, monkeypatch, capsys):
    base = ["--model", str(plain_folder), "--data", str(tofu_folder)]
    code, _, err, started = _eval(base + (["--template", "phi"] if "--template" not in argv else []) + argv,
                                  monkeypatch, capsys)
    assert code == 2 and not started and message in err and len(err.splitlines()) == 1


def test_a_reference_of_another_base_is_refused(plain_folder, tofu_folder, tiny_tokenizer, store, monkeypatch,
                                                capsys):
    other = models.build_tiny_llama(tiny_tokenizer, {"hidden_size": 32, "num_hidden_layers": 1,
                                                     "num_attention_heads": 2, "intermediate_size": 64}, seed=1)
    reference = models.save_plain_model(other, tiny_tokenizer, store / "other-base")
    code, _, err, _ = _eval(["--model", str(plain_folder), "--data", str(tofu_folder), "--template", "phi",
                             "--reference", str(reference)], monkeypatch, capsys)
    assert code == 2 and "is not of the model's base: its hidden_size is 32" in err


def test_a_stated_request_prints_its_cost_and_runs_into_the_stores_eval_folder(plain_folder, tofu_folder,
                                                                               tiny_model, tiny_tokenizer, store,
                                                                               monkeypatch, capsys):
    reference = models.save_plain_model(tiny_model, tiny_tokenizer, store / "my-retain")
    code, out, err, started = _eval(["--model", str(plain_folder), "--data", str(tofu_folder), "--template", "phi",
                                     "--reference", str(reference), "--suite", "tofu,attacks"], monkeypatch, capsys)
    assert code == 0, err
    assert re.search(r"estimated on this CPU \(not yet calibrated[^)]*\): tofu", out) and "attacks" in out \
        and "leakage" not in out.split("estimated")[1]
    out_path = started["out"]
    assert out_path.is_relative_to(paths.RUNS / "smoke" / "seed-0" / "eval")
    assert out_path.parent.name.startswith("my-model-") and paths.NAME.fullmatch(out_path.parent.name)
    assert started["own"]["eval_template"] == "phi" and started["own"]["eval_suites"] == "tofu,attacks"


def test_the_estimate_grows_with_the_model_and_refuses_hours_unless_asked():
    params = config.Params.load("default")
    small = own_cost.estimate_seconds(params, 10_000_000, own_model.SUITES, True, 400)
    large = own_cost.estimate_seconds(params, 1_400_000_000, own_model.SUITES, True, 400)
    assert all(large[s] == pytest.approx(140 * small[s]) for s in own_model.SUITES)
    assert max(large.values()) > own_cost.CPU_LIMIT_S > max(small.values())


def test_the_estimate_is_calibrated_on_the_rates_measured_here_for_a_model_that_size(plain_folder, tofu_folder,
                                                                                       store):
    """Issue #60 point 3: the estimate said 30 s for suites that took 303 s. Each evaluation records its FLOP
    estimate, the seconds each suite took and computed, the model's size and the machine; the door scales its
    estimate by the median measured/estimated of earlier evaluations here of a model within a factor 2 of this size,
    counting no suite that came from the cache, no other machine and no other size."""
    params = config.Params.load("smoke")
    size = own_cost.parameter_count(str(plain_folder))

    def earlier(name, factor, machine=None, parameters=size, computed=1.0):
        folder = runs_eval(params) / name
        folder.mkdir(parents=True)
        estimated = {"tofu": 2.0, "attacks": 4.0}
        meta = {"machine": machine or own_cost.machine(), "model_parameters": parameters,
                "estimated_seconds": estimated, "suite_seconds": {k: v * factor for k, v in estimated.items()},
                "computed_seconds": {k: v * factor * computed for k, v in estimated.items()}}
        (folder / "metrics.json").write_text(json.dumps({"meta": meta}))

    earlier("a-1", 10.0)
    earlier("b-2", 30.0)
    earlier("c-3", 20.0)
    earlier("cached-4", 1000.0, computed=0.01)  # read from the cache: its seconds say nothing of the rate
    earlier("elsewhere-5", 1000.0, machine="another machine, 64 cores")
    earlier("larger-6", 1000.0, parameters=size * 3)
    (runs_eval(params) / "broken-7").mkdir()
    (runs_eval(params) / "broken-7" / "metrics.json").write_text("{not json")
    factors, measured = own_cost.calibration(size)
    assert factors == {"tofu": 20.0, "attacks": 20.0} and measured == 3
    request, lines, estimate = own_model.front_door(params, str(plain_folder), str(tofu_folder), None,
                                                    "tofu,formats", "phi")
    raw = own_model.request_estimate(params, request)
    assert estimate == {"tofu": pytest.approx(20 * raw["tofu"]), "formats": pytest.approx(raw["formats"])}
    assert "calibrated on the rates of 3 earlier evaluation(s) of a model this size here" in lines[-1]


def test_a_stated_revision_is_part_of_a_hub_models_identity(monkeypatch):
    from unlearnkit import runs

    monkeypatch.setenv(models.STATED_REVISIONS_VARIABLE, "{}")
    main = runs.model_identity("some-org/some-model")
    own_model.state_revision("some-org/some-model", "v1.0")
    assert models.stated_revision("some-org/some-model") == "v1.0" and runs.model_identity("some-org/some-model") != main


def test_a_stated_template_is_the_one_every_load_takes_and_part_of_the_models_identity(plain_folder, monkeypatch):
    from unlearnkit import runs

    before = runs.model_identity(plain_folder)
    request = own_model.Request(str(plain_folder), "my-model", "profile", None, ("tofu",), "vicuna", False)
    own_model.state_template(request)
    assert models.load_model(plain_folder, dtype="float32", template=None).template.name == "vicuna"
    assert models.template_for(str(plain_folder)).name == "vicuna"
    assert runs.model_identity(plain_folder) != before  # scores under another prompt format are other scores
    assert json.loads(os.environ[models.STATED_TEMPLATES_VARIABLE]) == {str(plain_folder.resolve()): "vicuna"}


#: The architectures a user's own model may have: the three the paper profile uses and two more families whose
#: layers differ (GPT-2's Conv1D, GPT-NeoX's fused attention).
ARCHITECTURES = ("llama", "phi", "mistral", "gpt2", "gpt_neox")
SIZES = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64}


def build(architecture: str, tokenizer, seed: int):
    """A randomly initialised model of ``architecture`` with the tests' tokenizer, as a user's from_config would be."""
    import torch
    import transformers

    if architecture in models.STAND_IN_CONFIGS:
        return models.build_stand_in(architecture, tokenizer, SIZES, seed=seed, max_positions=512)
    ids = {"vocab_size": len(tokenizer), "bos_token_id": tokenizer.bos_token_id, "eos_token_id": tokenizer.eos_token_id}
    if architecture == "gpt2":
        cfg = transformers.GPT2Config(n_positions=512, n_embd=32, n_layer=2, n_head=2, **ids)
    else:
        cfg = transformers.GPTNeoXConfig(max_position_embeddings=512, **SIZES, **ids)
    torch.manual_seed(seed)
    model = transformers.AutoModelForCausalLM.from_config(cfg)
    model.generation_config.pad_token_id = models.pad_token_id(tokenizer)
    return model


@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_every_suite_runs_on_a_plain_folder_of_each_architecture(architecture, small_corpus, tiny_tokenizer, store):
    """Each suite of runner eval, in this process, on a save_pretrained folder and a same-base retain folder: TOFU's
    metrics with forget quality and privleak against the reference, the sampled bounds, the formats and every attack
    (quantisation touches the model's layers: GPT-2's are Conv1D)."""
    folder = models.save_plain_model(build(architecture, tiny_tokenizer, 0), tiny_tokenizer, store / architecture)
    reference = models.save_plain_model(build(architecture, tiny_tokenizer, 1), tiny_tokenizer,
                                        store / f"{architecture}-retain")
    params = config.Params.load("eval-tiny")
    request = own_model.check_request(params, str(folder), str(small_corpus.folder), str(reference), "all", "phi")
    own_model.state_template(request)
    source = own_model.corpus(params, request)
    tofu, _ = own_model.tofu_suite(params, request, source)
    assert isinstance(tofu["model"]["summary"]["forget_quality"], float) and "privleak" in tofu["model"]["summary"]
    _, _, summaries = own_model.leakage_suite(params, request, source)
    assert 0 <= summaries["model"]["binary_leak_bound_mean"] <= 1 and "ed_score" in summaries["model"]
    _, formats = own_model.formats_suite(params, request, source)
    assert formats["model"]["forget"]
    attacked = own_model.attacks_suite(params, request, source)
    table = own_results.attack_table(attacked)
    assert "model over reference" in table.index and "Δ quantised nf4" in table.columns
    entries = own_results.metrics_entries(tofu, summaries, formats, attacked)
    assert {"forget", "summary", "sampled", "formats", "relearned", "quantised nf4"} <= set(entries["model"])


def test_a_lora_adapter_folder_is_evaluated_on_its_base_and_identified_by_its_own_weights(tiny_model, tiny_tokenizer,
                                                                                         small_corpus, store):
    import peft
    import torch
    from unlearnkit import runs

    base = models.save_plain_model(tiny_model, tiny_tokenizer, store / "base")
    lora = peft.get_peft_model(models.load_model(base, template="phi", dtype="float32").model,
                               peft.LoraConfig(r=2, target_modules=["q_proj", "v_proj"], init_lora_weights=False))
    lora.peft_config["default"].base_model_name_or_path = str(base)
    adapter = store / "adapter"
    lora.save_pretrained(adapter)
    params = config.Params.load("eval-tiny")
    request = own_model.check_request(params, str(adapter), str(small_corpus.folder), None, "tofu", "phi")
    assert own_cost.parameter_count(str(adapter)) == sum(p.numel() for p in tiny_model.parameters())
    first = runs.model_identity(adapter)
    own_model.state_template(request)
    tofu, _ = own_model.tofu_suite(params, request, own_model.corpus(params, request))
    assert tofu["model"]["summary"]["forget_quality"] == own_model.NO_REFERENCE
    with torch.no_grad():  # new adapter weights in the same folder: another model
        for p in lora.parameters():
            if p.requires_grad:
                p.add_(0.5)
    lora.save_pretrained(adapter)
    assert runs.model_identity(adapter) != first


@pytest.fixture(scope="module")
def gpt2_evaluation(small_corpus, tiny_tokenizer, tmp_path_factory):
    """runner eval of every suite on a GPT-2 folder of a user's (Conv1D layers) and its retain folder, in a fresh
    process and a store with nothing else: (the finished process, the temporary folder)."""
    tmp_path = tmp_path_factory.mktemp("gpt2-eval")
    folder = models.save_plain_model(build("gpt2", tiny_tokenizer, 0), tiny_tokenizer, tmp_path / "my-gpt2")
    reference = models.save_plain_model(build("gpt2", tiny_tokenizer, 1), tiny_tokenizer, tmp_path / "my-gpt2-retain")
    done = _runner_eval(["--model", str(folder), "--data", str(small_corpus.folder), "--reference", str(reference),
                         "--template", "phi", "--batch-size", "auto"], tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done, tmp_path


def test_runner_eval_of_a_gpt2_folder_runs_its_notebook_and_gives_a_report_page(gpt2_evaluation):
    """The whole door, as a user runs it on a folder of their own (GPT-2: Conv1D layers) in a store with nothing
    else: the notebook executes every suite, metrics.json follows the notebooks' schema, the report has its page."""
    from jsonschema import Draft202012Validator
    from unlearnkit import report

    done, tmp_path = gpt2_evaluation
    assert "estimated on this CPU (" in done.stdout and "): tofu" in done.stdout and "template phi" in done.stdout
    (written,) = (tmp_path / "runs" / "eval-tiny" / "seed-0" / "eval").glob("my-gpt2-*/metrics.json")
    got = json.loads(written.read_text())
    assert {"forget", "summary", "sampled", "leak_at_k", "formats", "relearned", "quantised nf4"} <= set(got["model"])
    assert got["model"]["leak_at_k"]["ks"][0] == 1 and len(got["reference"]["leak_at_k"]["leak_at_k"]) > 1
    assert got["meta"]["evaluated"]["template"] == "phi" and got["meta"]["evaluated"]["reference_identity"]
    # --batch-size auto: found on the model in the kernel (a CPU has room for lm-eval's starting 64), used and said
    assert got["meta"]["batch_size_auto"] == own_cost.AUTO_BATCH_START == got["meta"]["parameters"]["eval_batch_size"]
    assert f"--batch-size auto: {own_cost.AUTO_BATCH_START} " in done.stdout + done.stderr or \
        f"--batch-size auto: {own_cost.AUTO_BATCH_START} " in (written.parent / "eval_model.ipynb").read_text()
    schema = json.loads((paths.ROOT / "docs" / "metrics.schema.json").read_text())
    assert [e.message for e in Draft202012Validator(schema).iter_errors(got)] == []
    saved = paths.RUNS
    try:
        paths.RUNS = tmp_path / "runs"
        index = report.build(config.Params.load("eval-tiny"), out=tmp_path / "report")
    finally:
        paths.RUNS = saved
    page = index.read_text()
    assert "Your own model" in page and "my-gpt2" in page  # the front page of a store that holds only evaluations


def test_runner_eval_says_the_start_and_end_of_every_suite_and_step_as_it_goes(gpt2_evaluation):
    """Issue #60 point 3: the terminal showed nothing between the start and done lines (5 min 21 s on default). Now
    every suite and long step has a start and an end line in the terminal, each suite's with its estimate, and the
    progress log the kernel wrote (its timestamps, not this test's wall time) is silent longest while a step is
    open, which the heartbeat then names."""
    import re

    from unlearnkit.runner import progress

    done, tmp_path = gpt2_evaluation
    lines = done.stdout.splitlines()
    stamped = [ln for ln in lines if re.match(r"\[eval-tiny\] \d\d:\d\d:\d\d ", ln)]
    for suite in own_model.SUITES:
        starts = [ln for ln in stamped if re.search(rf"\d {suite}: start \(estimated \d", ln)]
        # a suite over 90 s says minutes (progress._duration): a loaded machine made the attacks suite do so once
        ends = [ln for ln in stamped if re.search(rf"\d {suite}: done in (\d+ s|\d+\.\d min) \(estimated \d", ln)]
        assert len(starts) == len(ends) == 1, (suite, done.stdout[-3000:])
    for step in ("TOFU metrics of model", "TOFU metrics of reference", "privacy metrics", "formats model",
                 "attacks reference", "relearning", "quantised nf4", "input probes"):
        assert any(f"{step}: start" in ln for ln in stamped) and any(f"{step}: done in" in ln for ln in stamped), step
    assert sum(": start" in ln for ln in stamped) == sum(": done in" in ln for ln in stamped) >= 20
    (log,) = (tmp_path / "runs" / "eval-tiny" / "seed-0" / "eval").glob(f"my-gpt2-*/{progress.PROGRESS_LOG}")
    events = progress.read_events(log)
    assert [e["step"] for e in events if e["step"] in own_model.SUITES and e["event"] == "start"] == \
        list(own_model.SUITES)
    # The longest silence of the log falls while a step is open, so the heartbeat names it. Its length against the
    # run's is no test (a model loading on a busy machine took 2.3 s of a 5.6-s run in CI): speed lives in benchmarks.
    silence, where = progress.longest_silence(events)
    assert silence > 0
    steps = [e for e in events if e["step"] not in progress.STATION_WORDS]
    open_steps: list[str] = []
    covered = {}
    for a, b in zip(steps, steps[1:]):
        if a["event"] == "start":
            open_steps.append(a["step"])
        elif open_steps and open_steps[-1] == a["step"]:
            open_steps.pop()
        covered[b["t"] - a["t"]] = bool(open_steps)
    longest = max(covered)
    assert covered[longest], (longest, where)
    assert any(e.get("depth", 0) > 0 for e in events)  # spans inside spans are logged too


def test_a_step_running_long_is_said_by_a_heartbeat_with_the_suites_estimate(tmp_path):
    """Between a step's start and end the terminal stays silent at most the heartbeat: a line names the step, the
    station span it is in and the suite's time against its estimate."""
    import io
    import time

    from unlearnkit import stations
    from unlearnkit.runner import progress

    out = io.StringIO()
    log = tmp_path / progress.PROGRESS_LOG
    forwarder = progress.Forwarder(log, "[smoke]", own_model.SUITES, {"tofu": 120.0}, heartbeat_s=0.0, out=out)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(stations.PROGRESS_LOG_VARIABLE, str(log))
        forwarder.poll()  # the kernel starting: said by the heartbeat too
        stations.note_progress("start", "tofu")
        stations.note_progress("start", "scoring", "truth_ratio")
        forwarder.poll()
        time.sleep(0.01)
        forwarder.poll()
        stations.note_progress("end", "scoring", "truth_ratio", seconds=1.0)
        stations.note_progress("end", "tofu", seconds=61.0)
        forwarder.poll()
    said = out.getvalue().splitlines()
    assert said[0].endswith(f"{progress.KERNEL_STARTING}: 0 s in") and "kernel ready in 0 s" in said[1]
    assert said[2].endswith("tofu: start (estimated 2.0 min)")
    assert "tofu: 0 s in, scoring (truth_ratio) for 0 s (tofu 0 s of about 2.0 min)" in said[3]
    assert said[-1].endswith("tofu: done in 61 s (estimated 2.0 min)")


def _runner_eval(argv, tmp_path, timeout=900):
    """runner eval in a fresh process, as a user runs it, into a store of its own under ``tmp_path``."""
    import subprocess
    import sys

    env = {**os.environ, "UNLEARNKIT_RUNS": str(tmp_path / "runs"), "TQDM_DISABLE": "1"}
    return subprocess.run([sys.executable, "-m", "unlearnkit.runner", "eval", "--profile", "eval-tiny", *argv], env=env,
                          capture_output=True, text=True, timeout=timeout, cwd=paths.ROOT)


def test_the_printed_results_path_is_the_one_written_inside_the_output_path(small_corpus, tiny_tokenizer, tmp_path):
    """Issue #60 point 1: the identity was computed at the door and again in the kernel from other parameters, so
    the printed metrics.json did not exist. It is now chosen once and handed to the notebook; --output-path puts the
    evaluation in a folder of the user's."""
    folder = models.save_plain_model(build("gpt2", tiny_tokenizer, 0), tiny_tokenizer, tmp_path / "my-gpt2")
    done = _runner_eval(["--model", str(folder), "--data", str(small_corpus.folder), "--template", "phi",
                         "--suite", "tofu", "--output-path", str(tmp_path / "mine")], tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (printed,) = [line.split("results: ", 1)[1] for line in done.stdout.splitlines() if line.startswith("results: ")]
    written = paths.resolve(printed) if not os.path.isabs(printed) else __import__("pathlib").Path(printed)
    assert written.is_file() and written.parent.parent == (tmp_path / "mine").resolve()
    assert (written.parent / "eval_model.ipynb").is_file()
    assert not (tmp_path / "runs" / "eval-tiny" / "seed-0" / "eval").exists() or not any(
        (tmp_path / "runs" / "eval-tiny" / "seed-0" / "eval").glob("*/metrics.json"))


def test_the_door_hands_the_kernel_the_folder_it_prints(plain_folder, tofu_folder, store, monkeypatch, capsys):
    code, _, err, started = _eval(["--model", str(plain_folder), "--data", str(tofu_folder), "--template", "phi",
                                   "--suite", "tofu", "--output-path", str(store / "out")], monkeypatch, capsys)
    assert code == 0, err
    assert started["own"]["eval_output"] == str(started["out"].parent)
    assert started["out"].parent.parent == (store / "out").resolve()


def test_an_output_path_with_a_link_below_it_is_refused_in_one_line(plain_folder, tofu_folder, store, monkeypatch,
                                                                     capsys):
    (store / "out").mkdir()
    (store / "elsewhere").mkdir()
    (store / "out" / "link").symlink_to(store / "elsewhere")
    code, _, err, started = _eval(["--model", str(plain_folder), "--data", str(tofu_folder), "--template", "phi",
                                   "--output-path", str(store / "out")], monkeypatch, capsys)
    assert code == 2 and not started and len(err.splitlines()) == 1 and "symlink" in err and "--output-path" in err


def test_every_missing_input_of_the_requested_suites_is_named_in_one_refusal(tiny_tokenizer, store, monkeypatch,
                                                                            capsys):
    """Issue #60 point 2: a GPT-2 folder with few positions, no stated template, and a TOFU-shaped folder without its
    holdout split: every problem in one refusal (one line each, with the fix or the --suite that runs without it),
    before any kernel; with the suites adjusted the same request starts."""
    import transformers

    cfg = transformers.GPT2Config(n_positions=16, n_embd=32, n_layer=1, n_head=2, vocab_size=len(tiny_tokenizer),
                                  bos_token_id=tiny_tokenizer.bos_token_id, eos_token_id=tiny_tokenizer.eos_token_id)
    short = models.save_plain_model(transformers.AutoModelForCausalLM.from_config(cfg), tiny_tokenizer, store / "short")
    generate_synthetic_tofu(store / "tofu", n_authors=10, questions_per_author=10, seed=0)
    for file in (store / "tofu").glob("holdout*.json"):
        file.unlink()
    code, _, err, started = _eval(["--model", str(short), "--data", str(store / "tofu")], monkeypatch, capsys)
    lines = err.splitlines()
    assert code == 2 and not started, err
    assert len(lines) == 3, err
    assert any("does not say its prompt format" in line and "--template" in line for line in lines)
    assert any("suite tofu, attacks needs holdout" in line and "save config" in line
               and "--suite leakage,formats" in line for line in lines)
    assert any("the longest" in line and "the model takes 16 positions" in line and "--suite tofu,leakage,attacks"
               in line for line in lines)
    code, _, err, started = _eval(["--model", str(short), "--data", str(store / "tofu"), "--template", "phi",
                                   "--suite", "leakage"], monkeypatch, capsys)
    assert code == 0 and started, err


def test_lm_eval_flags_set_the_profiles_keys_and_reach_the_notebook(plain_folder, tofu_folder, monkeypatch, capsys):
    """Issue #60 point 4: --limit caps every suite's items through the profile's own keys (no new parameter) and is
    recorded as not comparable, --batch-size sets eval_batch_size, --device cpu hides the GPUs from the kernel."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")  # restored after the test
    code, _, err, started = _eval(["--model", str(plain_folder), "--data", str(tofu_folder), "--template", "phi",
                                   "--suite", "tofu", "--limit", "2", "--batch-size", "4", "--device", "cpu",
                                   "--log-samples"], monkeypatch, capsys)
    assert code == 0, err
    params = started["params"]
    assert all(params[k] == 2 for k in runner.evaluate.LIMITED) and params.eval_batch_size == 4
    assert {"eval_max_items", "eval_batch_size"} <= set(started["changed"])
    assert started["own"]["eval_limit"] == 2 and started["own"]["eval_log_samples"] is True
    assert started["own"]["eval_device"] == "cpu" and os.environ["CUDA_VISIBLE_DEVICES"] == ""
    meta = own_results.run_meta(own_model.Request("m", "m", "d", None, ("tofu",), None, False), {}, 2, "cpu")
    assert meta["limit"] == 2 and meta["notes"] == ["not comparable: at most 2 items per split and suite (--limit 2)"]
    # --batch-size auto sets no key at the door: the kernel finds the batch on the model
    code, _, err, started = _eval(["--model", str(plain_folder), "--data", str(tofu_folder), "--template", "phi",
                                   "--suite", "tofu", "--batch-size", "auto"], monkeypatch, capsys)
    assert code == 0, err
    assert "eval_batch_size" not in started["changed"] and started["own"]["eval_batch_auto"] is True
    assert started["params"].eval_batch_size == config.Params.load("eval-tiny").eval_batch_size


def test_batch_size_auto_shrinks_from_lm_evals_start_until_a_pass_fits():
    """--batch-size auto as lm-eval's: the largest batch from 64, taking 0.9 of it on each out-of-memory error, with which a
    forward pass of the longest sequence runs; other errors are not taken for a full memory."""
    import torch

    class Fits(torch.nn.Module):
        def __init__(self, room: int, error: str = "CUDA out of memory. Tried to allocate 2.00 GiB"):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.zeros(1))
            self.room, self.error, self.tried = room, error, []

        def forward(self, input_ids):
            self.tried.append(tuple(input_ids.shape))
            if input_ids.shape[0] * input_ids.shape[1] > self.room:
                raise RuntimeError(self.error)
            return input_ids

    model = Fits(room=20 * 30)
    assert own_cost.largest_batch(model, 30) == 19  # 64, 57, 51, 45, 40, 36, 32, 28, 25, 22, 19: 0.9 of the last
    tried = [shape[0] for shape in model.tried]
    assert tried[0] == 64 and all(b == int(a * 0.9) for a, b in zip(tried, tried[1:])) and tried[-1] == 19
    assert {shape[1] for shape in model.tried} == {30}
    assert own_cost.largest_batch(Fits(room=10**9), 30) == own_cost.AUTO_BATCH_START == 64
    with pytest.raises(RuntimeError, match="not memory"):
        own_cost.largest_batch(Fits(room=1, error="not memory"), 30)


@pytest.mark.parametrize("argv, message", [
    (["--limit", "0"], "--limit '0': a whole number"), (["--batch-size", "x"], "--batch-size 'x': a whole number of at least 1 or auto"),
    (["--device", "tpu"], "--device 'tpu': cpu, cuda or cuda:N")])
def test_bad_flags_are_refused_in_one_line(argv, message, plain_folder, tofu_folder, monkeypatch, capsys):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    code, _, err, started = _eval(["--model", str(plain_folder), "--data", str(tofu_folder), "--template", "phi",
                                   *argv], monkeypatch, capsys)
    assert code == 2 and not started and len(err.splitlines()) == 1, err
    assert message in err


def test_make_eval_passes_the_flags():
    import subprocess

    done = subprocess.run(["make", "-n", "eval", "MODEL=m", "LIMIT=5", "BATCH_SIZE=4", "DEVICE=cpu", "LOG_SAMPLES=1",
                           "OUTPUT_PATH=o", "PY=python"], capture_output=True, text=True, cwd=paths.ROOT)
    line = done.stdout.replace("\\\n", " ")
    for flag in ('--limit "5"', '--batch-size "4"', '--device "cpu"', "--log-samples", '--output-path "o"'):
        assert flag in line, line


def test_log_samples_writes_one_json_line_per_item_and_model(store):
    request = own_model.Request("m", "m", "d", None, ("tofu",), None, False, str(store / "ev"))
    per_item = {"model": {"forget": {"generated": ["a", "b"], "rouge": [0.5, 1.0]}, "retain": {"rouge": [0.1]}}}
    path = own_results.log_samples(config.Params.load("smoke"), request, "tofu", per_item)
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert path.name == "samples_tofu.jsonl" and len(rows) == 3
    assert rows[1] == {"model": "model", "split": "forget", "index": 1, "generated": "b", "rouge": 1.0}


#: open-unlearning's TOFU_EVAL.json layout, as its Evaluator writes it (locuslab/open-unlearning,
#: src/evals/base.py: ``{name}_EVAL.json`` holds ``{metric: result}``, ``{name}_SUMMARY.json`` ``{metric: agg_value}``)
#: with each metric's result as src/evals/metrics/memorization.py returns it: ``{"agg_value": x, "value_by_index":
#: {"0": {"score": truth_ratio}, ...}}`` (``"prob"`` for probabilities, ``"rougeL_recall"`` among ROUGE's keys).
OU_EVAL_FIXTURE = {
    "forget_Q_A_Prob": {"agg_value": 0.4, "value_by_index": {"0": {"prob": 0.3}, "1": {"prob": 0.5}}},
    "forget_quality": {"agg_value": 0.2},
    "forget_truth_ratio": {"agg_value": 0.6, "value_by_index": {"0": {"score": 0.55}, "1": {"score": 0.8}}},
    "model_utility": {"agg_value": 0.5},
}


def _evaluation_entries():
    return {"model": {"forget": {"rouge": 0.5, "probability": 0.25, "truth_ratio": 0.7, "truth_ratio_score": 0.6},
                      "summary": {"model_utility": 0.4, "forget_quality": own_model.NO_REFERENCE},
                      "privacy_skipped": "privacy metrics skipped: holdout10 is not in the folder",
                      "sampled": {"ed_score": 0.125}}}


def test_an_evaluation_is_tabulable_with_a_flat_summary_and_open_unlearnings_files(store):
    """Issue #60 point 5: numbers or null with the reasons in meta.notes, the data recorded as given, a flat
    summary.json that loads into pandas with numeric dtypes, the schema describing the evaluation's file, and
    TOFU_EVAL.json / TOFU_SUMMARY.json in open-unlearning's layout, read back by the parser that reads theirs."""
    import pandas as pd
    from jsonschema import Draft202012Validator

    params = config.Params.load("smoke")
    data = str(store / "my-tofu")
    request = own_model.Request("m", "my-model", data, None, ("tofu", "leakage"), "phi", False,
                                str(runs_eval(params) / "my-model-0123456789"))
    items = {"model": {"forget": {"truth_ratio": [0.5, 0.75, 1.5], "rouge": [1.0, 0.5, 0.0],
                                  "probability": [0.1, 0.2, 0.3], "generated": ["a", "b", "c"]}}}
    meta = own_results.run_meta(request, {"tofu": 1.5}, 3, None)
    meta["evaluated"]["model_identity"] = "abc"
    written = own_results.write_evaluation(params, request, _evaluation_entries(), meta, items)
    got = json.loads(written.read_text())
    assert got["model"]["summary"]["forget_quality"] is None and "privacy_skipped" not in got["model"]
    assert any("forget_quality: null, not computed" in n for n in got["meta"]["notes"])
    assert any("holdout10 is not in the folder" in n for n in got["meta"]["notes"])
    assert any("not comparable" in n for n in got["meta"]["notes"])
    assert got["meta"]["parameters"]["data_source"] == data
    schema = json.loads((paths.ROOT / "docs" / "metrics.schema.json").read_text())
    assert [e.message for e in Draft202012Validator(schema).iter_errors(got)] == []
    bad = {**got, "model": {"summary": {"forget_quality": "not computed"}}}
    assert list(Draft202012Validator(schema).iter_errors(bad))  # a text in a number's place fails the schema
    summary = json.loads((written.parent / "summary.json").read_text())
    assert summary["model_utility"] == 0.4 and summary["forget_quality"] is None and summary["sampled.ed_score"] == 0.125
    frame = pd.DataFrame([summary], dtype=float)
    assert all(pd.api.types.is_float_dtype(t) for t in frame.dtypes)
    ours = own_reference.read_ou_eval(written.parent / "TOFU_EVAL.json")
    assert ours["forget_truth_ratio"] == [0.5, 0.75, 1.5] and ours["forget_Q_A_ROUGE"] == [1.0, 0.5, 0.0]
    ou_summary = json.loads((written.parent / "TOFU_SUMMARY.json").read_text())
    assert ou_summary["forget_truth_ratio"] == 0.6 and ou_summary["model_utility"] == 0.4
    (store / "TOFU_EVAL.json").write_text(json.dumps(OU_EVAL_FIXTURE, indent=4))
    theirs = own_reference.read_ou_eval(store / "TOFU_EVAL.json")
    assert theirs == {"forget_Q_A_Prob": [0.3, 0.5], "forget_truth_ratio": [0.55, 0.8]}
    frame = own_results.evaluations_frame(params)
    assert list(frame.index) == ["my-model-0123456789"] and frame.loc["my-model-0123456789", "model_utility"] == 0.4


def runs_eval(params):
    from unlearnkit import runs

    return runs.store(params) / runs.EVAL


@pytest.mark.parametrize("payload, message", [
    ({"x": 1}, "not a TOFU_EVAL.json"),
    ({"forget_truth_ratio": {"value_by_index": {"0": {"score": 1.0}, "2": {"score": 1.0}}}}, "is not indexed 0..1"),
    ({"forget_truth_ratio": {"value_by_index": {"0": {"score": "x"}}}}, "item 0 holds no single finite number"),
])
def test_a_received_tofu_eval_is_checked_as_data_in_one_line(payload, message, tmp_path):
    (tmp_path / "TOFU_EVAL.json").write_text(json.dumps(payload))
    with pytest.raises(ValueError) as e:
        own_reference.read_ou_eval(tmp_path / "TOFU_EVAL.json")
    assert message in str(e.value) and len(str(e.value).splitlines()) == 1


def test_the_documented_one_liner_loads_a_stores_evaluations_into_pandas(tmp_path, monkeypatch):
    import pandas as pd

    text = (paths.ROOT / "docs" / "running.md").read_text()
    (line,) = [ln for ln in text.splitlines() if ln.startswith("import json, pathlib, pandas as pd; frame =")]
    for name, value in (("a-1", 0.5), ("b-2", None)):
        folder = tmp_path / "runs" / "default" / "seed-0" / "eval" / name
        folder.mkdir(parents=True)
        (folder / "summary.json").write_text(json.dumps({"forget_quality": value, "model_utility": 0.25}))
    monkeypatch.chdir(tmp_path)
    namespace = {}
    exec(line, namespace)
    frame = namespace["frame"]
    assert isinstance(frame, pd.DataFrame) and sorted(frame.index) == ["a-1", "b-2"]
    assert all(pd.api.types.is_float_dtype(t) for t in frame.dtypes)


def _ou_reference(folder, n, ratios=None, **extra):
    """A retain model's TOFU_EVAL.json in open-unlearning's layout (OU_EVAL_FIXTURE's) for ``n`` forget items."""
    folder.mkdir(parents=True, exist_ok=True)
    ratios = ratios or [0.5 + 0.1 * i for i in range(n)]
    payload = {"forget_truth_ratio": {"agg_value": float(sum(ratios) / n),
                                      "value_by_index": {str(i): {"score": r} for i, r in enumerate(ratios)}},
               "forget_Q_A_Prob": {"agg_value": 0.2, "value_by_index": {str(i): {"prob": 0.2} for i in range(n)}},
               "model_utility": {"agg_value": 0.5}, "mia_min_k": {"agg_value": 0.5}, **extra}
    (folder / "TOFU_EVAL.json").write_text(json.dumps(payload, indent=4))
    return folder


def test_a_reference_given_as_open_unlearnings_results_gives_forget_quality_and_privleak(plain_folder, small_corpus,
                                                                                         store):
    """Issue #60 point 6: --reference takes a retain model's evaluation (open-unlearning's TOFU_EVAL.json, the layout
    of OU_EVAL_FIXTURE) instead of weights: forget quality is the KS test against its forget truth ratios, privleak
    is taken against its mia_min_k, the reference's own row is its aggregates, and no suite loads it as a model."""
    from unlearnkit.metrics.tofu import forget_quality

    params = config.Params.load("eval-tiny")
    n = own_reference.forget_items(params, small_corpus)
    ou = _ou_reference(store / "ou-retain", n)
    request = own_model.check_request(params, str(plain_folder), str(small_corpus.folder), str(ou), "all", "phi")
    assert own_model.named(request) == {"model": str(plain_folder)} and "(its results)" in own_model.describe(request)
    own_model.state_template(request)
    tofu, items = own_model.tofu_suite(params, request, own_model.corpus(params, request))
    ratios = [0.5 + 0.1 * i for i in range(n)]
    assert tofu["model"]["summary"]["forget_quality"] == forget_quality(items["model"]["forget"]["truth_ratio"], ratios)
    assert tofu["model"]["summary"]["privleak_retain_auc"] == 0.5 and isinstance(tofu["model"]["summary"]["privleak"],
                                                                                 float)
    assert tofu["reference"]["forget"]["probability"] == 0.2 and tofu["reference"]["summary"]["model_utility"] == 0.5
    meta = own_results.run_meta(request, {}, None, None)
    assert meta["evaluated"]["reference_given_as"] == "results" and any("given as results" in x for x in meta["notes"])
    first = own_reference.identity(str(ou))
    (ou / "TOFU_EVAL.json").write_text((ou / "TOFU_EVAL.json").read_text().replace("0.2", "0.25"))
    assert own_reference.identity(str(ou)) != first  # keyed on the content, not the name


@pytest.mark.parametrize("edit, message", [
    (lambda n: {"ratios": [0.5] * (n + 1)}, "forget_truth_ratio holds"),
    (lambda n: {"forget_Q_A_ROUGE": {"value_by_index": {str(i): {"rougeL_recall": float("nan")} for i in range(n)}}},
     "forget_Q_A_ROUGE item 0 holds no single finite number"),
])
def test_a_reference_given_as_results_is_checked_as_data_before_any_work(edit, message, plain_folder, small_corpus,
                                                                         store, monkeypatch, capsys):

    n = own_reference.forget_items(config.Params.load("smoke"), small_corpus)
    ou = _ou_reference(store / "ou-retain", n, **edit(n))
    code, _, err, started = _eval(["--model", str(plain_folder), "--data", str(small_corpus.folder), "--template",
                                   "phi", "--reference", str(ou / "TOFU_EVAL.json")], monkeypatch, capsys)
    assert code == 2 and not started and len(err.splitlines()) == 1 and message in err, err


def test_a_second_evaluation_against_the_same_reference_samples_and_scores_no_reference(tiny_tokenizer, small_corpus,
                                                                                        store):
    """The leakage and formats suites keep the reference's scores in its shared folder, each under its own name: a
    second evaluation against it rewrites none of them (before, the two suites' entries shared one name and each
    evicted the other, so every evaluation sampled and scored the retain model again)."""
    params = config.Params.load("eval-tiny")
    retain = models.save_plain_model(build("llama", tiny_tokenizer, 1), tiny_tokenizer, store / "my-retain")

    def evaluate(seed: int) -> dict[str, int]:
        model = models.save_plain_model(build("llama", tiny_tokenizer, seed), tiny_tokenizer, store / f"model-{seed}")
        request = own_model.chosen(params, own_model.check_request(params, str(model), str(small_corpus.folder),
                                                                   str(retain), "leakage,formats", "phi"))
        own_model.state_template(request)
        source = own_model.corpus(params, request)
        own_model.leakage_suite(params, request, source)
        own_model.formats_suite(params, request, source)
        cache = runs.notebook_dir(params, own_model.cache_notebook(params, request, own_model.REFERENCE)) / "cache"
        return {p.name: p.stat().st_mtime_ns for p in cache.glob("*.json")}

    first = evaluate(0)
    assert len(first) == 2 and any(name.startswith(f"reference{own_model.LEAKAGE_CACHE}-") for name in first), first
    assert evaluate(2) == first  # the same two entries, neither rewritten


def test_our_evaluation_of_a_retain_model_is_a_reference_as_good_as_its_weights_and_is_scored_once(
        tiny_tokenizer, small_corpus, store, monkeypatch):
    """Issue #60 point 6: the retain model's scores are computed once per reference (its own cache folder, keyed on
    its content and the settings) and reused by a second evaluation against it; its evaluation folder (our
    TOFU_EVAL.json, read by the parser of open-unlearning's layout) as --reference gives the same forget quality."""
    import time

    from unlearnkit import pipeline

    params = config.Params.load("eval-tiny")
    mine = models.save_plain_model(build("llama", tiny_tokenizer, 0), tiny_tokenizer, store / "my-model")
    retain = models.save_plain_model(build("llama", tiny_tokenizer, 1), tiny_tokenizer, store / "my-retain")
    scored = []
    evaluate_models = pipeline.evaluate_models
    monkeypatch.setattr(pipeline, "evaluate_models", lambda named, *a, **k: scored.append(sorted(named)) or
                        evaluate_models(named, *a, **k))

    def evaluate(model, reference):
        request = own_model.chosen(params, own_model.check_request(params, str(model), str(small_corpus.folder),
                                                                   str(reference), "tofu", "phi"))
        own_model.state_template(request)
        started = time.time()
        tofu, items = own_model.tofu_suite(params, request, own_model.corpus(params, request))
        return request, tofu, items, time.time() - started

    other = models.save_plain_model(build("llama", tiny_tokenizer, 2), tiny_tokenizer, store / "other-model")
    request, tofu, items, first_s = evaluate(mine, retain)
    assert scored == [["reference"], ["model"]]
    _, again, _, second_s = evaluate(other, retain)
    assert scored[2:] == [["model"]], scored  # the reference's scores came from its cache
    assert again["reference"] == tofu["reference"]
    print(f"first evaluation's tofu suite {first_s:.1f} s, second against the same reference {second_s:.1f} s")
    # the retain model's own evaluation, written as runner eval writes it, is a reference given as results
    retain_request = own_model.chosen(params, own_model.check_request(params, str(retain), str(small_corpus.folder),
                                                                      None, "tofu", "phi"))
    its, its_items = own_model.tofu_suite(params, retain_request, own_model.corpus(params, retain_request))
    written = own_results.write_evaluation(params, retain_request, own_results.metrics_entries(its),
                                           own_results.run_meta(retain_request, {}), its_items)
    _, given, _, _ = evaluate(mine, written.parent)
    assert given["model"]["summary"]["forget_quality"] == tofu["model"]["summary"]["forget_quality"]
    assert given["model"]["summary"]["privleak"] == pytest.approx(tofu["model"]["summary"]["privleak"])


def test_the_page_says_what_each_suites_numbers_mean_against_their_bars(store):
    """Issue #60 point 7: forget quality 0.034 was shown with no 0.05 bar beside it, model and reference not side by
    side, suites not requested left as empty sections. Now one sentence per suite against its bars (TOFU's 0.05, the
    retain model's value, the guessing floor), the model and the reference named, 'not requested' where not run."""
    import pandas as pd

    params = config.Params.load("smoke")
    request = own_model.Request("/m/my-model", "my-model", "d", "/r/my-retain", ("tofu", "formats", "attacks"), None,
                                False)
    entries = {"model": {"summary": {"forget_quality": 0.034, "model_utility": 0.5, "privleak": -12.5},
                         "formats": {"forget": {"mcqa": 0.5}},
                         "attacked forget": {"rouge": 0.25}, "relearned": {"rouge": 0.75}},
               "reference": {"summary": {"forget_quality": 1.0, "model_utility": 0.375},
                             "formats": {"forget": {"mcqa": 0.375}},
                             "attacked forget": {"rouge": 0.25}, "relearned": {"rouge": 0.5}}}
    text = own_results.readings(params, request, entries)
    lines = text.splitlines()
    assert "**my-model** against the reference **my-retain**" in lines[0]
    (tofu,) = [ln for ln in lines if ln.startswith("- **tofu**")]
    assert "Forget quality 0.034 is below TOFU's bar of 0.05" in tofu
    assert "Model utility 0.500 (reference 0.375, difference +0.125)" in tofu and "privleak -12.5 %" in tofu
    (formats,) = [ln for ln in lines if ln.startswith("- **formats**")]
    floor = 1 / params.format_options
    assert f"guessing floor of 1/{params.format_options} = {floor:.2f}" in formats and "the reference's 0.38" in formats
    (attacks,) = [ln for ln in lines if ln.startswith("- **attacks**")]
    assert "+0.50" in attacks and "the reference's by +0.25" in attacks and "+0.25 beyond it" in attacks
    assert "- **leakage**: not requested." in lines
    entries["model"]["summary"]["forget_quality"] = 0.2
    assert "Forget quality 0.2 is at or above TOFU's bar" in own_results.readings(params, request, entries)
    table = own_results.side_by_side(pd.DataFrame({"model_utility": [0.5, 0.375]}, index=["model", "reference"]))
    assert table.loc["model − reference", "model_utility"] == 0.125


def test_a_store_of_evaluations_has_an_index_of_them(store):
    """Issue #60 point 7: on a store with no notebook 10 the report's front page was an arbitrary evaluation; it is
    now the list of evaluations, each linked with its model, reference and headline numbers (a received store's
    names escaped, a number that is not one shown as a dash)."""
    from unlearnkit.report import site

    params = config.Params.load("smoke")
    for name, fq, model in (("a-0123456789", 0.5, "<b>mine</b>"), ("b-0123456789", "x", "theirs")):
        folder = runs_eval(params) / name
        folder.mkdir(parents=True)
        (folder / "eval_model.ipynb").write_text("{}")
        (folder / "metrics.json").write_text(json.dumps({"meta": {"evaluated": {
            "model": model, "reference": "retain", "reference_given_as": "results"}}}))
        (folder / "summary.json").write_text(json.dumps({"forget_quality": fq, "model_utility": 0.25}))
    entries = site.pages(params)
    assert [file for file, _ in entries] == ["eval-a-0123456789.html", "eval-b-0123456789.html"]
    text = site.evaluations_notebook(entries).cells[0].source
    assert "[a-0123456789](eval-a-0123456789.html) | &lt;b&gt;mine&lt;/b&gt; | retain (results) | 0.5 | 0.25 |" in text
    assert "| [b-0123456789](eval-b-0123456789.html) | theirs | retain (results) | — | 0.25 | — |" in text


def test_the_leakage_suite_gives_leak_at_k_for_the_users_model(store):
    """Issue #57 item 5: runner eval's leakage suite gives the leak@k curve of the user's model and its reference,
    from each forget question's leaking samples, in notebook 09's entry shape (ks, n, the mean per k)."""
    import pandas as pd
    from unlearnkit.metrics import meta_eval

    tables = {"model": pd.DataFrame({"leaks": [0, 1, 4]}), "reference": pd.DataFrame({"leaks": [0, 0, 1]})}
    summaries = {"model": {"n_samples": 4}, "reference": {"n_samples": 4}}
    curves = own_results.leak_curves(tables, summaries)
    assert curves["model"].ks == (1, 2, 4)
    assert curves["model"].mean[0] == pytest.approx((0 + 1 / 4 + 1) / 3)  # leak@1: the share of leaking samples
    assert curves["model"].mean[-1] == pytest.approx(2 / 3)  # leak@n: the questions with a leak
    assert list(curves["reference"].mean) == list(meta_eval.leak_at_k_curve([0, 0, 1], 4).mean)
    entries = own_results.metrics_entries(leak_summaries=summaries, leak_at_k=curves)
    assert entries["model"]["leak_at_k"] == {"ks": [1, 2, 4], "n": 4,
                                             "leak_at_k": [float(v) for v in curves["model"].mean]}
    frame = own_results.leak_frame(curves)
    assert list(frame.columns) == ["leak@1", "leak@2", "leak@4"] and frame.loc["model", "leak@4"] == pytest.approx(2 / 3)
