"""Recipes that can only draw (#59, docs/threat-model.md): a figure recipe in a received run names one of the
plotting functions (never redraw, figure_path or any other of the drawing machinery), holds plain values and the few
dataclasses a plot takes (built by their constructor, so their checks run), names no profile or seed (the run it
sits in draws it), and a malformed one is one line naming its file while the others still draw. Each vector is a
crafted recipe run through ``runner figures`` (:func:`unlearnkit.runner.redraw_figures`)."""

import json
import re
import shutil
from pathlib import Path

import pytest
from unlearnkit import config, paths, plots, runner
from unlearnkit.plots import recipes

#: Recipes a smoke run wrote at 72b0c65, before this change: they must still draw.
OLD_RECIPES = Path(__file__).parent / "fixtures" / "recipes-72b0c65"
PARAMS = "unlearnkit.config.params:Params"


def _params_object(profile: str, **fields) -> dict:
    """A run's Params as a recipe would name it (``__object__``), its fields as JSON."""
    values = json.loads(json.dumps(dict(config.Params.load(profile))))
    return {"__object__": PARAMS, "fields": {**values, **fields}}


def _recipe(folder: Path, name: str, plot: str, *args, **kwargs) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.json"
    path.write_text(json.dumps({"version": recipes.RECIPE_VERSION, "plot": plot, "args": list(args),
                                "kwargs": kwargs}))
    return path


def _old_recipe(folder: Path, name: str, stem: str = "00_data_tour_splits") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for suffix in (".json", ".npz"):
        if (OLD_RECIPES / f"{stem}{suffix}").exists():
            shutil.copy(OLD_RECIPES / f"{stem}{suffix}", folder / f"{name}{suffix}")


@pytest.fixture()
def store(tmp_path, monkeypatch):
    """A run store and a committed figures/ of their own: (runs/, figures/)."""
    monkeypatch.setattr(paths, "RUNS", tmp_path / "runs")
    monkeypatch.setattr(paths, "FIGURES", tmp_path / "figures")
    (tmp_path / "figures").mkdir()
    return tmp_path / "runs", tmp_path / "figures"


def _figures(profile: str, capsys) -> tuple[object, str, list[str]]:
    """``runner figures`` on a profile: its exit status (or what it raised), its stdout and its stderr lines."""
    try:
        outcome = runner.redraw_figures(config.Params.load(profile))
    except BaseException as exc:  # noqa: BLE001 - what a received recipe made it raise is the finding
        outcome = exc
    out, err = capsys.readouterr()
    return outcome, out, err.splitlines()


def _smoke_data(runs: Path) -> Path:
    return runs / "smoke" / "seed-0" / plots.FIGURE_DATA


def test_a_recipe_redrawing_the_default_profile_rewrites_no_committed_figure(store, capsys):
    runs, figures = store
    committed = figures / "01_tofu_finetune_loss.png"
    committed.write_bytes(b"the committed figure")
    _old_recipe(runs / "default" / "seed-0" / plots.FIGURE_DATA, "01_tofu_finetune_loss")  # one's own default run
    _recipe(_smoke_data(runs), "x", "unlearnkit.plots:redraw", _params_object("default"))

    outcome, out, err = _figures("smoke", capsys)
    assert committed.read_bytes() == b"the committed figure"
    assert outcome == 1 and len(err) == 2 and "x.json: " in err[0] and "no figure redrawn" in err[1]
    assert err[0].endswith("x.json: 'unlearnkit.plots:redraw' is not a plotting function of unlearnkit.plots; not drawn")


def test_a_recipe_redrawing_its_own_run_does_not_recurse(store, capsys):
    runs, _ = store
    _old_recipe(_smoke_data(runs), "z_good")
    _recipe(_smoke_data(runs), "loop", "unlearnkit.plots.drawing:redraw", _params_object("smoke"))

    outcome, out, err = _figures("smoke", capsys)
    assert not isinstance(outcome, RecursionError)
    assert outcome == 1 and len(err) == 1 and "loop.json: " in err[0] and "not a plotting function" in err[0]
    assert (runs / "smoke" / "seed-0" / "figures" / "z_good.png").exists()


def test_a_recipe_makes_no_folder_in_another_seeds_store(store, capsys):
    runs, _ = store
    _old_recipe(_smoke_data(runs), "00_data_tour_splits")
    _recipe(_smoke_data(runs), "reach", "unlearnkit.plots:figure_path", "x", _params_object("smoke", seed=7))

    outcome, out, err = _figures("smoke", capsys)
    assert sorted(p.name for p in (runs / "smoke").iterdir()) == ["seed-0"]
    assert outcome == 1 and "reach.json" in err[0] and "not a plotting function" in err[0]


