"""The training loop: it learns, masks prompts, warms up, checkpoints atomically, and resumes exactly."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch
from devices import close
from unlearnkit import models, training

HERE = Path(__file__).parent


def _examples(corpus, tokenizer, template, n=16):
    return [models.encode_qa(tokenizer, template, r["question"], r["answer"]) for r in corpus.load("full")[:n]]


def test_encode_qa_scores_answer_and_eos_only(tiny_tokenizer, template):
    enc = models.encode_qa(tiny_tokenizer, template, "Who wrote it?", "Ann did.")
    prompt = models.encode_prompt(tiny_tokenizer, template, "Who wrote it?")
    assert enc["input_ids"][: len(prompt)] == prompt
    assert all(label == -100 for label in enc["labels"][: len(prompt)])
    assert enc["labels"][len(prompt):] == enc["input_ids"][len(prompt):]
    assert enc["labels"][-1] == tiny_tokenizer.eos_token_id
    assert tiny_tokenizer.decode(enc["labels"][len(prompt):-1]) == "Ann did."


def test_training_lowers_the_loss_and_logs_every_step(small_corpus, tiny_tokenizer, tiny_model, template, tmp_path):
    examples = _examples(small_corpus, tiny_tokenizer, template)
    cfg = training.TrainConfig(output_dir=tmp_path, epochs=10, batch_size=8, lr=5e-3, warmup=0.1, progress=False)
    result = training.train(tiny_model, examples, cfg, collate_fn=lambda b: models.collate(b, tiny_tokenizer.pad_token_id))
    assert result.steps == 20 and [h["step"] for h in result.history] == list(range(1, 21))
    assert result.history[-1]["loss"] < 0.7 * result.history[0]["loss"]
    assert json.loads((tmp_path / "history.json").read_text()) == result.history


def test_warmup_then_linear_decay():
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    sched = training.make_schedule(opt, "linear", warmup_steps=4, total_steps=10)
    lrs = []
    for _ in range(10):
        lrs.append(sched.get_last_lr()[0])
        opt.step()
        sched.step()
    assert lrs[:4] == pytest.approx([0.25, 0.5, 0.75, 1.0])
    assert lrs[4:] == sorted(lrs[4:], reverse=True) and lrs[-1] < 0.2
    with pytest.raises(ValueError, match="unknown schedule"):
        training.make_schedule(opt, "exponential", 0, 10).step()


def test_incomplete_checkpoint_is_never_resumed_from(tmp_path):
    (tmp_path / "checkpoint-4").mkdir()
    (tmp_path / "checkpoint-4" / "trainer_state.json").write_text('{"step": 4, "history": []}')
    (tmp_path / "checkpoint-4" / "model.safetensors").write_bytes(b"")
    (tmp_path / ".checkpoint-8.tmp").mkdir()  # a run killed while writing step 8
    (tmp_path / "checkpoint-12").mkdir()  # no trainer_state.json: incomplete
    (tmp_path / "checkpoint-16").mkdir()  # pickled weights only: never unpickled, so never resumed from
    (tmp_path / "checkpoint-16" / "trainer_state.json").write_text("{}")
    (tmp_path / "checkpoint-16" / "pytorch_model.bin").write_bytes(b"")
    assert training.latest_checkpoint(tmp_path).name == "checkpoint-4"


def _checkpoint(folder: Path, step: int, optimizer: bytes | None = None, custom: bool = False) -> Path:
    """A checkpoint folder as the loop writes one (its weights a stand-in): ``optimizer`` the bytes of its
    optimizer.bin (a state torch saved, by default), ``custom`` an accelerate custom-object pickle beside it."""
    import io

    checkpoint = folder / f"checkpoint-{step}"
    checkpoint.mkdir(parents=True)
    (checkpoint / "trainer_state.json").write_text(json.dumps({"step": step, "history": []}))
    (checkpoint / "model.safetensors").write_bytes(b"")
    if optimizer is None:
        buffer = io.BytesIO()
        torch.save({"state": {}, "param_groups": [{"lr": 0.1, "params": [0]}]}, buffer)
        optimizer = buffer.getvalue()
    (checkpoint / "optimizer.bin").write_bytes(optimizer)
    if custom:
        (checkpoint / "custom_checkpoint_0.pkl").write_bytes(b"")
    return checkpoint


@pytest.fixture()
def loads(monkeypatch):
    """The files accelerate's weights-only loader is asked to read, as '<checkpoint>/<file>'."""
    import accelerate.utils.other

    read, real = [], accelerate.utils.other.load

    def counted(f, *args, **kwargs):
        read.append(f"{Path(f).parent.name}/{Path(f).name}")
        return real(f, *args, **kwargs)

    monkeypatch.setattr(accelerate.utils.other, "load", counted)
    return read


