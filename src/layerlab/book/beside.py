"""Another profile's results beside a chapter's own: what `make gpu-run` computed, shown next to
the `cpu` numbers in chapters 02 (the depth family), 04 (the toy grid) and 10 (growth).

The `gpu` records are committed in `results/gpu/` and read here from the cache only: a page
rendered on a CPU never trains anything. Each side is labelled with the device that computed
it (from the records' provenance). Complete `gpu` results are judged by the chapter's own rules
and registered in the `gpu` claims register; a partial set is shown but not judged (a claim
about every temperature, or every arm, judged on the part that finished would be a selection).
Chapter 11 (`verdicts.table`) then takes, claim by claim, the verdict of the better-powered
profile and says which.

Better powered means a larger budget in every size that sets an experiment's power: `POWER`
orders the profiles, and `dominates` checks the order setting by setting (steps, batch, seeds,
sweeps, depths, tokens), so `tests/book/test_beside.py` can prove it for the profiles we ship.

Used by chapters 02, 04, 10 and 11.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from layerlab import claims, profiles, results
from layerlab.profiles import Profile

POWER = ("smoke", "cpu", "colab", "gpu")  # increasing budget
# which stronger profiles a profile's pages show beside their own (smoke is a code check and
# never mixes in committed results)
BESIDE: dict[str, tuple[str, ...]] = {"cpu": ("gpu",), "colab": ("gpu",)}


def rank(profile: str) -> int:
    return POWER.index(profile) if profile in POWER else -1


def stronger(profile: str) -> tuple[str, ...]:
    return BESIDE.get(profile, ())


def other_profile(name: str = "gpu") -> Profile:
    """The profile whose committed results are shown (shrunk under `LAYERLAB_DRY=1`)."""
    return profiles.get(name)


@dataclass(repr=False)
class Beside:
    """What one chapter shows of another profile's results."""

    chapter: str
    what: str  # e.g. "the toy grid"
    own: str
    other: str
    status: str  # "not shown", "none", "partial" or "complete"
    units: str = ""
    done: int = 0
    total: int = 0
    missing: str = ""
    device: str = ""
    table: pd.DataFrame | None = None
    claims: list = field(default_factory=list)

    def message(self) -> str:
        o, w = f"`{self.other}`", self.what
        if self.status == "not shown":
            return (f"The `{self.own}` profile shows no other profile's results (only `cpu` and "
                    f"`colab` pages show the committed {o} ones).")
        if self.status == "none":
            return (f"No {o} results for {w} are committed yet: `make gpu-run` on a GPU machine "
                    f"computes them (the tiers above say what it runs), and this section then "
                    f"shows them beside the `{self.own}` ones, read from the committed records.")
        counted = f"{self.done} of {self.total} {self.units}" if self.total else "part"
        if self.status == "partial":
            return (f"{o} results for {w}: {counted} stored, computed on {self.device}; shown "
                    f"beside `{self.own}` but not judged until complete (first missing: "
                    f"{self.missing}).")
        return (f"{o} results for {w}: all {self.total} {self.units}, computed on {self.device}, "
                f"beside `{self.own}`. Judged by the same rules, they are the {o} verdicts below; "
                f"chapter 11 takes them over the `{self.own}` ones, being better powered.")

    def __repr__(self) -> str:  # the plain-text form of the page's output
        lines = [f"{self.other} beside {self.own}: {self.message()}"]
        if self.table is not None and len(self.table):
            lines.append(self.table.to_string(index=False, na_rep="—"))
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        text = html.escape(self.message()).replace("`", "")
        body = f"<p><b>{html.escape(self.other)} beside {html.escape(self.own)}.</b> {text}</p>"
        if self.table is not None and len(self.table):
            body += self.table.to_html(index=False, na_rep="—")
        if self.claims:
            body += claims.table(self.claims).to_html(index=False)
        return body


def _label(b: Beside, experiments: tuple[str, ...]) -> None:
    b.device = "; ".join(results.devices(b.other, experiments)) or "an unrecorded device"


def _register(b: Beside, found: list) -> None:
    for claim in found:
        claims.register(claim, b.other)
    b.claims = found


def _setting(b: Beside, text: str) -> str:
    return f"profile {b.other} on {b.device}: {text}"


# --- chapter 04: the toy grid -------------------------------------------------------------------
def _toy_settings(final: pd.DataFrame) -> pd.Series:
    """A label per sweep that both profiles' grids share (their temperatures differ)."""
    kl = final[(final["objective"] == "kl") & (final["block"] == "euler")]["temperature"]
    labels = []
    for _, r in final.iterrows():
        if r["block"] != "euler":
            labels.append(f"{r['objective'].upper()}, {r['block'].upper()} blocks")
        elif r["objective"] != "kl":
            labels.append(r["objective"].upper())
        else:
            t = r["temperature"]
            where = ("coldest T" if np.isclose(t, kl.min()) else "hottest T"
                     if np.isclose(t, kl.max()) else "other T")
            labels.append(f"KL, {where}")
    return pd.Series(labels, index=final.index)