def test_an_object_with_a_dict_field_builds_nothing_that_skips_validation(store, capsys):
    runs, _ = store
    hostile = _params_object("smoke", __dict__={"profile": "../../elsewhere", "seed": -3})
    path = _recipe(_smoke_data(runs), "forged", "unlearnkit.plots:corpus_overview", hostile, [])
    try:
        _, args, _ = recipes.read(path)
        built = vars(args[0]) if hasattr(args[0], "__dict__") else args[0]
    except recipes.RecipeError as exc:
        built = str(exc)
    assert "is not a dataclass or named tuple a plot takes" in built
    # one the plots do take: its own fields only, through its constructor
    tolerances = {"__object__": "unlearnkit.studies.calibration.criteria:Tolerances",
                  "fields": {"retain": 0.1, "forget_similar": 0.2, "__dict__": {"retain": "x"}}}
    _recipe(_smoke_data(runs), "forged", "unlearnkit.plots:corpus_overview", tolerances, [])
    with pytest.raises(recipes.RecipeError, match="has no field '__dict__'"):
        recipes.read(path)


#: Malformed recipes, each beside a good one that must still draw.
MALFORMED = {
    "no_args": {"version": 1, "plot": "unlearnkit.plots:corpus_overview", "kwargs": {}},
    "args_a_number": {"version": 1, "plot": "unlearnkit.plots:corpus_overview", "args": 5, "kwargs": {}},
    "kwargs_a_list": {"version": 1, "plot": "unlearnkit.plots:corpus_overview", "args": [], "kwargs": []},
    "wrong_arguments": {"version": 1, "plot": "unlearnkit.plots:corpus_overview", "args": [], "kwargs": {}},
    "missing_array": {"version": 1, "plot": "unlearnkit.plots:corpus_overview", "args": [{"__array__": "a9"}, 1],
                      "kwargs": {}},
    "no_figure": {"version": 1, "plot": "unlearnkit.plots:run_colors", "args": [["a", "b"]], "kwargs": {}},
    "object_missing_fields": {"version": 1, "plot": "unlearnkit.plots:corpus_overview", "kwargs": {},
                              "args": [{"__object__": "unlearnkit.studies.calibration.criteria:Tolerances"}, 1]},
}


@pytest.mark.parametrize("kind", [*MALFORMED, "deep"])
def test_a_malformed_recipe_is_one_line_naming_it_and_the_others_still_draw(store, capsys, kind):
    runs, _ = store
    folder = _smoke_data(runs)
    _old_recipe(folder, "z_good")
    folder.joinpath(f"a_{kind}.json").write_text("[" * 100_000 if kind == "deep" else json.dumps(MALFORMED[kind]))

    outcome, out, err = _figures("smoke", capsys)
    assert (runs / "smoke" / "seed-0" / "figures" / "z_good.png").exists()
    assert outcome == 1 and len(err) == 1 and f"a_{kind}.json: " in err[0] and err[0].endswith("not drawn")
    assert "1 figures redrawn" in out and "1 not drawn" in out


def test_recipes_written_before_the_change_still_draw(store, capsys):
    runs, _ = store
    for stem in {p.stem for p in OLD_RECIPES.iterdir()}:
        _old_recipe(_smoke_data(runs), stem, stem)
    outcome, out, err = _figures("smoke", capsys)
    assert outcome == 0 and err == []
    drawn = sorted(p.name for p in (runs / "smoke" / "seed-0" / "figures").glob("*.png"))
    assert drawn == sorted(f"{p.stem}.png" for p in OLD_RECIPES.glob("*.json"))


def test_the_registry_holds_plots_only_and_every_plot_a_notebook_draws():
    registry = recipes.plot_registry()
    for machinery in ("draw", "redraw", "save_fig", "save_to", "render_to", "figure_path", "figure_data_path",
                      "set_style", "run_colors", "legible"):
        assert not any(key.endswith(f":{machinery}") for key in registry), machinery
    assert not any(key.startswith(("unlearnkit.plots.drawing:", "unlearnkit.plots.style:")) for key in registry)
    names = {key.partition(":")[2] for key in registry}
    drawn = [(notebook.name, plot) for notebook in sorted((paths.ROOT / "notebooks").glob("*.ipynb"))
             for plot in re.findall(r"draw\(f\\\"[^\"]*\", params,(?:\s|\\n)*\w+\.(\w+)", notebook.read_text())]
    assert len(drawn) >= 45
    for notebook, plot in drawn:
        assert plot in names, f"{notebook} draws {plot}, which recipes.PLOTS does not hold"
    with pytest.raises(TypeError, match="plotting functions of plots.recipes.PLOTS"):
        plots.draw("x", config.Params.load("smoke"), plots.run_colors, ["a"])


def test_a_run_s_params_cannot_be_kept_in_a_recipe(tmp_path):
    with pytest.raises(recipes.RecipeError, match="only the dataclasses and named tuples a plot takes"):
        recipes.write(tmp_path / "r.json", plots.corpus_overview, (config.Params.load("smoke"),), {})