def test_resuming_reads_checkpoints_newest_first_and_stops_at_the_first_it_can_resume_from(tmp_path, loads, caplog):
    for step in (4, 8):
        _checkpoint(tmp_path, step)
    _checkpoint(tmp_path, 12, optimizer=b"not a state torch saved")  # refused by the weights-only loader
    _checkpoint(tmp_path, 16, custom=True)  # a custom-object pickle: passed over unread
    with caplog.at_level("WARNING", logger="unlearnkit.training"):
        assert training.latest_checkpoint(tmp_path).name == "checkpoint-8"
    assert loads == ["checkpoint-12/optimizer.bin", "checkpoint-8/optimizer.bin"]  # checkpoint-4 never read
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2 and all("\n" not in line for line in lines), lines
    assert lines[0].startswith("checkpoint checkpoint-16 passed over: custom_checkpoint_0.pkl")
    assert lines[1] == "checkpoint checkpoint-12 passed over: optimizer.bin is not loadable weights-only"


#: trainer_state.json as a received or hand-edited checkpoint may hold it, with the words its warning line says.
MALFORMED_STATES = {
    "truncated": ('{"step": 8, "hist', "is not JSON"),
    "a list": ("[8, []]", "is a list, not a mapping"),
    "a step as text": ('{"step": "8", "history": []}', "names step '8'"),
    "another step": ('{"step": 3, "history": []}', "names step 3, not the folder's 8"),
    "no history": ('{"step": 8}', "no history"),
    "a history of text": ('{"step": 8, "history": "abc"}', "no history"),
    "a scheduler of text": ('{"step": 8, "history": [], "scheduler": "x"}', "scheduler: a str, not a mapping"),
    "a scheduler key that is no state": ('{"step": 8, "history": [], "scheduler": {"optimizer": 1}}',
                                         "scheduler: unknown key 'optimizer'"),
    "a lambda's state": ('{"step": 8, "history": [], "scheduler": {"lr_lambdas": [{"__code__": 1}]}}',
                         "lr_lambdas must be a list of nulls"),
    "a rate of text": ('{"step": 8, "history": [], "scheduler": {"base_lrs": ["0.1"]}}',
                       "base_lrs must be a list of finite numbers"),
    "nested 100,000 deep": ("[" * 100_000 + "]" * 100_000, "nested past the JSON parser's stack"),
}


@pytest.mark.parametrize("name", MALFORMED_STATES)
def test_a_malformed_trainer_state_is_passed_over_in_one_line(tmp_path, caplog, name):
    text, words = MALFORMED_STATES[name]
    _checkpoint(tmp_path, 4)
    (_checkpoint(tmp_path, 8) / "trainer_state.json").write_text(text)
    with caplog.at_level("WARNING", logger="unlearnkit.training"):
        assert training.latest_checkpoint(tmp_path).name == "checkpoint-4"
    [line] = [r.getMessage() for r in caplog.records]
    assert line.startswith("checkpoint checkpoint-8 passed over: trainer_state.json ") and words in line, line
    assert "\n" not in line and len(line) < 300


