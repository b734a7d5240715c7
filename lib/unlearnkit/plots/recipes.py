"""What a figure was drawn from, kept as data that runs no code when it is read.

``plots.draw`` keeps, beside every figure, the plotting function and its arguments, so that ``make figures`` redraws
the figure without training or sampling. They used to be pickles, and a runs folder received from a colleague would
have executed whatever its pickles held. A recipe is now ``<name>.json`` (and ``<name>.npz`` for numeric arrays,
read with ``allow_pickle=False``): plain JSON values, tagged where JSON has no type of its own (tuples, non-string
keys, NaN, paths, numpy arrays, pandas frames and series), the few dataclasses and named tuples a plot takes
(:data:`PLOT_CLASSES`, rebuilt by their constructor, so their checks run), and the plotting function by its module
and name: one of :data:`PLOTS`, each a function that returns a figure and writes nothing, found by one lookup, never
by a dotted path. The drawing machinery (``draw``, ``redraw``, ``save_fig``, ``save_to``, ``render_to``,
``figure_path``) is no plotting function: a recipe draws, and never saves, redraws, makes a folder or names a run (no
``Params`` is among the classes, so a recipe names no profile or seed; the run it sits in draws it). Anything else is
refused when the figure is drawn, with its type named, so a figure that is drawn can always be redrawn; anything else
in a recipe is refused when it is read, in one line.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import inspect
import json
import math
from collections.abc import Callable, Mapping
from pathlib import Path, PurePath
from typing import Any

import numpy as np

#: A recipe's format; bump it when the encoding changes.
RECIPE_VERSION = 1
#: Where the plotting functions and the classes a recipe names may come from.
PLOTS_PACKAGE, LIBRARY = "unlearnkit.plots", "unlearnkit"


class RecipeError(ValueError):
    """A figure's arguments that cannot be kept as data, or a recipe that is not one. One line."""


def _qualified(obj: Any) -> str:
    return f"{obj.__module__}:{obj.__qualname__}"


def _is_namedtuple(x: Any) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


class _Encoder:
    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}

    def array(self, a: np.ndarray) -> dict[str, Any]:
        if a.dtype.kind in "biuf":
            key = f"a{len(self.arrays)}"
            self.arrays[key] = a
            return {"__array__": key}
        if a.dtype.kind == "U":
            return {"__str_array__": a.tolist(), "shape": list(a.shape)}
        if a.dtype.kind == "O":
            return {"__object_array__": [self(v) for v in a.ravel().tolist()], "shape": list(a.shape)}
        raise RecipeError(f"a numpy array of dtype {a.dtype} cannot be kept as a figure's data")

    def index(self, index) -> dict[str, Any]:
        import pandas as pd

        if isinstance(index, pd.MultiIndex):
            return {"__multiindex__": [self(tuple(t)) for t in index.tolist()], "names": list(index.names)}
        return {"__index__": self.array(index.to_numpy()), "name": self(index.name), "dtype": str(index.dtype)}

    def __call__(self, x: Any) -> Any:
        import pandas as pd

        if x is None or isinstance(x, (bool, str)):
            return x
        if isinstance(x, int):
            return x
        if isinstance(x, float):
            return x if math.isfinite(x) else {"__float__": repr(x)}
        if isinstance(x, np.generic):
            return self(x.item())
        if isinstance(x, np.ndarray):
            return self.array(x)
        if isinstance(x, PurePath):
            return {"__path__": str(x)}
        if isinstance(x, pd.DataFrame):
            return {"__dataframe__": {"columns": self.index(x.columns), "index": self.index(x.index),
                                      "data": [self.array(x.iloc[:, i].to_numpy()) for i in range(x.shape[1])],
                                      "dtypes": [str(t) for t in x.dtypes]}}
        if isinstance(x, pd.Series):
            return {"__series__": {"index": self.index(x.index), "data": self.array(x.to_numpy()),
                                   "dtype": str(x.dtype), "name": self(x.name)}}
        if _is_namedtuple(x) or dataclasses.is_dataclass(x) and not isinstance(x, type):
            cls = type(x)
            if _qualified(cls) not in PLOT_CLASSES or _library_class(_qualified(cls)) is not cls:
                raise RecipeError(f"a {_qualified(cls)} cannot be kept as a figure's data: only the dataclasses and "
                                  "named tuples a plot takes are (recipes.PLOT_CLASSES)")
            names = cls._fields if _is_namedtuple(x) else [f.name for f in dataclasses.fields(x)]
            return {"__object__": _qualified(cls), "fields": {n: self(getattr(x, n)) for n in names}}
        if isinstance(x, tuple):
            return {"__tuple__": [self(v) for v in x]}
        if isinstance(x, list):
            return [self(v) for v in x]
        if isinstance(x, Mapping):
            if all(isinstance(k, str) and not k.startswith("__") for k in x):
                return {k: self(v) for k, v in x.items()}
            return {"__dict__": [[self(k), self(v)] for k, v in x.items()]}
        raise RecipeError(f"a {_qualified(type(x))} cannot be kept as a figure's data (plots.draw keeps plain values, "
                          "numpy arrays, pandas frames and the library's own dataclasses and named tuples)")