def _spread(values: pd.Series) -> str:
    values = values.dropna()
    if values.empty:
        return ""
    sd = f" ± {values.std():.2f}" if len(values) > 1 else ""
    return f"{values.mean():.2f}{sd} ({len(values)} sweep{'s' if len(values) > 1 else ''})"


def toy_summary(alphas: pd.DataFrame, column: str) -> pd.DataFrame:
    """Final α_ℓ per sweep kind and teacher (mean ± SD over sweeps) as one column."""
    final = alphas.sort_values("step").groupby("sweep").tail(1)
    final = final.assign(setting=_toy_settings(final))
    return (final.groupby(["setting", "teacher"])["alpha"].apply(_spread)
            .rename(column).reset_index())


def toy(own: Profile, own_alphas: pd.DataFrame, other: Profile | None = None) -> Beside:
    """Chapter 04: the other profile's sweeps (complete ones only) beside this profile's α_ℓ."""
    from layerlab.depth import toy as toy_mod

    other = other or other_profile()
    b = Beside("04", "the toy grid", own.name, other.name, "not shown", units="sweeps")
    if other.name not in stronger(own.name):
        return b
    configs = toy_mod.sweep_configs(other)
    runs, missing = toy_mod.stored_sweeps(configs, results.Cache(other.name))
    b.total, b.done = len(configs), len(runs)
    if not runs:
        b.status = "none"
        return b
    _label(b, (toy_mod.STUDENTS,))
    theirs = toy_mod.alpha_table(runs)
    b.table = toy_summary(own_alphas, f"{own.name} α_ℓ").merge(
        toy_summary(theirs, f"{other.name} α_ℓ"), on=["setting", "teacher"], how="outer")
    if missing:
        b.status, b.missing = "partial", missing[0]
        return b
    b.status = "complete"
    spec = other.toy
    first, last = spec.step_range()
    setting = _setting(b, f"teacher depth {spec.teacher_depth}, students {spec.student_depths} "
                          f"(some sweeps other), batch {spec.batch_size}, {first}–{last} steps")
    _register(b, [toy_mod.assess_independent(theirs, setting),
                  toy_mod.assess_tied_steep(theirs, setting),
                  toy_mod.assess_tied_cold(theirs, setting),
                  toy_mod.assess_mse(theirs, setting)])
    return b


# --- chapter 02: the depth family -----------------------------------------------------------------
def family_summary(losses: pd.DataFrame, seq: pd.DataFrame | None, cfg, column: str) -> pd.DataFrame:
    """What one family shows, one row per quantity."""
    from layerlab.depth import geometry

    rows = {
        "depths × seeds": f"{sorted(int(d) for d in losses['depth'].unique())} × "
                          f"{losses['seed'].nunique()}",
        "width; training tokens per member": f"{cfg.width}; {cfg.tokens_per_model:,}",
    }
    if losses["depth"].nunique() > 1:  # a partly trained family may hold a single depth
        mono = geometry.family_monotone(losses)
        fit = geometry.loss_depth_fit(losses)
        rows["seed SD of the final loss (nats/byte)"] = f"{mono['seed_sd']:.4f}"
        rows["loss falls with depth (within the noise)"] = str(mono["monotone"])
        rows["fit c/ℓ^α + L∞: α"] = f"{fit['alpha']:.2f} ± {fit['alpha_se']:.2f}"
    if seq is not None:
        s = geometry.control_slopes(seq, "middle_theta")
        for cond in ("trained", "untrained"):
            v = s[cond]
            rows[f"slope of log middle θ on log ℓ, {cond}"] = (
                f"{v['slope']:.2f} [{v['lo']:.2f}, {v['hi']:.2f}]")
    return pd.DataFrame({"quantity": list(rows), column: list(rows.values())})


