"""The seed study: how notebook 02's unlearning methods move across training seeds, and whether their ranking
survives a reseed (docs/metrics.md §8.2, where the questions were registered before seeds 2-5 ran).

Per seed, each method's forget quality, model utility, privleak and forget ROUGE-L (notebook 02's summary); per
metric, the methods ranked on each seed, Kendall's τ between every two seeds' rankings (``scipy.stats.kendalltau``,
τ-b) and its mean, which counts as stable at :data:`TAU_STABLE` or more; the share of seeds on which each method takes
each rank; and the registered method pairs (:data:`PAIRS`): on how many seeds the first beats the second on its
metric, the two-sided exact sign test (``scipy.stats.binomtest``, ties left out) and the mean paired difference with a
bootstrap interval over seeds (:func:`bootstrap_interval`).

These are the workbook's own questions, not a paper's: no paper reports a ranking over training seeds. Pure arithmetic
on the run store's metrics.json files; no model is loaded. A setting against the seeds' spread (the training seed
against the rest) is :mod:`unlearnkit.seedstudy.variants`'s.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .. import results, runs
from ..config import Params

#: The percentile bootstrap over seeds: resamples, confidence, and the seed of its numpy Generator.
BOOTSTRAP_RESAMPLES, BOOTSTRAP_CONFIDENCE, BOOTSTRAP_SEED = 2000, 0.95, 0


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def bootstrap_interval(values: Sequence[float], resamples: int = BOOTSTRAP_RESAMPLES,
                       confidence: float = BOOTSTRAP_CONFIDENCE,
                       bootstrap_seed: int = BOOTSTRAP_SEED) -> tuple[float, float]:
    """The percentile bootstrap interval of the mean of ``values`` (one per seed): ``resamples`` resamples of the
    seeds with replacement drawn by ``np.random.default_rng(bootstrap_seed)`` (the draws scipy.stats.bootstrap makes
    with the same Generator), the (1 - confidence) / 2 and (1 + confidence) / 2 percentiles of their means. One
    value, or all equal: their mean twice. The interval always holds the mean of ``values`` as np.mean computes it:
    equal values' mean can round 1e-16 off the value itself, and an error bar drawn from mean to bound must not point
    backwards. ``bootstrap_seed`` is the rule's own (:data:`BOOTSTRAP_SEED`), not a training seed."""
    x = np.asarray([v for v in values if _finite(v)], dtype=float)
    if len(x) == 0:
        return (math.nan, math.nan)
    mean = float(x.mean())
    if len(x) == 1 or np.all(x == x[0]):
        return (mean, mean)
    rng = np.random.default_rng(bootstrap_seed)
    means = x[rng.integers(0, len(x), (resamples, len(x)))].mean(axis=1)
    low, high = np.percentile(means, [100 * (1 - confidence) / 2, 100 * (1 + confidence) / 2])
    return (min(float(low), mean), max(float(high), mean))


#: The registered threshold: a metric's ranking of the methods is *stable* when the mean Kendall τ over every two
#: seeds is at least this.
TAU_STABLE = 0.7
#: A registered pair's sign test decides at this two-sided level (6 seeds that agree give p = 2 / 2**6 = 0.031).
PAIR_LEVEL = 0.05


@dataclass(frozen=True)
class Metric:
    """A metric the methods are ranked on: where notebook 02 stores it, in which direction it is better, and the scale
    its paired differences are taken on."""

    name: str
    split: str
    key: str
    better: str  # "higher" | "lower" | "nearer 0"
    log10: bool = False

    def value(self, result: Mapping[str, Any]) -> float:
        raw = result.get(self.split, {}).get(self.key)
        if raw is None or not math.isfinite(float(raw)):
            return math.nan
        return float(raw)

    def score(self, value: float) -> float:
        """The value on the scale where higher is better (what ranks are taken of)."""
        if self.better == "higher":
            return value
        if self.better == "lower":
            return -value
        return -abs(value)

    def scale(self, value: float) -> float:
        """The value on the scale its paired differences are taken on (log10 for p-values)."""
        return math.log10(max(value, 1e-300)) if self.log10 else value


#: The four metrics a leaderboard prints, as registered: forget quality (higher: closer to the retain model), model
#: utility (higher), privleak (nearer 0: the retain model's membership-inference AUC), forget ROUGE-L (lower).
METRICS = (Metric("forget quality", "summary", "forget_quality", "higher", log10=True),
           Metric("model utility", "summary", "model_utility", "higher"),
           Metric("privleak", "summary", "privleak", "nearer 0"),
           Metric("forget ROUGE-L", "forget", "rouge", "lower"))