def test_the_loops_own_scheduler_state_passes(tmp_path):
    optimizer = torch.optim.AdamW([{"params": [torch.nn.Parameter(torch.zeros(2, 2))]},
                                   {"params": [torch.nn.Parameter(torch.zeros(2))], "weight_decay": 0.0}], lr=0.1)
    scheduler = training.make_schedule(optimizer, "linear", 2, 10)
    for _ in range(3):
        optimizer.step()
        scheduler.step()
    state = {"step": 8, "history": [{"step": 1, "loss": float("nan")}], "scheduler": scheduler.state_dict()}
    (_checkpoint(tmp_path, 8) / "trainer_state.json").write_text(json.dumps(state))
    assert training.trainer_state(tmp_path / "checkpoint-8")["scheduler"] == json.loads(json.dumps(
        scheduler.state_dict()))
    assert training.latest_checkpoint(tmp_path).name == "checkpoint-8"


def test_a_killed_run_whose_trainer_state_is_malformed_trains_from_the_start(killed_run, caplog):
    """Before, resuming read checkpoint-4's trainer_state.json after loading its states and stopped with the JSON
    decoder's traceback; now the checkpoint is passed over in one line and the run trains from step 1."""
    [checkpoint] = training.all_checkpoints(killed_run.out)
    (checkpoint / "trainer_state.json").write_text('{"step": 4, "history": [')
    with caplog.at_level("WARNING", logger="unlearnkit.training"):
        killed_run.resume()
    assert killed_run.history_steps() == list(range(1, 13))
    assert [r.getMessage() for r in caplog.records if "passed over" in r.getMessage()] == [
        "checkpoint checkpoint-4 passed over: trainer_state.json is not JSON (JSONDecodeError: Expecting value: "
        "line 1 column 25 (char 24))"]


def test_pruning_and_clearing_read_no_checkpoint_and_remove_the_ones_resuming_passed_over(
        small_corpus, tiny_tokenizer, tmp_path, loads):
    sys.path.insert(0, str(HERE))
    import resume_job

    tok_dir = tmp_path / "tok"
    tiny_tokenizer.save_pretrained(tok_dir)
    out = tmp_path / "run"
    _checkpoint(out, 2, optimizer=b"not a state torch saved")
    _checkpoint(out, 100, custom=True)
    (out / ".checkpoint-3.tmp").mkdir()  # a save cut short
    resume_job.run(str(tok_dir), str(small_corpus.folder), str(out))  # from the start: both are passed over
    assert loads == ["checkpoint-2/optimizer.bin"]  # at resume only, never when pruning after a save
    assert sorted(p.name for p in out.glob("checkpoint-*")) == ["checkpoint-4", "checkpoint-8"]  # keep_checkpoints 2
    training.clear_checkpoints(out)
    assert loads == ["checkpoint-2/optimizer.bin"]
    assert not list(out.glob("*checkpoint-*"))


@pytest.mark.parametrize("schedule", ["linear", "cosine", "constant"])
def test_the_schedule_resumes_from_its_json_state_or_by_stepping_to_the_same_rate(schedule):
    def fresh():
        opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1)
        return opt, training.make_schedule(opt, schedule, 3, 20)

    opt, straight = fresh()
    for _ in range(7):
        opt.step()
        straight.step()
    state = json.loads(json.dumps(straight.state_dict()))  # what trainer_state.json keeps
    for kept in (state, None):
        opt2, resumed = fresh()
        training.restore_schedule(resumed, kept, 7)
        assert resumed.get_last_lr() == pytest.approx(straight.get_last_lr())
        opt.step(), opt2.step(), straight.step(), resumed.step()
        assert resumed.get_last_lr() == pytest.approx(straight.get_last_lr())
        opt, straight = fresh()
        for _ in range(7):
            opt.step()
            straight.step()