class _Decoder:
    def __init__(self, arrays: Mapping[str, np.ndarray]) -> None:
        self.arrays = arrays

    def array(self, spec: Mapping[str, Any]) -> np.ndarray:
        if "__array__" in spec:
            return np.asarray(self.arrays[spec["__array__"]])
        if "__str_array__" in spec:
            return np.array(spec["__str_array__"], dtype=str).reshape(spec["shape"])
        if "__object_array__" in spec:
            out = np.empty(len(spec["__object_array__"]), dtype=object)
            for i, v in enumerate(spec["__object_array__"]):
                out[i] = self(v)
            return out.reshape(spec["shape"])
        raise RecipeError(f"not an array in a figure recipe: {sorted(spec)}")

    def index(self, spec: Mapping[str, Any]):
        import pandas as pd

        if "__multiindex__" in spec:
            return pd.MultiIndex.from_tuples([self(t) for t in spec["__multiindex__"]], names=spec["names"])
        values = self.array(spec["__index__"])
        return pd.Index(values, name=self(spec["name"]), dtype=spec["dtype"] if spec["dtype"] != "object" else object)

    def __call__(self, x: Any) -> Any:
        import pandas as pd

        if x is None or isinstance(x, (bool, int, float, str)):
            return x
        if isinstance(x, list):
            return [self(v) for v in x]
        if not isinstance(x, dict):
            raise RecipeError(f"not a value of a figure recipe: {type(x).__name__}")
        tags = [k for k in x if k.startswith("__")]
        if not tags:
            return {k: self(v) for k, v in x.items()}
        tag = tags[0]
        if tag == "__float__":
            return float(x[tag])
        if tag in ("__array__", "__str_array__", "__object_array__"):
            return self.array(x)
        if tag == "__path__":
            return Path(x[tag])
        if tag == "__tuple__":
            return tuple(self(v) for v in x[tag])
        if tag == "__dict__":
            return {self(k): self(v) for k, v in x[tag]}
        if tag == "__dataframe__":
            spec = x[tag]
            columns = self.index(spec["columns"])
            data = {i: pd.Series(self.array(col)) for i, col in enumerate(spec["data"])}
            frame = pd.DataFrame(data)
            frame.columns = columns
            frame.index = self.index(spec["index"])
            return frame.astype({c: t for c, t in zip(columns, spec["dtypes"]) if t != "object"})
        if tag == "__series__":
            spec = x[tag]
            values = self.array(spec["data"])
            dtype = None if spec["dtype"] == "object" else spec["dtype"]
            return pd.Series(values, index=self.index(spec["index"]), name=self(spec["name"]), dtype=dtype)
        if tag == "__object__":
            return _build(x[tag], {k: self(v) for k, v in _mapping(x, "fields").items()})
        raise RecipeError(f"unknown tag {tag!r} in a figure recipe")


def _is_namedtuple_class(cls: type) -> bool:
    return issubclass(cls, tuple) and hasattr(cls, "_fields")


