"""The counting of benchmarks/paper_cost.py, without training anything: each notebook's count responds to the profile's
keys as the notebook's code does, the unlearning step parts are those the loss really sends through the models (every
registered method), AltPO's sampled alternates and the privacy metrics of each evaluated model are counted, and FLOPs
become hours as stated."""

from __future__ import annotations

import importlib.util
import math
import sys
from types import SimpleNamespace

import pytest
import torch
from conftest import LOSS_WEIGHTS, SHARED_DATA, needs
from unlearnkit import config, paths, unlearning

pytestmark = pytest.mark.usefixtures("tiny_model_threads")


def _load_benchmark():
    """benchmarks/ is not a package: the script is loaded from its path."""
    path = paths.ROOT / "benchmarks" / "paper_cost.py"
    spec = importlib.util.spec_from_file_location("paper_cost", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is being made
    spec.loader.exec_module(module)
    return module


pc = _load_benchmark()
PAPER = config.Params.load("paper")
LENGTHS = pc.Lengths(pc.BUILT_IN)


def test_doubling_n_samples_doubles_the_sampled_tokens_of_notebook_05_and_nothing_else():
    one = pc.notebook_05(PAPER, LENGTHS)
    two = pc.notebook_05(PAPER.replace(n_samples=2 * PAPER.n_samples), LENGTHS)
    sampled = ["forget questions, sampled answers", "keyword Q&A, sampled answers"]
    for label in sampled:
        assert two.tokens(pc.GENERATED, label) == pytest.approx(2 * one.tokens(pc.GENERATED, label))
    extra = sum(one.tokens(pc.GENERATED, label) for label in sampled)
    assert two.tokens(pc.GENERATED) == pytest.approx(one.tokens(pc.GENERATED) + extra)  # greedy passes unchanged
    assert two.tokens(pc.TRAINED) == one.tokens(pc.TRAINED)


def test_notebook_05_samples_every_question_of_each_model_n_times():
    cost = pc.notebook_05(PAPER.replace(hp_model=None, regime_runs=[]), LENGTHS)
    # target and retain model, every forget question, n answers of max_new_tokens each
    expected = 2 * LENGTHS.rows("forget10") * PAPER.n_samples * PAPER.sample_max_new_tokens
    assert cost.tokens(pc.GENERATED, "forget questions, sampled answers") == pytest.approx(expected)
    assert cost.tokens(pc.TRAINED) == 0


def test_zero_methods_gives_zero_unlearning_tokens_in_notebook_02():
    cost = pc.notebook_02(PAPER.replace(methods=[]), LENGTHS)
    assert all(cost.tokens(kind) == 0 for kind in pc.KINDS)
    assert cost.runs_trained == []


def test_notebook_02_counts_one_epoch_as_every_forget_row_with_its_retain_row():
    one = pc.notebook_02(PAPER.replace(methods=["gd"]), LENGTHS)
    pair = LENGTHS.qa("forget10") + LENGTHS.qa("retain90")
    assert one.tokens(pc.TRAINED, "unlearning runs") == pytest.approx(PAPER.unlearn_epochs * 400 * pair)
    assert one.tokens(pc.FORWARD, "unlearning runs, reference forward") == 0  # GD has no reference
    npo = pc.notebook_02(PAPER.replace(methods=["npo"]), LENGTHS)
    assert npo.tokens(pc.FORWARD, "unlearning runs, reference forward") == pytest.approx(
        PAPER.unlearn_epochs * 400 * LENGTHS.qa("forget10"))


def test_notebook_01_trains_the_target_and_each_retain_model_for_the_epochs():
    cost = pc.notebook_01(PAPER, LENGTHS)
    expected = PAPER.finetune_epochs * (4000 * LENGTHS.qa("full") + 3600 * LENGTHS.qa("retain90"))
    fine_tuned = cost.tokens(pc.TRAINED, "fine-tune on full") + cost.tokens(pc.TRAINED, "fine-tune on retain90")
    assert fine_tuned == pytest.approx(expected)
    gradnorm = cost.tokens(pc.TRAINED, "privacy metrics, GradNorm (forward and backward per item)")
    assert cost.tokens(pc.TRAINED) == pytest.approx(expected + gradnorm)  # nothing else gets a backward


#: open-unlearning's runs of notebook 02 (issue #29), each declared in paper.yaml's method_settings.
OU_RUNS = ("simnpo", "wga", "satimp", "ceu", "undial", "altpo")


def _parts(forget="forget10"):
    """Tokens per row of each sub-batch, as the benchmark should count them (an alternate about as long as the answer)."""
    return {"forget": LENGTHS.qa(forget), "retain": LENGTHS.qa("retain90"),
            "forget_idk": LENGTHS.prompt(forget) + pc.idk_tokens(LENGTHS),
            "forget_alt": LENGTHS.prompt(forget) + LENGTHS.answer(forget)}


@pytest.mark.parametrize("run", OU_RUNS)
def test_notebook_02_trains_each_open_unlearning_run_on_the_parts_its_method_reads(run):
    assert run in PAPER.methods and PAPER.method_settings[run]["method"] == run
    cost = pc.notebook_02(PAPER.replace(methods=[run]), LENGTHS)
    assert cost.runs_trained == [run]
    rp = pc.pipeline.run_params(PAPER, run)
    settings = pc.pipeline.unlearning_settings(PAPER, run)
    method = unlearning.method_spec(run)
    trained = [*method.forget_reads, *(method.retain_reads if method.has_retain_term(
        unlearning.registry.option_values(method, settings)) else ())]
    reference = [*method.forget_reference, *method.retain_reference]
    part = _parts()
    pairs = rp.unlearn_epochs * 400
    assert cost.tokens(pc.TRAINED, "unlearning runs") == pytest.approx(pairs * sum(part[p] for p in trained))
    assert cost.tokens(pc.FORWARD, "unlearning runs, reference forward") == pytest.approx(
        pairs * sum(part[p] for p in reference))
    assert ("retain" in trained) == (run not in ("ceu", "undial"))  # CE-U has no retain term, UNDIAL's is off (alpha 0)
    assert bool(reference) == (run in ("undial", "altpo"))


def test_altpo_samples_its_alternates_from_the_target_on_real_tofu_only():
    label = "AltPO alternates sampled from the target"
    hub = pc.notebook_02(PAPER.replace(methods=["altpo"]), LENGTHS)  # locuslab/TOFU ships no alternates
    n = PAPER.method_settings["altpo"]["altpo_n_alternates"]
    assert hub.tokens(pc.GENERATED, label) == pytest.approx(400 * n * PAPER.max_new_tokens)
    assert hub.tokens(pc.FORWARD, label) == pytest.approx(400 * pc.alternate_prompt_tokens(LENGTHS, "forget10"))
    more = PAPER.replace(method_settings={**PAPER.method_settings,
                                          "altpo": {**PAPER.method_settings["altpo"], "altpo_n_alternates": 2 * n}})
    assert pc.notebook_02(more.replace(methods=["altpo"]), LENGTHS).tokens(pc.GENERATED, label) == pytest.approx(
        2 * hub.tokens(pc.GENERATED, label))
    synthetic = pc.notebook_02(PAPER.replace(methods=["altpo"], data_source="synthetic"), LENGTHS)  # forget10_alternates
    assert synthetic.tokens(pc.GENERATED, label) == 0 and synthetic.tokens(pc.FORWARD, label) == 0
    other = pc.notebook_02(PAPER.replace(methods=["npo"]), LENGTHS)
    assert other.tokens(pc.GENERATED, label) == 0


def _privacy_tokens(params, forget="forget10"):
    """Tokens one model's privacy metrics send through it: every scored forget and holdout Q&A (holdout10 has
    forget10's 400 rows; the figures have none of its own)."""
    items = min(400, params.eval_max_items or 400)
    return 2 * items * LENGTHS.qa(forget)


def test_privacy_metrics_are_counted_for_every_model_notebooks_01_and_02_evaluate():
    forward, gradnorm = "privacy metrics, teacher-forced", "privacy metrics, GradNorm (forward and backward per item)"
    one = pc.notebook_01(PAPER.replace(mia_gradnorm=True), LENGTHS)
    models = 2 + len(PAPER.retain_splits)  # base, target and each retain model
    assert one.tokens(pc.FORWARD, forward) == pytest.approx(models * _privacy_tokens(PAPER))
    assert one.tokens(pc.TRAINED, gradnorm) == pytest.approx(models * _privacy_tokens(PAPER))
    runs = pc.notebook_02(PAPER.replace(methods=["gd", "altpo"], mia_gradnorm=True), LENGTHS)
    assert runs.tokens(pc.FORWARD, "privacy metrics of each run, teacher-forced") == pytest.approx(
        2 * _privacy_tokens(PAPER))
    assert runs.tokens(pc.TRAINED, "privacy metrics of each run, GradNorm (forward and backward per item)") == (
        pytest.approx(2 * _privacy_tokens(PAPER)))
    assert PAPER.eval_max_items < 400  # TOFU's 300 of forget10's and holdout10's 400 items
    fewer = pc.notebook_01(PAPER.replace(eval_max_items=PAPER.eval_max_items // 2), LENGTHS)
    assert fewer.tokens(pc.FORWARD, forward) == pytest.approx(one.tokens(pc.FORWARD, forward) / 2)
    every = pc.notebook_01(PAPER.replace(eval_max_items=None), LENGTHS)
    assert every.tokens(pc.FORWARD, forward) == pytest.approx(models * 2 * 400 * LENGTHS.qa("forget10"))
    off = pc.notebook_01(PAPER.replace(mia_gradnorm=False), LENGTHS)
    assert off.tokens(pc.TRAINED, gradnorm) == 0 and off.tokens(pc.FORWARD, forward) == one.tokens(pc.FORWARD, forward)
    assert off.tokens(pc.TRAINED) == pytest.approx(one.tokens(pc.TRAINED) - one.tokens(pc.TRAINED, gradnorm))


def test_no_privacy_cost_where_the_data_has_no_holdout_split(tmp_path):
    for split in ("full", "forget10", "retain90", "forget10_perturbed", "retain_perturbed"):
        (tmp_path / f"{split}.json").write_text("")
    folder = PAPER.replace(data_source=str(tmp_path))
    one = pc.notebook_01(folder, LENGTHS)
    assert not [label for (label, *_), t in one.items.items() if label.startswith("privacy") and t]
    assert any("no holdout10" in note for note in one.simplified)


def test_a_run_is_trained_once_across_the_notebooks():
    costs = pc.estimate(PAPER, LENGTHS)
    trained = [run for cost in costs for run in cost.runs_trained]
    assert len(trained) == len(set(trained))
    assert set(PAPER.methods) <= set(costs[1].runs_trained)  # notebook 02 trains them, 03-06 read them
    assert "gd" not in costs[2].runs_trained and "npo_sp" in costs[4].runs_trained


def test_the_schedule_of_a_run_follows_the_training_loop():
    plan = pc.schedule(PAPER, "gd", LENGTHS)  # 400 rows, batch 4 x 8, 10 epochs, weights kept every 25 steps
    assert (plan.steps_per_epoch, plan.total_steps) == (13, 130)
    assert plan.kept == tuple(sorted({*range(25, 131, 25), *range(13, 131, 13)}))
    wang = pc.schedule(PAPER, "gd_wang", LENGTHS)  # batch 4, 5 epochs, kept every 50
    assert (wang.total_steps, wang.kept) == (500, tuple(range(50, 501, 50)))


def test_calibrated_settings_counts_the_coarse_grid_and_one_fine_region():
    assert pc.calibrated_settings([0, 0.5, 1.0], 4, known=(0,)) == 2 + 4
    assert pc.calibrated_settings([0, 100, 130], 10, allowed=[50, 100, 110, 120, 130], known=(0,)) == 2 + 2
    assert pc.calibrated_settings([1.0], 5) == 1


def test_notebook_07_samples_the_held_out_requests_and_judges_every_answer():
    cost = pc.notebook_07(PAPER, LENGTHS)
    # JailbreakBench: 10 categories of 10, the first alignment_eval_per_group of each evaluated (paper: all 10)
    requests = 10 * min(10, PAPER.alignment_eval_per_group)
    n, longest = PAPER.alignment_n_samples, PAPER.alignment_max_new_tokens
    assert cost.tokens(pc.GENERATED, "aligned models, sampled answers") == pytest.approx(
        len(PAPER.alignment_models) * requests * n * longest)
    judged = {size for (label, _, size, _) in cost.items if label == "judge"}
    assert judged == {pc.MODEL_PARAMETERS[PAPER.safety_judge]}


def test_flops_become_hours_at_the_stated_utilisation_and_step_floor():
    gpu = pc.Gpu("test", peak=1e15, mfu_train=0.5, mfu_generate=0.25, decode_step_s=0.0)
    cost = pc.Cost("x")
    cost.add("train", pc.TRAINED, 1e9, 1e6)  # 6e15 FLOPs at 5e14 FLOP/s: 12 s
    cost.add("score", pc.FORWARD, 1e9, 1e6)  # 2e15 at 5e14: 4 s
    cost.add("decode", pc.GENERATED, 1e9, 1e6, rows=100)  # 2e15 at 2.5e14: 8 s
    assert gpu.hours(cost) == pytest.approx((12 + 4 + 8) / 3600)
    slow = pc.Gpu("test", peak=1e15, mfu_train=0.5, mfu_generate=0.25, decode_step_s=0.01)
    assert slow.hours(cost) == pytest.approx((12 + 4 + 1e6 / 100 * 0.01) / 3600)  # 10^4 steps of 10 ms: 100 s


def test_the_cpu_projection_scales_the_measured_rate_by_the_model_size():
    rates = pc.CpuRates(parameters=1e6, trained=1000.0, forward=3000.0, generated=500.0)
    cost = pc.Cost("x")
    cost.add("train", pc.TRAINED, 1e9, 1e6)
    assert rates.hours(cost) == pytest.approx(1e6 / (1000.0 * 1e6 / 1e9) / 3600)


def test_longer_tokens_cost_less_time():
    short = pc.Lengths(pc.BUILT_IN, chars_per_token=8.0)
    gpu = pc.Gpu("test", 1e15, 0.5, 0.25)
    assert gpu.hours(pc.notebook_01(PAPER, short)) < gpu.hours(pc.notebook_01(PAPER, LENGTHS))
    with pytest.raises(ValueError):
        pc.Lengths(pc.BUILT_IN, decode_fraction=0.0)


class MinuteLM(torch.nn.Module):
    """The least causal LM the unlearning loss accepts (logits, and decoder layers under ``model.layers`` for RMU): only
    which sub-batch goes through which model matters here, and it builds without importing a model library."""

    def __init__(self, vocab: int = 32, hidden: int = 8):
        super().__init__()
        self.model = torch.nn.Module()
        self.model.embed = torch.nn.Embedding(vocab, hidden)
        self.model.layers = torch.nn.ModuleList(torch.nn.Linear(hidden, hidden) for _ in range(2))
        self.head = torch.nn.Linear(hidden, vocab)

    def forward(self, input_ids, attention_mask=None, use_cache=None):
        hidden = self.model.embed(input_ids)
        for layer in self.model.layers:
            hidden = layer(hidden)
        return SimpleNamespace(logits=self.head(hidden))


def _example(prompt: list[int], answer: list[int]) -> dict[str, list[int]]:
    return {"input_ids": prompt + answer, "labels": [-100] * len(prompt) + answer}


@pytest.mark.parametrize("settings", [
    *({"method": m} for m in unlearning.METHODS),  # every registered method, those added later too
    {"method": "npo", "lambda_f": 1.0, "lambda_r": -0.25}, {"method": "ga", "lambda_r": -0.25},
    {"method": "idk", "lambda_f": 1.0}, {"method": "npo", "npo_retain_term": False},
    {"method": "gd", "forget_weight": 0.0}, {"method": "undial", "undial_retain_term": True},
    {"method": "altpo", "lambda_f": 1.0, "lambda_r": -0.25}, {"method": "ceu", "lambda_r": -0.25},
    *({**PAPER.method_settings[run]} for run in OU_RUNS),  # the paper profile's own settings of them
])
def test_step_parts_are_what_the_unlearning_loss_sends_through_each_model(settings):
    torch.manual_seed(0)
    model = MinuteLM()
    method = settings["method"]
    parts = unlearning.method_spec(method).batch_parts
    pairs = [{"forget": _example([1, 2, 3], [4, 5, 2]), "retain": _example([1, 6, 7, 3], [8, 2]),
              **({"forget_idk": _example([1, 2, 3], [9, 10, 11, 2])} if "forget_idk" in parts else {}),
              **({"forget_alt": _example([1, 2, 3], [12, 13, 2])} if "forget_alt" in parts else {})}
             for _ in range(2)]
    batch = unlearning.collate_pairs(pairs, pad_token_id=0)
    reference = unlearning.frozen_reference(model) if method in unlearning.REFERENCE_METHODS else None
    seen: dict[str, list[str]] = {"model": [], "reference": []}

    def recorder(name):
        def hook(module, args, kwargs):
            ids = kwargs["input_ids"]
            seen[name] += [key for key, sub in batch.items() if sub["input_ids"] is ids]
        return hook

    model.register_forward_pre_hook(recorder("model"), with_kwargs=True)
    if reference is not None:
        reference.register_forward_pre_hook(recorder("reference"), with_kwargs=True)
    options = {k: v for k, v in settings.items() if not k.startswith("unlearn_")}  # a run's schedule is not the loss's
    loss, _ = unlearning.UnlearningLoss(ref_model=reference, **{**LOSS_WEIGHTS, **options})(model, batch)
    assert torch.isfinite(loss)
    on_model, on_reference = pc.step_parts(settings)
    assert set(on_model + on_reference) <= set(pc.part_tokens(PAPER, "forget10", LENGTHS))  # each has a token estimate
    assert sorted(seen["model"]) == sorted(on_model)
    assert sorted(seen["reference"]) == sorted(on_reference)


@needs(all((SHARED_DATA / f).exists() for f in ("tofu", "jbb/harmful-behaviors.csv", "hp_qa/hp_qa_en.csv")),
       "the reference data are not in ../shared/data", "CI, whose clone has ../shared beside it")
def test_the_built_in_figures_are_those_of_the_reference_files():
    measured = pc.measure_reference(SHARED_DATA)
    assert measured.tofu == pc.BUILT_IN.tofu
    assert measured.formats == pc.BUILT_IN.formats
    assert measured.behaviours == pc.BUILT_IN.behaviours
    assert measured.hp_qa == pc.BUILT_IN.hp_qa


def test_the_estimate_of_the_paper_profile_is_finite_and_positive():
    gpu = pc.Gpu("test", pc.GPU_PEAK_TFLOPS * 1e12, pc.MFU_TRAIN, pc.MFU_GENERATE, pc.DECODE_STEP_S)
    hours = [gpu.hours(cost) for cost in pc.estimate(PAPER, LENGTHS)]
    assert len(hours) == 8 and all(math.isfinite(h) and h > 0 for h in hours)