@pytest.mark.slow
def test_resume_after_a_killed_run_gives_the_same_weights(killed_run, tiny_tokenizer, tmp_path):
    resume_job = killed_run.job
    uninterrupted = resume_job.run(str(killed_run.tokenizer_dir), str(killed_run.corpus_dir), str(tmp_path / "straight"))
    # the tied embeddings' note of each checkpoint (ten lines of notebook 01) is left out, nothing else
    assert "Removed shared tensor" not in killed_run.stderr
    checkpoint = training.latest_checkpoint(killed_run.out)
    assert checkpoint.name == "checkpoint-4"
    assert "scheduler" in json.loads((checkpoint / "trainer_state.json").read_text())
    assert not list(checkpoint.glob("custom_checkpoint_*.pkl"))
    resumed = killed_run.resume()

    assert killed_run.history_steps() == list(range(1, 13))
    for (name, a), (_, b) in zip(uninterrupted.state_dict().items(), resumed.state_dict().items()):
        assert close(a, b, atol=1e-6, rtol=0), name
    # and the weights did move: the comparison is not between two untouched models
    fresh = resume_job.models.build_tiny_llama(tiny_tokenizer, resume_job.TINY, seed=0)
    assert not close(fresh.lm_head.weight, resumed.lm_head.weight)


def test_a_run_folder_of_other_parameters_is_discarded_with_its_companions(tmp_path, monkeypatch):
    from unlearnkit import paths
    from unlearnkit.pipeline import claim_run_folder

    monkeypatch.setattr(paths, "RUNS", tmp_path)
    train, trajectory = tmp_path / "run.train", tmp_path / "run.trajectory"
    claim_run_folder(train, "a", also_clear=(trajectory,))
    (train / "checkpoint-00010").mkdir()
    (trajectory / "step-00005").mkdir(parents=True)

    claim_run_folder(train, "a", also_clear=(trajectory,))  # same parameters: resume from what is there
    assert (train / "checkpoint-00010").is_dir() and (trajectory / "step-00005").is_dir()

    claim_run_folder(train, "b", also_clear=(trajectory,))  # other parameters: nothing stale survives
    assert not (train / "checkpoint-00010").exists() and not trajectory.exists()
    assert (train / "params_hash").read_text() == "b"

    (train / "params_hash").unlink()  # no marker: checkpoints of unknown origin are not resumed
    (train / "checkpoint-00020").mkdir()
    claim_run_folder(train, "b")
    assert not (train / "checkpoint-00020").exists()


def test_the_model_comes_back_on_the_device_it_was_given(small_corpus, tiny_tokenizer, tiny_model, template, tmp_path,
                                                         monkeypatch):
    """On a GPU accelerate moves the model there to train it; train() moves it back, so a test (or any caller) that
    built it on the CPU never feeds CPU inputs to a model left on cuda. Here the accelerator's device is patched to
    cuda on a CPU: the model records where it is sent (the CPU one really runs), and the batches are lists, which
    accelerate's loader leaves where they are."""
    from accelerate import Accelerator

    monkeypatch.setattr(Accelerator, "device", property(lambda self: torch.device("cuda")))
    monkeypatch.setattr(training, "card_bytes", lambda device: 80 * 2**30)  # the micro-batch rule reads the card
    sent: list[torch.device] = []
    real_to = tiny_model.to

    def to(device, *args, **kwargs):
        sent.append(torch.device(device))
        return real_to(device, *args, **kwargs) if torch.device(device).type == "cpu" else tiny_model

    monkeypatch.setattr(tiny_model, "to", to)
    pad = tiny_tokenizer.pad_token_id

    def loss_on_the_cpu(model, batch):
        return training.causal_lm_loss(model, {k: torch.tensor(v) for k, v in batch.items()})

    cfg = training.TrainConfig(output_dir=tmp_path, max_steps=2, batch_size=4, lr=1e-3, progress=False)
    result = training.train(tiny_model, _examples(small_corpus, tiny_tokenizer, template, 8), cfg,
                            collate_fn=lambda b: {k: v.tolist() for k, v in models.collate(b, pad).items()},
                            loss_fn=loss_on_the_cpu)
    assert result.micro_batch["batch_size"] == 4 and result.micro_batch["card_bytes"] == 80 * 2**30  # the GPU chose
    assert sent == [torch.device("cuda"), torch.device("cpu")]  # prepared onto the accelerator, then given back
    assert models.device_of(tiny_model).type == "cpu"


