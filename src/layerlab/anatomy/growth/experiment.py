"""Chapter 10's experiments, each arm cached as soon as it finishes: `run` (every regime × seed
× arm of the profile) and `tuned`, the paper's regime found by a stated search (`search`: the
memorised-set size whose uniform loss is nearest the paper's) and a learning rate per arm
(`lr_grid`), then every arm at its rate on the verdict's seeds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from layerlab import results
from layerlab.anatomy.growth.arms import PAPER_ARM, programs
from layerlab.anatomy.growth.model import tokenizer_for
from layerlab.anatomy.growth.train import train_arm
from layerlab.profiles import Profile
from layerlab.settings import GrowthConfig, GrowthSettings

if TYPE_CHECKING:
    import pandas as pd


def config_for(profile, regime: str, seed: int) -> GrowthConfig:
    """The profile's growth config for one regime and seed (the config every arm of that run
    trains with)."""
    return GrowthSettings.from_profile(profile).run_config(regime, seed)


def run(profile, *, progress: bool = True) -> dict[str, Any]:
    """Every regime × seed × arm of the profile, each cached as soon as it finishes."""
    g = GrowthSettings.from_profile(profile)
    items = {f"{regime}-s{seed}-{arm}": {"regime": regime, "seed": seed, "arm": arm}
             for regime in g.regimes for seed in g.seeds
             for arm in ("uniform", "uniform same budget", "gtt", "G_stack", "random schedule")}
    return _arm.each(items, g, profile=profile, tok={}, show=progress, progress=progress)


def _trained(cfg: GrowthConfig, seed: int, arm: str, tok: dict[str, Any],
             progress: bool) -> dict[str, Any]:
    """One arm trained to its last step (`tok` keeps the tokenizers across arms)."""
    if cfg.tokenizer not in tok:
        tok[cfg.tokenizer] = tokenizer_for(cfg)
    out = train_arm(programs(cfg, seed)[arm], cfg, tok[cfg.tokenizer], progress=progress)
    if not out["finished"]:
        raise RuntimeError(f"{arm} (seed {seed}) stopped before its last step")
    return out


# the growth settings say everything a run depends on; the profile names the cache
@results.recorded("growth", context=results.settings_first, ignore=("profile", "tok", "show"))
def _arm(growth: GrowthSettings, item: dict[str, Any], *, profile: Profile, tok: dict[str, Any],
         show: bool) -> dict[str, Any]:
    return _trained(growth.run_config(item["regime"], item["seed"]), item["seed"], item["arm"],
                    tok, show)


# -- the paper's regime: a stated search, then a learning rate per arm ---------------------------
ARMS = ("uniform", "uniform same budget", "gtt", "G_stack", "random schedule")
TUNED = "paper regime"  # the regime name of the tuned runs in tables and charts


def _tuned_config(growth: GrowthSettings, size: int, lr: float, seed: int) -> GrowthConfig:
    return growth.run_config("memorise", seed).replace(memorise_tokens=size, lr=lr)


def _run_items(profile, items: dict[str, dict[str, Any]],
               progress: bool) -> dict[str, dict[str, Any]]:
    """Train the arms `items` name (size, lr, seed, arm), each cached as soon as it finishes."""
    return _tuned_arm.each(items, GrowthSettings.from_profile(profile), profile=profile, tok={},
                           show=progress, progress=progress)


@results.recorded("growth_tuning", context=results.settings_first,
                  ignore=("profile", "tok", "show"))
def _tuned_arm(growth: GrowthSettings, item: dict[str, Any], *, profile: Profile,
               tok: dict[str, Any], show: bool) -> dict[str, Any]:
    cfg = _tuned_config(growth, item["size"], item["lr"], item["seed"])
    return _trained(cfg, item["seed"], item["arm"], tok, show)


def _item(size: int, lr: float, seed: int, arm: str) -> tuple[str, dict[str, Any]]:
    return f"{size}-lr{lr:g}-s{seed}-{arm}", {"size": size, "lr": lr, "seed": seed, "arm": arm}


def search(profile, *, progress: bool = True) -> "pd.DataFrame":
    """Step 1: uniform training on each memorised-set size; the size nearest the target wins."""
    import pandas as pd

    t = GrowthSettings.from_profile(profile).tuning
    lr = GrowthSettings.from_profile(profile).config.lr
    items = dict(_item(n, lr, t.search_seed, "uniform") for n in t.sizes)
    runs = _run_items(profile, items, progress)
    rows = [{"set size (tokens)": items[k]["size"], "lr": lr, "seed": t.search_seed,
             "uniform final val loss": r["final_val_loss"]} for k, r in runs.items()]
    df = pd.DataFrame(rows)
    df["distance to target"] = (df["uniform final val loss"] - t.target).abs()
    df["chosen"] = df["distance to target"] == df["distance to target"].min()
    return df


def chosen_size(search_table: "pd.DataFrame") -> int:
    """The memorised-set size `search` chose (the one nearest the paper's uniform loss)."""
    return int(search_table.loc[search_table["chosen"], "set size (tokens)"].iloc[0])


def lr_grid(profile, size: int, *, progress: bool = True) -> "pd.DataFrame":
    """Step 2: every arm at every lr of the grid (search seed); the best lr per arm is marked."""
    import pandas as pd

    t = GrowthSettings.from_profile(profile).tuning
    items = dict(_item(size, lr, t.search_seed, arm) for arm in ARMS for lr in t.lrs)
    runs = _run_items(profile, items, progress)
    df = pd.DataFrame([{"arm": items[k]["arm"], "lr": items[k]["lr"],
                        "final val loss": r["final_val_loss"]} for k, r in runs.items()])
    best = df.groupby("arm")["final val loss"].transform("min")
    df["best"] = df["final val loss"] == best
    return df


def best_lrs(grid: "pd.DataFrame") -> dict[str, float]:
    """Each arm's learning rate with the lowest final loss in `lr_grid`'s table, by arm."""
    return {r["arm"]: float(r["lr"]) for _, r in grid[grid["best"]].iterrows()}


@dataclass(frozen=True, eq=False)  # tables: compared field by field, not with ==
class TunedResult:
    """The paper regime's pipeline (`tuned`)."""

    search: pd.DataFrame  # uniform's final val loss per memorised-set size
    size: int  # the set size kept
    grid: pd.DataFrame  # every arm's final val loss at every learning rate of the grid
    lrs: dict[str, float]  # each arm's learning rate, picked from the grid
    runs: dict[str, dict[str, Any]]  # the verdict's runs, named like `run`'s (`paper regime`)
    all_runs: dict[str, dict[str, Any]]  # every run of the pipeline: search, grid and verdict


def tuned(profile, *, progress: bool = True) -> TunedResult:
    """The whole paper-regime pipeline: search, lr grid, then every arm at its lr for the
    verdict's seeds; runs named like `run`'s (regime `paper regime`) so the analysis is shared."""
    t = GrowthSettings.from_profile(profile).tuning
    if t is None:
        raise ValueError(f"profile {profile.name!r} has no growth tuning settings")
    found = search(profile, progress=progress)
    size = chosen_size(found)
    grid = lr_grid(profile, size, progress=progress)
    lrs = best_lrs(grid)
    items = dict(_item(size, lrs[arm], seed, arm) for seed in t.seeds for arm in ARMS)
    # the paper's arm: GTT's program and learning rate, cut to 63 % of uniform's optimizer steps
    items |= dict(_item(size, lrs["gtt"], seed, PAPER_ARM) for seed in t.seeds)
    runs = _run_items(profile, items, progress)
    named = {f"{TUNED}-s{items[k]['seed']}-{items[k]['arm']}": r for k, r in runs.items()}
    every = {**_run_items(profile, dict(_item(n, GrowthSettings.from_profile(
        profile).config.lr, t.search_seed, "uniform") for n in t.sizes), progress),
             **_run_items(profile,
                          dict(_item(size, lr, t.search_seed, arm) for arm in ARMS for lr in t.lrs),
                          progress), **runs}
    return TunedResult(search=found, size=size, grid=grid, lrs=lrs, runs=named, all_runs=every)