METRIC = {m.name: m for m in METRICS}


@dataclass(frozen=True)
class Pair:
    """A registered comparison: ``first`` is expected to beat ``second`` on ``metric`` (as ``source`` reports)."""

    first: str
    second: str
    metric: str
    source: str

    @property
    def name(self) -> str:
        return f"{self.first} vs {self.second}"


#: The registered pairs (docs/metrics.md §8.2), each with the metric its method's paper compares on and the
#: direction that paper reports.
PAIRS = (Pair("simnpo", "npo", "forget quality",
              "SimNPO (Fan et al., arXiv 2410.07163): removing NPO's reference model benefits unlearning on TOFU"),
         Pair("npo", "ga", "model utility",
              "NPO (Zhang et al., arXiv 2404.05868): a better balance than GA between unlearning and utility"),
         Pair("rmu", "npo", "model utility",
              "RMU (Li et al., arXiv 2403.03218) maintains general capabilities; the workbook's expectation against NPO"),
         Pair("wga", "ga", "model utility",
              "WGA (Wang et al., arXiv 2502.19301): weighting mitigates GA's excessive unlearning"))


# --------------------------------------------------------------------------- the values


def method_values(params: Params, seeds: Sequence[int]) -> pd.DataFrame:
    """One row per (seed, method): each registered metric's value from notebook 02's metrics.json of that seed (runs
    that are not methods of ``params.methods``, e.g. extra settings, are left out, and so is a run whose file is
    unreadable: the rankings compare the methods every seed can show)."""
    rows = []
    for seed in seeds:
        for run, metrics in results.of(params.replace(seed=int(seed))).unlearning_runs(readable=True).items():
            if run not in params.methods or run not in metrics:
                continue
            rows.append({"seed": int(seed), "method": run,
                         **{m.name: m.value(metrics[run]) for m in METRICS}})
    return pd.DataFrame(rows, columns=["seed", "method", *METRIC])


def complete(values: pd.DataFrame) -> pd.DataFrame:
    """The methods present, with a finite value of every metric, on every seed (rankings compare like with like)."""
    seeds = values["seed"].nunique()
    finite = values.dropna(subset=list(METRIC))
    counted = finite.groupby("method")["seed"].nunique()
    return finite[finite["method"].isin(counted[counted == seeds].index)]