PHI_15 = {"n_parameters": 1_418_270_720, "hidden_size": 2048, "num_layers": 24, "vocab_size": 51200,
          "tokens_per_example": 64}


@pytest.mark.parametrize(("gib", "split"), [(80, (32, 1)), (40, (32, 1)), (32, (16, 2)), (24, (1, 32)), (16, (1, 32))])
def test_the_micro_batch_rule_is_a_function_of_the_card_and_the_model(gib, split):
    """Phi-1.5 at the paper's global batch of 32: the whole batch in one micro-batch on an 80 GB card, halves where
    the budget holds 18 examples, one at a time where even the weights and AdamW's states exceed it."""
    assert training.gpu_micro_batches(32, gib * 2**30, **PHI_15) == split
    assert training.gpu_micro_batches(32, gib * 2**30, **PHI_15) == split  # no state: the same answer again


def test_the_micro_batch_rule_divides_the_global_batch_and_grows_with_the_card():
    splits = [training.gpu_micro_batches(24, gib * 2**30, **PHI_15) for gib in range(16, 90, 2)]
    assert all(b * a == 24 for b, a in splits) and [b for b, _ in splits] == sorted(b for b, _ in splits)
    assert {b for b, _ in splits} == {1, 4, 12, 24}  # divisors of 24 only, from one at a time to the whole batch
    with pytest.raises(ValueError, match="card_bytes must be a positive integer, got 0"):
        training.gpu_micro_batches(32, 0, **PHI_15)


def _card_for(model, examples, fits: int) -> int:
    """A card's total memory on which the micro-batch rule fits exactly ``fits`` examples of ``examples``."""
    c = model.config
    static = 16 * sum(p.numel() for p in model.parameters())
    per_example = training.tokens_per_example(examples) * (68 * c.hidden_size * c.num_hidden_layers
                                                           + 12 * c.vocab_size)
    return int((static + (fits + 0.5) * per_example) / training.CARD_HEADROOM)


def _on_a_patched_gpu(monkeypatch, card: int) -> None:
    """The training loop runs on the CPU, but chooses its micro-batches as on a CUDA card of ``card`` bytes."""
    real = training.choose_micro_batches
    monkeypatch.setattr(training, "card_bytes", lambda device: card)
    monkeypatch.setattr(training, "choose_micro_batches",
                        lambda model, examples, b, a, device, how="auto": real(model, examples, b, a,
                                                                             torch.device("cuda"), how))


def _fit(model, examples, pad, out, **kw):
    cfg = training.TrainConfig(output_dir=out, lr=1e-3, progress=False, schedule="constant", **kw)
    return training.train(model, examples, cfg, collate_fn=lambda b: models.collate(b, pad))