def family(own: Profile, own_losses: pd.DataFrame, own_seq: pd.DataFrame,
           other: Profile | None = None) -> Beside:
    """Chapter 02: the other profile's depth family (losses; the P1-A2 slope once every member
    and its statistics are stored) beside this profile's."""
    from layerlab.depth import family as family_mod
    from layerlab.depth import geometry

    other = other or other_profile()
    b = Beside("02", "the depth family", own.name, other.name, "not shown", units="members")
    if other.name not in stronger(own.name):
        return b
    cfg = family_mod.config_for(other)
    stored = family_mod.stored(cfg, other.name)
    b.total, b.done = len(cfg.seeds) * len(cfg.depths), len(stored)
    if not stored:
        b.status = "none"
        return b
    _label(b, (family_mod.FAMILY, geometry.CONTROLS))
    seq = None
    if len(stored) == b.total:  # the statistics are measured once every member is trained
        try:
            with results.cache_only():
                # the family's slope reads no last angle: no paper-convention records needed
                seq = geometry.controls(other, only=geometry.family_control_names(other),
                                        progress=False, paper_last=False)
        except LookupError as err:
            b.missing = f"the hidden-state statistics ({str(err).split(' is not in ')[0]})"
    else:
        b.missing = next(n for n in family_mod.members(cfg) if n not in stored)
    losses = geometry.family_losses(stored)
    own_cfg = family_mod.config_for(own)
    b.table = family_summary(own_losses, own_seq, own_cfg, own.name).merge(
        family_summary(losses, seq, cfg, other.name), on="quantity", how="outer", sort=False)
    if seq is None:
        b.status = "partial"
        return b
    b.status = "complete"
    setting = _setting(b, f"byte-level family of depths {list(cfg.depths)}, width {cfg.width}, "
                          f"seeds {list(cfg.seeds)}, {cfg.tokens_per_model:,} tokens per member")
    _register(b, [geometry.assess_inverse_depth(geometry.control_slopes(seq, "middle_theta"),
                                                losses, setting)])
    return b


# --- chapter 10: growth ----------------------------------------------------------------------------
def growth_summary(cv: pd.DataFrame, column: str) -> pd.DataFrame:
    from layerlab.anatomy import growth as growth_mod

    f = growth_mod.finals(cv)
    f[column] = [f"{r['final val loss']:.3f}" + (f" ± {r['sd']:.3f}" if r["seeds"] > 1 else "")
                 + f" ({int(r['seeds'])} seed{'s' if r['seeds'] > 1 else ''})"
                 for _, r in f.iterrows()]
    return f[["regime", "arm", column]]


def growth(own: Profile, own_cv: pd.DataFrame, other: Profile | None = None) -> Beside:
    """Chapter 10: the other profile's arms (every regime, the paper-regime search and its
    seeds) beside this profile's final validation losses; judged once all are stored."""
    from layerlab.anatomy import growth as growth_mod

    other = other or other_profile()
    b = Beside("10", "growth training", own.name, other.name, "not shown")
    if other.name not in stronger(own.name):
        return b
    experiments = ("growth", "growth_tuning")
    folder = results.Cache(other.name).folder
    if not any(any((folder / e).glob("*.json")) for e in experiments):
        b.status = "none"
        return b
    _label(b, experiments)
    try:
        with results.cache_only():
            runs = growth_mod.run(other, progress=False)
            tuned = growth_mod.tuned(other, progress=False)
    except LookupError as err:
        b.status, b.missing = "partial", str(err).split(" is not in ")[0]
        return b
    cv = growth_mod.curves({**runs, **tuned.runs})
    b.table = growth_summary(own_cv, f"{own.name} final val loss").merge(
        growth_summary(cv, f"{other.name} final val loss"), on=["regime", "arm"], how="outer")
    b.status, b.units = "complete", "runs"
    b.total = b.done = len(tuned.all_runs) + len(runs)
    cfg = growth_mod.config_for(other, "natural", 0)
    setting = _setting(b, f"{cfg.layers}-layer Llama-style model, d = {cfg.width}, tokenizer "
                          f"{cfg.tokenizer}, seeds {growth_mod.seeds(cv)}")
    _register(b, growth_mod.assess(cv, setting))
    return b


# --- which profile's settings are stronger -------------------------------------------------------
def dominates(strong: Profile, weak: Profile) -> dict[str, bool]:
    """Per experiment shown beside another: is every power-setting size of `strong` at least
    `weak`'s? (What makes `strong`'s verdict the better-powered one.)"""
    from layerlab.depth import family as family_mod
    from layerlab.settings import GrowthSettings

    def toy_sizes(p: Profile) -> dict[str, float]:
        cfgs = p.toy.sweep_configs().values()
        return {"sweeps": len(cfgs), "steps": min(c.steps for c in cfgs),
                "batch": p.toy.batch_size, "teacher depth": p.toy.teacher_depth,
                "deepest student": max(max(c.student_depths) for c in cfgs)}

    def family_sizes(p: Profile) -> dict[str, float]:
        c = family_mod.config_for(p)
        return {"seeds": len(c.seeds), "depths": len(c.depths), "deepest": max(c.depths),
                "tokens": c.tokens_per_model}

    def growth_sizes(p: Profile) -> dict[str, float]:
        g = GrowthSettings.from_profile(p)
        return {"seeds": len(g.seeds), "regimes": len(g.regimes),
                "steps": g.config.uniform_steps * g.config.batch_size * g.config.seq_len,
                "verdict seeds": len(g.tuning.seeds) if g.tuning else 0}

    out = {}
    for name, sizes in (("toy", toy_sizes), ("family", family_sizes), ("growth", growth_sizes)):
        s, w = sizes(strong), sizes(weak)
        out[name] = all(s[k] >= w[k] for k in w)
    return out