def ranks(values: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Method x seed: each method's rank on ``metric`` on each seed (1 = best; ties share their mean rank)."""
    m = METRIC[metric]
    wide = values.pivot(index="method", columns="seed", values=metric).map(m.score)
    return wide.rank(ascending=False, method="average")


def _taus(wide: pd.DataFrame) -> list[float]:
    from scipy.stats import kendalltau

    taus = ([float(kendalltau(wide[a], wide[b]).statistic) for a, b in itertools.combinations(wide.columns, 2)]
            if wide.shape[0] >= 2 else [])  # one method has no ranking to compare
    return [t for t in taus if math.isfinite(t)]


def kendall_w(wide: pd.DataFrame) -> tuple[float, float]:
    """Kendall's W, the agreement of every seed's ranking of the methods at once (0: none, 1: the same ranking on
    every seed), from Friedman's test (scipy: χ² = n (k - 1) W over n seeds and k methods), with its p-value."""
    from scipy.stats import friedmanchisquare

    k, n = wide.shape
    if k < 3 or n < 2:
        return math.nan, math.nan
    test = friedmanchisquare(*[wide.loc[method].to_numpy(dtype=float) for method in wide.index])
    return float(test.statistic) / (n * (k - 1)), float(test.pvalue)


def kendall(values: pd.DataFrame, collapsed: Sequence[str] = ()) -> pd.DataFrame:
    """Per metric: Kendall's τ-b between the methods' rankings on every two seeds (scipy; on the scale where higher is
    better, so privleak is ranked by |privleak| as registered), its mean, least and greatest, whether the mean reaches
    :data:`TAU_STABLE`; Kendall's W over all seeds with Friedman's p; and the mean τ among the methods not in
    ``collapsed`` (a run under half the target's utility on some seed: collapsed runs rank easily)."""
    rows = []
    for m in METRICS:
        wide = values.pivot(index="method", columns="seed", values=m.name).map(m.score)
        taus = _taus(wide)
        mean = float(np.mean(taus)) if taus else math.nan
        w, w_p = kendall_w(wide)
        kept = _taus(wide.drop(index=[c for c in collapsed if c in wide.index]))
        rows.append({"metric": m.name, "better": m.better, "seeds": wide.shape[1], "methods": wide.shape[0],
                     "pairs of seeds": len(taus), "mean tau": mean, "least tau": min(taus, default=math.nan),
                     "greatest tau": max(taus, default=math.nan),
                     "stable": bool(taus) and mean >= TAU_STABLE, "kendall W": w, "W p (Friedman)": w_p,
                     "methods not collapsed": wide.shape[0] - len([c for c in collapsed if c in wide.index]),
                     "mean tau not collapsed": float(np.mean(kept)) if kept else math.nan})
    return pd.DataFrame(rows)


#: A run under this share of its seed's target utility has collapsed.
COLLAPSED_SHARE = 0.5


def collapsed_methods(params: Params, values: pd.DataFrame) -> list[str]:
    """The methods whose model utility falls under :data:`COLLAPSED_SHARE` of the target's on some seed."""
    out = set()
    for seed, group in values.groupby("seed"):
        try:
            target = results.of(params.replace(seed=int(seed))).metrics(runs.FINETUNE)["target"]["summary"]
        except (FileNotFoundError, KeyError):
            continue
        bar = COLLAPSED_SHARE * float(target["model_utility"])
        out |= set(group.loc[group["model utility"] < bar, "method"])
    return sorted(out)


def rank_shares(values: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Method x rank: the share of seeds on which each method takes each rank on ``metric`` (ties: the mean rank,
    rounded down), methods in the order of their mean rank."""
    ranked = ranks(values, metric)
    n = ranked.shape[0]
    shares = pd.DataFrame(0.0, index=ranked.index, columns=range(1, n + 1))
    for method, row in ranked.iterrows():
        for r in row:
            shares.loc[method, int(math.floor(r))] += 1 / len(row)
    return shares.loc[ranked.mean(axis=1).sort_values().index]


def pair_test(values: pd.DataFrame, pair: Pair) -> dict[str, Any]:
    """A registered pair over the seeds: on how many the first beats the second (ties left out), the two-sided exact
    sign test, the mean paired difference (first minus second, on the metric's scale: log10 for forget quality, |·|
    for privleak) with its bootstrap interval, and the outcome: *as registered* when p < PAIR_LEVEL in the registered
    direction, *reversed* when p < PAIR_LEVEL the other way, *undecided* otherwise."""
    from scipy.stats import binomtest

    m = METRIC[pair.metric]
    wide = values.pivot(index="seed", columns="method", values=pair.metric)
    if pair.first not in wide or pair.second not in wide:
        return {"pair": pair.name, "metric": pair.metric, "source": pair.source, "seeds": 0, "outcome": "not run"}
    both = wide[[pair.first, pair.second]].dropna()
    first = both[pair.first].map(m.score)
    second = both[pair.second].map(m.score)
    wins, losses = int((first > second).sum()), int((first < second).sum())
    decided = wins + losses
    p = float(binomtest(wins, decided, 0.5).pvalue) if decided else 1.0
    diffs = [m.scale(abs(a) if m.better == "nearer 0" else a) - m.scale(abs(b) if m.better == "nearer 0" else b)
             for a, b in zip(both[pair.first], both[pair.second])]
    low, high = bootstrap_interval(diffs)
    outcome = ("as registered" if p < PAIR_LEVEL and wins > losses else
               "reversed" if p < PAIR_LEVEL and losses > wins else "undecided")
    scale = "log10 " if m.log10 else "|·| " if m.better == "nearer 0" else ""
    return {"pair": pair.name, "metric": pair.metric, "better": m.better, "source": pair.source,
            "seeds": int(len(both)), "wins": wins, "losses": losses, "ties": int(len(both)) - decided,
            "p (two-sided sign test)": p, "difference": f"{scale}{pair.first} - {pair.second}",
            "mean difference": float(np.mean(diffs)) if diffs else math.nan, "low": low, "high": high,
            "outcome": outcome}


def flips(values: pd.DataFrame) -> pd.DataFrame:
    """Per metric, how often the methods' pairwise order changes with the training seed (#58 item 5, in the form
    Lanyon et al., arXiv 2510.26714, report single-seed comparisons flipping): of every two methods, the share whose
    order (on the scale where higher is better; ties left out) is not the same on every seed, and the share of
    (two seeds, two methods) comparisons in which the two seeds order the methods oppositely."""
    rows = []
    for m in METRICS:
        wide = values.pivot(index="method", columns="seed", values=m.name).map(m.score)
        flipped = compared = opposite = both = 0
        for a, b in itertools.combinations(wide.index, 2):
            signs = np.sign((wide.loc[a] - wide.loc[b]).dropna().to_numpy(dtype=float))
            signs = signs[signs != 0]
            if len(signs) < 2:
                continue
            compared += 1
            flipped += int((signs > 0).any() and (signs < 0).any())
            up, down = int((signs > 0).sum()), int((signs < 0).sum())
            opposite += up * down
            both += len(signs) * (len(signs) - 1) // 2
        rows.append({"metric": m.name, "seeds": wide.shape[1], "method pairs": compared,
                     "pairs that flip": flipped, "share of pairs that flip": flipped / compared if compared else math.nan,
                     "share of seed pairs ordering a method pair oppositely": opposite / both if both else math.nan})
    return pd.DataFrame(rows)


def pair_tests(values: pd.DataFrame, pairs: Sequence[Pair] = PAIRS) -> pd.DataFrame:
    return pd.DataFrame([pair_test(values, p) for p in pairs])


def spread(values: pd.DataFrame) -> pd.DataFrame:
    """Per method and metric: the mean over seeds, the standard deviation (ddof 1) and the range."""
    long = values.melt(id_vars=["seed", "method"], var_name="metric", value_name="value")
    grouped = long.groupby(["metric", "method"], sort=False)["value"]
    return pd.DataFrame({"mean": grouped.mean(), "sd": grouped.std(ddof=1), "least": grouped.min(),
                         "greatest": grouped.max(), "seeds": grouped.count()}).reset_index()


# --------------------------------------------------------------------------- the study


def study(params: Params, seeds: Sequence[int]) -> dict[str, Any]:
    """Everything the seed study reports on ``seeds`` of the profile of ``params``, as plain data (what notebook 10
    stores with the summary): the registered threshold and pairs, τ per metric, the pair tests, each method's spread,
    and the meta-evaluation of metrics over the seeds that ran notebook 09 (:func:`metric_trust`)."""
    values = method_values(params, seeds)
    used = complete(values) if len(values) else values
    out: dict[str, Any] = {"seeds": sorted(int(s) for s in used["seed"].unique()) if len(used) else [],
                           "methods": sorted(used["method"].unique()) if len(used) else [],
                           "tau_stable": TAU_STABLE, "pair_level": PAIR_LEVEL}
    from ..studies.trust import seed_tables  # the meta-evaluation of metrics over the same seeds (#57)

    out["metric_trust"] = metric_trust(seed_tables(params.profile, seeds))
    if len(out["seeds"]) < 2:
        out["note"] = "fewer than two seeds with notebook 02's runs: nothing to compare"
        return out
    out["collapsed"] = collapsed_methods(params, used)
    out["kendall"] = kendall(used, out["collapsed"]).to_dict("records")
    out["pairs"] = pair_tests(used).to_dict("records")
    out["flips"] = flips(used).to_dict("records")
    out["shares"] = shares_by_metric(used)
    out["values"] = used.to_dict("records")
    return out


#: The seeds the study is registered for (docs/metrics.md §8.2): the fewest that let a sign test reach p < 0.05.
REGISTERED_SEEDS = 6


def _tau_words(row: Mapping[str, Any]) -> str:
    if row["mean tau"] is None or not math.isfinite(row["mean tau"]):
        return f"{row['metric']} τ n/a (the methods tie on a seed: no ranking to compare)"
    text = (f"{row['metric']} τ {row['mean tau']:.2f} ({row['least tau']:.2f} to {row['greatest tau']:.2f}, "
            f"{'stable' if row['stable'] else 'not stable'}")
    if row.get("kendall W") is not None and math.isfinite(row["kendall W"]):
        text += f"; W {row['kendall W']:.2f}, Friedman p {row['W p (Friedman)']:.2g}"
    if row.get("mean tau not collapsed") is not None and math.isfinite(row["mean tau not collapsed"]):
        text += f"; τ {row['mean tau not collapsed']:.2f} among the {row['methods not collapsed']} not collapsed"
    return text + ")"


def sentences(result: Mapping[str, Any]) -> list[str]:
    """The study's answers in words, computed from :func:`study`'s result."""
    if "kendall" not in result:
        return [result.get("note", "no seed study")]
    n = len(result["seeds"])
    stable = [r for r in result["kendall"] if r["stable"]]
    lines = [f"Over {n} training seeds ({', '.join(map(str, result['seeds']))}) and {len(result['methods'])} methods, "
             f"the ranking is stable (mean Kendall τ ≥ {result['tau_stable']}) on {len(stable)} of "
             f"{len(result['kendall'])} metrics: " + "; ".join(_tau_words(r) for r in result["kendall"]) + "."]
    if n < REGISTERED_SEEDS:
        pairs = n * (n - 1) // 2
        lines[0] += (f" Preliminary: the study is registered for {REGISTERED_SEEDS} seeds; with {n}, each mean τ rests "
                     f"on {pairs} pair{'s' if pairs != 1 else ''} of seeds and no sign test can reach p < 0.05.")
    for r in result["pairs"]:
        if r.get("seeds", 0) == 0:
            lines.append(f"{r['pair']} on {r['metric']}: not run")
            continue
        lines.append(f"{r['pair']} on {r['metric']} ({r['better']} is better): {r['pair'].split(' vs ')[0]} better on "
                     f"{r['wins']} of {r['seeds']} seeds (ties {r['ties']}), two-sided sign test p = "
                     f"{r['p (two-sided sign test)']:.3f}; mean {r['difference']} {r['mean difference']:+.3g} "
                     f"[{r['low']:+.3g}, {r['high']:+.3g}]: {r['outcome']}")
    return lines


def shares_by_metric(values: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """:func:`rank_shares` of every registered metric as plain data (what the rank figure is drawn from)."""
    out = {}
    for m in METRICS:
        shares = rank_shares(values, m.name)
        out[m.name] = {"methods": list(shares.index), "shares": shares.to_numpy(float).tolist()}
    return out


def pairs_table(result: Mapping[str, Any]) -> pd.DataFrame:
    """The registered pairs as a reader's table (notebook 10)."""
    rows = []
    for r in result.get("pairs", []):
        if not r.get("seeds"):
            rows.append({"pair": r["pair"], "metric": r["metric"], "outcome": r["outcome"]})
            continue
        rows.append({"pair": r["pair"], "metric": f"{r['metric']} ({r['better']} is better)",
                     "first better on": f"{r['wins']} of {r['seeds']} seeds (ties {r['ties']})",
                     "p (two-sided sign test)": round(r["p (two-sided sign test)"], 4),
                     "mean difference [95 % interval]": f"{r['difference']} {r['mean difference']:+.3g} "
                                                         f"[{r['low']:+.3g}, {r['high']:+.3g}]",
                     "outcome": r["outcome"], "the paper's reason": r["source"]})
    return pd.DataFrame(rows)


def metric_trust(tables: Mapping[int, pd.DataFrame]) -> dict[str, Any]:
    """The meta-evaluation of metrics over seeds (notebook 09 on each seed, :func:`.trust.seed_tables`): per metric and quantity the mean with its 95 % t-interval over the seeds that
    measured it (:func:`unlearnkit.claims.judge.t_interval`, cut to the quantities' range [0, 1]); each seed's ranking of the metrics by :data:`RANKED_BY`
    (1 best), each metric's mean, best and worst rank, and the rankings' agreement over seeds, Kendall's W with its
    Friedman p (the seed study's tool), over the metrics ranked on every seed."""
    from ..claims.judge import t_interval
    from ..studies.trust import OVER_SEEDS, POOL_METRICS, RANKED_BY

    if not tables:
        return {"seeds": [], "note": "no seed holds notebook 09's results"}
    metrics = [m for m in POOL_METRICS if any(m in t.index for t in tables.values())]
    rows = []
    for m in metrics:
        row: dict[str, Any] = {"metric": m}
        for q in OVER_SEEDS:
            values = [float(t.loc[m, q]) for t in tables.values() if m in t.index and q in t.columns]
            mean, low, high = t_interval(values)
            # every quantity here is an AUC, a share or a harmonic mean of them: the interval is cut to [0, 1]
            row[q] = {"mean": mean, "low": max(low, 0.0) if np.isfinite(low) else low,
                      "high": min(high, 1.0) if np.isfinite(high) else high, "seeds": int(np.isfinite(values).sum())}
        rows.append(row)
    wide = pd.DataFrame({s: t[RANKED_BY] for s, t in tables.items() if RANKED_BY in t.columns}).reindex(metrics)
    ranks = wide.rank(ascending=False, method="average")
    complete = ranks.dropna()
    w, p = kendall_w(complete) if complete.shape[1] >= 2 else (float("nan"), float("nan"))
    for row in rows:
        r = ranks.loc[row["metric"]].dropna()
        row["rank"] = ({"mean": float(r.mean()), "best": float(r.min()), "worst": float(r.max()), "seeds": len(r)}
                       if len(r) else None)
    return {"seeds": sorted(tables), "ranked_by": RANKED_BY, "metrics": rows, "kendall_w": w, "friedman_p": p,
            "ranked_on_every_seed": list(complete.index)}
