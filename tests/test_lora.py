"""LoRA (``lora_rank > 0``) through the pipeline: fine-tuning, every unlearning method (the reference model of KL,
DPO, NPO and RMU is the same model with its adapters off), the weights kept along a run, model mixing, saving and
loading; on the smoke profile's tiny model."""

from __future__ import annotations

import math

import pytest
import torch
from devices import close, same
from unlearnkit import config, models, paths, pipeline, runs
from unlearnkit.unlearning import METHODS, mix_models

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("tiny_model_threads")]

LORA = {"lora_rank": 4, "lora_alpha": 8}


@pytest.fixture(scope="module")
def lora_runs(tmp_path_factory):
    saved = paths.RUNS
    paths.RUNS = tmp_path_factory.mktemp("runs")
    try:
        params = config.Params.load("smoke", unlearn_save_every=1, **LORA)
        base = pipeline.base_model(params)  # trained in full: LoRA starts at fine-tuning, as in TOFU
        target = pipeline.finetuned_model(params, "full")
        unlearned = {method: pipeline.unlearned_model(params, method) for method in METHODS}
        yield params, base, target, unlearned
    finally:
        paths.RUNS = saved


def _state(model) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def _linear_weight(key: str) -> bool:
    return key.endswith("proj.weight")


def test_fine_tuning_trains_adapters_on_every_linear_layer_only(lora_runs):
    _, base, target, _ = lora_runs
    before, after = _state(base.model), _state(target.model)
    assert before.keys() == after.keys()  # merged and saved as a plain model
    changed = {k for k in after if not same(after[k], before[k])}
    assert changed == {k for k in after if _linear_weight(k)}  # all-linear: q, k, v, o, gate, up, down
    assert runs.saved_recipe(runs.model_dir(lora_runs[0], "target"))["params_hash"]


@pytest.mark.parametrize("method", METHODS)
def test_every_method_unlearns_through_adapters_and_saves_a_plain_model(lora_runs, method):
    _, _, target, unlearned = lora_runs
    trained = unlearned[method]
    reloaded = runs.load_saved(lora_runs[0], runs.unlearned_name(method), dtype="float32").model
    assert not hasattr(reloaded, "peft_config")
    before, after = _state(target.model), _state(reloaded)
    assert before.keys() == after.keys()
    changed = {k for k in after if not same(after[k], before[k])}
    assert changed and all(_linear_weight(k) for k in changed)  # embeddings and norms untouched
    if method == "rmu":  # RMU reaches only the layers up to the steered one (smoke: layer 1 of 2, so all)
        assert changed
    # the weights kept at the last step are the final model: keeping them did not merge the live adapters away
    last = sorted(runs.trajectory_dir(lora_runs[0], method).glob("step-*"))[-1]
    kept = _state(models.load_model(last, dtype="float32", template=None).model)
    if torch.cuda.is_available():
        # on a card the kept step is merged there and the final model after training hands it back to the CPU: two
        # GEMMs' last bits (seen on an H200); adapters merged away would differ by a whole update, far above this
        assert all(close(kept[k], after[k], rtol=1e-5, atol=1e-6) for k in after)
    else:
        assert all(same(kept[k], after[k]) for k in after)
    assert len(trained.history) == int(last.name.split("-")[1])


def test_the_reference_of_the_first_step_is_the_model_before_unlearning(lora_runs):
    params, _, _, unlearned = lora_runs
    # The adapters start at B = 0, so at the first step θ = π_ref: NPO's forget term is 2/β·log 2 and KL's
    # retain KL is 0; a reference that were not the model before unlearning would give other values.
    first_npo = unlearned["npo"].history[0]
    assert first_npo["forget_loss"] == pytest.approx(2 / params.beta * math.log(2), rel=1e-5)
    assert unlearned["kl"].history[0]["retain_loss"] == pytest.approx(0.0, abs=1e-6)


def test_mixing_a_lora_run_with_the_target(lora_runs):
    _, _, target, unlearned = lora_runs
    half = _state(mix_models(target.model, unlearned["ga"].model, 0.5))
    ends = _state(target.model), _state(unlearned["ga"].model)
    for key in half:
        if _linear_weight(key):
            assert close(half[key], (ends[0][key] + ends[1][key]) / 2, atol=1e-6)


def test_a_lora_run_is_its_own_cache_entry(lora_runs):
    params, _, _, _ = lora_runs
    folder = runs.model_dir(params, runs.unlearned_name("ga"))
    recipe = runs.saved_recipe(folder)["params_hash"]
    assert pipeline.cached(folder, recipe)
    full = params.replace(lora_rank=0)
    # full fine-tuning keys carry no LoRA entry (their caches stay valid); another rank is another run
    assert pipeline.lora_key(full) == {}
    assert pipeline.lora_key(params.replace(lora_rank=8)) != pipeline.lora_key(params)