#: Every plotting function a recipe may name, by module: each returns a matplotlib figure and writes nothing. The
#: drawing machinery (``drawing``: draw, redraw, save_fig, save_to, render_to, figure_path; ``style``) and the helpers
#: that draw into an axis are not among them. A plot a notebook draws is added here.
PLOTS = {
    "unlearnkit.plots.alignment": ("plot_binary_bounds", "plot_category_bounds", "plot_score_distributions",
                                   "plot_strength_summary"),
    "unlearnkit.plots.calibration": ("controls_figure", "controls_grid_figure", "interference_figure", "mixing_figure",
                                     "plot_trajectory", "splits_figure"),
    "unlearnkit.plots.corpus": ("corpus_overview",),
    "unlearnkit.plots.curves": ("loss_curves", "metric_grid"),
    "unlearnkit.plots.entropy": ("plot_adaptive_sweep", "plot_diversity", "plot_ed_vs_utility", "plot_entropy_along",
                                 "plot_lambda_f_sweep", "plot_regime_eo", "plot_table1", "plot_temperature_sweep"),
    "unlearnkit.plots.formats": ("plot_format_scores", "plot_kept_share", "plot_transfer"),
    "unlearnkit.plots.leakage": ("plot_binary_bounds", "plot_bound_modes", "plot_bounds_vs_n", "plot_general_leak_curves",
                                 "plot_greedy_vs_samples", "plot_hp", "plot_leak_at_k", "plot_regime_paths"),
    "unlearnkit.plots.recovery": ("plot_probes", "plot_quantisation", "plot_relearning", "plot_rtt", "plot_survival"),
    "unlearnkit.plots.seeds": ("margins_per_seed", "rank_shares"),
    "unlearnkit.plots.trust": ("plot_trust_table", "plot_trust_vs_published"),
    "unlearnkit.plots.unlearning_runs": ("ou_summary", "rouge_trajectory", "unlearning_comparison", "unlearning_terms"),
    "unlearnkit.plots.verdicts": ("findings_overview",),
}
#: The dataclasses and named tuples a plot takes, the only ones a recipe holds: each rebuilt by its constructor from
#: exactly its fields (its own checks run; no field it does not declare, such as ``__dict__``).
PLOT_CLASSES = frozenset({
    "unlearnkit.metrics.meta_eval:LeakCurve", "unlearnkit.metrics.sampling:SampledScores",
    "unlearnkit.studies.alignment:Scored",
    "unlearnkit.studies.calibration.criteria:Tolerances", "unlearnkit.studies.calibration.methods:MethodControls",
    "unlearnkit.studies.calibration.search:Calibration", "unlearnkit.studies.leakage.regime:RegimeModel",
    "unlearnkit.studies.leakage.results:AtomCoverage",
})