def test_a_gpu_splits_the_global_batch_by_the_rule_and_records_it(small_corpus, tiny_tokenizer, tiny_model, template,
                                                                   tmp_path, monkeypatch):
    """On a (patched) card that holds 2 examples, 8 x 1 trains as 2 x 4 with each micro-batch weighted by its answer
    tokens: the same update as 8 x 1 on the CPU up to rounding; the split is in the result and trainer_state.json,
    and absent from a CPU run's."""
    import copy

    examples = _examples(small_corpus, tiny_tokenizer, template, 16)
    pad = tiny_tokenizer.pad_token_id
    on_cpu = copy.deepcopy(tiny_model)
    plain = _fit(on_cpu, examples, pad, tmp_path / "cpu", max_steps=2, batch_size=8, checkpoint_every=1)
    # on a CPU no split is recorded; on a CUDA machine this run is on the card, whose own rule keeps 8 x 1 and says so
    # (seen on an H200: the test once asserted None there)
    on_a_card = torch.cuda.is_available()
    assert (plain.micro_batch is not None) == on_a_card
    if on_a_card:
        assert plain.micro_batch["chosen_by"] == "training.gpu_micro_batches"
    state = json.loads((training.latest_checkpoint(tmp_path / "cpu") / "trainer_state.json").read_text())
    assert ("micro_batch" in state) == on_a_card

    _on_a_patched_gpu(monkeypatch, _card_for(tiny_model, examples, fits=2))
    on_gpu = copy.deepcopy(tiny_model)
    split = _fit(on_gpu, examples, pad, tmp_path / "gpu", max_steps=2, batch_size=8, checkpoint_every=1)
    assert {k: split.micro_batch[k] for k in ("batch_size", "grad_accum", "configured")} == \
        {"batch_size": 2, "grad_accum": 4, "configured": [8, 1]}
    state = json.loads((training.latest_checkpoint(tmp_path / "gpu") / "trainer_state.json").read_text())
    assert state["micro_batch"] == split.micro_batch
    assert [h["loss"] for h in split.history] == pytest.approx([h["loss"] for h in plain.history], rel=1e-5)
    for (name, a), b in zip(on_cpu.named_parameters(), on_gpu.parameters(), strict=True):
        assert close(a, b, atol=2e-5, rtol=1e-4), name
    assert not close(tiny_model.lm_head.weight, on_gpu.lm_head.weight)  # and it did train


def test_metrics_json_names_the_split_only_where_a_gpu_chose_it(small_corpus, tiny_tokenizer, tiny_model, template,
                                                                tmp_path, monkeypatch):
    """A model saved by a CPU run leaves every metrics.json as it was; one whose micro-batches a (patched) card chose
    is named in each metrics.json of its seed with the split the training record holds (issue #61)."""
    import copy

    from unlearnkit import config, paths, runs
    from unlearnkit.pipeline.store import save

    monkeypatch.setattr(paths, "RUNS", tmp_path / "runs")
    params = config.Params.load("smoke")
    examples = _examples(small_corpus, tiny_tokenizer, template, 8)
    pad = tiny_tokenizer.pad_token_id
    on_a_card = torch.cuda.is_available()  # there the card's own rule chooses, and says so
    plain = _fit(copy.deepcopy(tiny_model), examples, pad, tmp_path / "cpu", max_steps=1, batch_size=8)
    save(tiny_model, tiny_tokenizer, template, runs.model_dir(params, "target"), "k1", plain.history,
          micro_batch=plain.micro_batch)
    runs.write_metrics(params, "01_tofu_finetune", {"target": {"forget": {"rouge": 0.5}}})
    meta = runs.read_metrics(params, "01_tofu_finetune")["meta"]
    assert ("gpu_micro_batches" in meta) == on_a_card and runs.gpu_micro_batches(params) == (
        {"target": plain.micro_batch} if on_a_card else {})

    _on_a_patched_gpu(monkeypatch, _card_for(tiny_model, examples, fits=2))
    split = _fit(copy.deepcopy(tiny_model), examples, pad, tmp_path / "gpu", max_steps=1, batch_size=8)
    save(tiny_model, tiny_tokenizer, template, runs.model_dir(params, "unlearned-npo"), "k2", split.history,
          micro_batch=split.micro_batch)
    runs.write_metrics(params, "02_unlearning_npo", {"npo": {"forget": {"rouge": 0.1}}})
    chosen = runs.read_metrics(params, "02_unlearning_npo")["meta"]["gpu_micro_batches"]
    assert chosen["unlearned-npo"] == split.micro_batch and split.micro_batch["grad_accum"] == 4
    assert ("target" in chosen) == on_a_card


def test_accumulation_weights_micro_batches_by_their_tokens(small_corpus, tiny_tokenizer, tiny_model, template,
                                                            tmp_path):
    """8 x 1, 4 x 2 and 1 x 8 as configured (no GPU rule): one update up to rounding, the micro-batches holding
    different numbers of answer tokens; an unweighted mean of per-micro-batch means would differ."""
    import copy

    examples = _examples(small_corpus, tiny_tokenizer, template, 8)
    counts = [int(training.micro_batch_weight(models.collate([e], tiny_tokenizer.pad_token_id))) for e in examples]
    assert len(set(counts)) > 1  # the examples' answers differ in length: the weighting is tested
    pad = tiny_tokenizer.pad_token_id
    models_, results = [], []
    for batch, accum in ((8, 1), (4, 2), (1, 8)):
        m = copy.deepcopy(tiny_model)
        results.append(_fit(m, examples, pad, tmp_path / f"{batch}x{accum}", max_steps=1, batch_size=batch,
                            grad_accum=accum, micro_batches="given"))
        models_.append(m)
    assert all(r.micro_batch is None for r in results)
    assert results[1].history[0]["loss"] == pytest.approx(results[0].history[0]["loss"], rel=1e-5)
    assert results[2].history[0]["loss"] == pytest.approx(results[0].history[0]["loss"], rel=1e-5)
    for m in models_[1:]:
        for (name, a), b in zip(models_[0].named_parameters(), m.parameters(), strict=True):
            assert close(a, b, atol=2e-5, rtol=1e-4), name


def test_a_resume_on_another_split_stays_aligned(small_corpus, tiny_tokenizer, tiny_model, template, tmp_path,
                                                 monkeypatch):
    """Two steps split 2 x 4 by a (patched) GPU, then resumed on the CPU as 8 x 1: the same examples in each step
    as four uninterrupted 8 x 1 steps (skipping counts the resumed split's micro-batches), the same weights."""
    import copy

    examples = _examples(small_corpus, tiny_tokenizer, template, 16)
    pad = tiny_tokenizer.pad_token_id
    straight = copy.deepcopy(tiny_model)
    _fit(straight, examples, pad, tmp_path / "straight", max_steps=4, batch_size=8)
    with monkeypatch.context() as patched:
        _on_a_patched_gpu(patched, _card_for(tiny_model, examples, fits=2))
        first = copy.deepcopy(tiny_model)
        _fit(first, examples, pad, tmp_path / "resumed", max_steps=2, batch_size=8, checkpoint_every=1,
             keep_checkpoints=2)
    assert training.latest_checkpoint(tmp_path / "resumed").name == "checkpoint-1"  # none at the last step
    resumed_model = copy.deepcopy(tiny_model)
    resumed = _fit(resumed_model, examples, pad, tmp_path / "resumed", max_steps=4, batch_size=8)
    assert resumed.resumed_from == 1 and [h["step"] for h in resumed.history] == [1, 2, 3, 4]
    for (name, a), b in zip(straight.named_parameters(), resumed_model.parameters(), strict=True):
        assert close(a, b, atol=2e-5, rtol=1e-4), name


def test_a_pair_batch_weighs_its_examples():
    pair = {"forget": {"input_ids": torch.zeros(3, 5), "labels": torch.zeros(3, 5)},
            "retain": {"input_ids": torch.zeros(3, 7), "labels": torch.zeros(3, 7)}}
    assert training.micro_batch_weight(pair) == 3
    labels = torch.tensor([[-100, -100, 4, 5], [-100, 6, 7, -100]])
    assert int(training.micro_batch_weight({"labels": labels})) == 4
    assert [float(w) for w in training.step_weights([torch.tensor(1), 3], torch.device("cpu"))] == [0.25, 0.75]