def _mapping(x: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = x.get(key)
    if not isinstance(value, dict):
        raise RecipeError(f"{key!r} of a figure recipe is not a mapping")
    return value


def _build(qualified: Any, fields: Mapping[str, Any]) -> Any:
    """One of :data:`PLOT_CLASSES` made by its constructor from exactly the fields it declares."""
    if qualified not in PLOT_CLASSES:
        raise RecipeError(f"{qualified!r} is not a dataclass or named tuple a plot takes (recipes.PLOT_CLASSES)")
    cls = _library_class(qualified)
    declared = cls._fields if _is_namedtuple_class(cls) else [f.name for f in dataclasses.fields(cls) if f.init]
    unknown = sorted(set(fields) - set(declared))
    if unknown:
        raise RecipeError(f"{qualified!r} has no field {unknown[0]!r}")
    try:
        return cls(**fields)
    except (TypeError, ValueError) as exc:
        raise RecipeError(f"{qualified!r}: {exc}") from None


def _split(qualified: Any, package: str) -> tuple[str, str]:
    """``module:name`` with a module of ``package`` and a plain name: no dotted path after the colon, so a recipe
    can name a module's own top-level object and nothing reached through it (``plots:runs.os.system``)."""
    if not isinstance(qualified, str):
        raise RecipeError(f"{qualified!r} is not a name of {package}: a figure recipe names nothing else")
    module, _, name = qualified.partition(":")
    parts = module.split(".")
    if (not (module == package or module.startswith(package + ".")) or not name.isidentifier()
            or not all(p.isidentifier() and not p.startswith("_") for p in parts)):
        raise RecipeError(f"{qualified!r} is not a name of {package}: a figure recipe names nothing else")
    return module, name


@functools.lru_cache(maxsize=1)
def plot_registry() -> dict[str, Callable[..., Any]]:
    """Every plotting function a recipe may name, by ``module:name``: those of :data:`PLOTS`, each a function defined
    in its own module, and those the package's face re-exports by the face's name as well (``unlearnkit.plots:
    loss_curves``: where they were defined before the face was split into modules, so the recipes kept then still
    resolve, to the same functions)."""
    out = {}
    for module, names in PLOTS.items():
        namespace = importlib.import_module(module)
        for name in names:
            fn = vars(namespace).get(name)
            if not (inspect.isfunction(fn) and fn.__module__ == module):
                raise RuntimeError(f"recipes.PLOTS names {module}:{name}, which is no function of that module")
            out[f"{module}:{name}"] = fn
    for name, fn in vars(importlib.import_module(PLOTS_PACKAGE)).items():
        if inspect.isfunction(fn) and out.get(f"{fn.__module__}:{name}") is fn:
            out[f"{PLOTS_PACKAGE}:{name}"] = fn
    return out


def _recipe_name(plot: Callable[..., Any]) -> str:
    """How a recipe names ``plot``: by the package's face (``unlearnkit.plots:corpus_overview``) when the face
    re-exports it, as every recipe named it before the face was split into modules, else by its own module."""
    face = importlib.import_module(PLOTS_PACKAGE)
    return f"{PLOTS_PACKAGE}:{plot.__qualname__}" if vars(face).get(plot.__qualname__) is plot else _qualified(plot)


def _library_class(qualified: Any) -> type:
    """A dataclass or named tuple the library defines, by ``module:Name``: one lookup in its own module's namespace,
    the class's own module checked."""
    module, name = _split(qualified, LIBRARY)
    try:
        namespace = importlib.import_module(module)
    except ImportError:
        raise RecipeError(f"{qualified!r}: no module {module} in the library") from None
    cls = vars(namespace).get(name)
    if not (isinstance(cls, type) and cls.__module__ == module
            and (dataclasses.is_dataclass(cls) or _is_namedtuple_class(cls))):
        raise RecipeError(f"{qualified!r} is not a dataclass or named tuple of the library")
    return cls


def plot_function(qualified: Any) -> Callable[..., Any]:
    """The plotting function a recipe names: one of :func:`plot_registry`, nothing else."""
    module, name = _split(qualified, PLOTS_PACKAGE)
    fn = plot_registry().get(f"{module}:{name}")
    if fn is None:
        raise RecipeError(f"{qualified!r} is not a plotting function of {PLOTS_PACKAGE}")
    return fn


def write(path: Path, plot: Callable[..., Any], args: tuple, kwargs: Mapping[str, Any]) -> None:
    """Keep ``plot(*args, **kwargs)`` as ``path`` (JSON) and, for numeric arrays, ``path`` with suffix ``.npz``.
    Raises RecipeError, naming the type, for anything that cannot be kept as data."""
    from .. import runs

    name = _recipe_name(plot)
    if plot_function(name) is not plot:  # one of the plotting functions, found again by its name
        raise RecipeError(f"{name!r} is not a plotting function of {PLOTS_PACKAGE}")
    encode = _Encoder()
    payload = {"version": RECIPE_VERSION, "plot": name, "args": [encode(a) for a in args],
               "kwargs": {k: encode(v) for k, v in kwargs.items()}}
    text = json.dumps(payload, allow_nan=False)
    arrays = path.with_suffix(".npz")
    if encode.arrays:
        import io

        buffer = io.BytesIO()
        np.savez(buffer, **encode.arrays)
        runs.atomic_write_bytes(arrays, buffer.getvalue())
    else:
        arrays.unlink(missing_ok=True)
    runs.atomic_write_text(path, text)


def read(path: Path) -> tuple[Callable[..., Any], tuple, dict[str, Any]]:
    """The plotting function and its arguments kept in ``path`` (JSON, with its ``.npz``). Raises RecipeError, in one
    line (the caller names the file), for a file that is not such a recipe, whatever is wrong in it."""
    try:
        payload = json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise RecipeError(f"not a figure recipe ({exc})") from None
    if not isinstance(payload, dict) or payload.get("version") != RECIPE_VERSION:
        raise RecipeError(f"not a figure recipe of version {RECIPE_VERSION}")
    try:
        if not isinstance(payload.get("args"), list):
            raise RecipeError("'args' of a figure recipe is not a list")
        kwargs = _mapping(payload, "kwargs")
        plot = plot_function(payload.get("plot"))
        arrays: Mapping[str, np.ndarray] = {}
        npz = path.with_suffix(".npz")
        if npz.exists():
            with np.load(npz, allow_pickle=False) as loaded:
                arrays = {k: loaded[k] for k in loaded.files}
        decode = _Decoder(arrays)
        return plot, tuple(decode(a) for a in payload["args"]), {k: decode(v) for k, v in kwargs.items()}
    except RecipeError:
        raise
    except (ArithmeticError, AttributeError, KeyError, IndexError, TypeError, ValueError, OSError,
            RecursionError) as exc:
        raise RecipeError(f"not a figure recipe ({type(exc).__name__}: {(str(exc).splitlines() or [''])[0]})") from None
