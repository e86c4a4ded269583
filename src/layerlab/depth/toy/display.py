"""Chapter 04's tables from the sweeps' run records: α_ℓ of every sweep at every evaluation (the
table the verdicts in `rules` read), the final local slopes, the final losses, and the
settings whose teacher seeds are one unit, with α_ℓ per teacher seed over the deep students."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np

from layerlab.depth.toy.fits import fit_alpha, local_slopes, mean_interval

if TYPE_CHECKING:
    import pandas as pd

# The shallowest student depth of the per-seed fits. Below it a sweep's loss curve bends (the
# local slope from 2 to 4 blocks differs from the deeper ones), so a line through depth 2 measures
# the bend as much as the exponent; P1's own students start at 6.
DEEP = 4
_SEED_SUFFIX = re.compile(r"-s\d+$")


def setting_key(cfg: Mapping[str, Any], *, without: tuple[str, ...] = ()) -> str:
    """A sweep's setting: its config without the teacher seed and the student depths (and the
    fields in `without`). Sweeps with one key differ only by teacher seed (and which students
    they train): they are replicates of one setting, one unit of the verdicts."""
    drop = {"seed", "student_depths", *without}
    return json.dumps({k: v for k, v in cfg.items() if k not in drop}, sort_keys=True,
                      default=list)


def alpha_table(runs: dict[str, dict[str, Any]]) -> "pd.DataFrame":
    """α_ℓ of every sweep at every evaluation step (the last row per sweep is the final one):
    over the sweep's own depths (`alpha`, its least-squares SE `alpha_se` over `n_depths`
    depths), over the depths every sweep of its block type shares (`alpha_common`,
    `alpha_common_se` over `n_common` depths, for comparing sweeps), and the deepest pair's local
    slope (`deep_slope`); with each student's test loss (`losses`, by depth), the sweep's
    setting (`setting_key`, `setting`: its name without the seed suffix) and its length
    (`train_steps`), from which `seed_alphas` fits each teacher seed."""
    import pandas as pd

    blocks = {r["config"].get("student_block", "euler") for r in runs.values()}
    shared = {b: sorted(set.intersection(*(set(r["depths"]) for r in runs.values()
                                            if r["config"].get("student_block", "euler") == b)))
              for b in blocks}
    rows = []
    for name, run in runs.items():
        cfg = run["config"]
        common = shared[cfg.get("student_block", "euler")]  # shared by sweeps of its block type
        keep = [run["depths"].index(d) for d in common]
        for point in run["curve"]:
            alpha, se = fit_alpha(run["depths"], point["test_loss"])
            alpha_c, se_c = (fit_alpha(common, [point["test_loss"][i] for i in keep])
                             if len(common) > 1 else (np.nan, np.nan))
            deep = local_slopes(run["depths"], point["test_loss"])[-1]["slope"]
            rows.append({"sweep": name, "teacher": cfg["teacher"], "objective": cfg["objective"],
                         "temperature": cfg["temperature"], "seed": cfg["seed"],
                         "block": cfg.get("student_block", "euler"),
                         "depths": f"{min(run['depths'])}–{max(run['depths'])}",
                         "step": point["step"], "alpha": alpha, "alpha_se": se,
                         "alpha_common": alpha_c, "alpha_common_se": se_c,
                         "n_depths": len(run["depths"]), "n_common": len(common),
                         "deep_slope": deep, "setting": _SEED_SUFFIX.sub("", name),
                         "setting_key": setting_key(cfg), "train_steps": cfg.get("steps"),
                         "losses": dict(zip(run["depths"], point["test_loss"]))})
    return pd.DataFrame(rows)


def final_alphas(alphas: "pd.DataFrame") -> "pd.DataFrame":
    """The last row of each sweep in an `alpha_table`, indexed by sweep."""
    return alphas.sort_values("step").groupby("sweep").tail(1).set_index("sweep")


@dataclass(frozen=True)
class Setting:
    """The sweeps of one setting, one per teacher seed: one unit of the verdicts. `depths` are
    the student depths of at least `DEEP` blocks that every seed trained."""

    name: str
    key: str
    sweeps: Mapping[int, str]  # teacher seed → sweep
    depths: tuple[int, ...]

    @property
    def config(self) -> dict[str, Any]:
        """The setting's config (without seed and student depths), for finding its twin."""
        return json.loads(self.key)


def _shared_deep(final: "pd.DataFrame", sweeps) -> tuple[int, ...]:
    common = set.intersection(*(set(final.loc[s, "losses"]) for s in sweeps))
    return tuple(sorted(int(d) for d in common if d >= DEEP))


def settings(final: "pd.DataFrame") -> list[Setting]:
    """The settings of a `final_alphas` table (or a selection of it), in its order."""
    out = []
    for key, rows in final.groupby("setting_key", sort=False):
        sweeps = {int(r.seed): str(name) for name, r in rows.sort_values("seed").iterrows()}
        label = " + ".join(dict.fromkeys(rows["setting"]))  # one name unless profiles differ
        out.append(Setting(name=label, key=str(key), sweeps=sweeps,
                           depths=_shared_deep(final, sweeps.values())))
    return out


def seed_alphas(alphas: "pd.DataFrame", setting: Setting,
                depths: tuple[int, ...] | None = None) -> "pd.DataFrame":
    """α_ℓ of each teacher seed of `setting` at every evaluation (rows: steps, columns: seeds),
    each a least-squares fit over `depths` (the setting's own deep depths by default): one
    estimate per seed, the replicates the verdicts' intervals are taken over."""
    import pandas as pd

    depths = setting.depths if depths is None else depths
    cols = {}
    for seed, sweep in setting.sweeps.items():
        rows = alphas[alphas["sweep"] == sweep].sort_values("step")
        cols[seed] = pd.Series(
            [fit_alpha(depths, [r[d] for d in depths])[0] if len(depths) > 1 else np.nan
             for r in rows["losses"]], index=rows["step"].to_numpy())
    return pd.DataFrame(cols).sort_index()


def seed_summary(alphas: "pd.DataFrame") -> "pd.DataFrame":
    """Per setting: its teacher seeds, the deep depths they share, each seed's final α_ℓ over
    them and the mean with its 95 % t interval over seeds (none with one seed)."""
    import pandas as pd

    final = final_alphas(alphas)
    rows = []
    for s in settings(final):
        last = seed_alphas(alphas, s).iloc[-1]
        est = mean_interval(last)
        first = final.loc[next(iter(s.sweeps.values()))]
        rows.append({"setting": s.name, "block": first["block"], "teacher": first["teacher"],
                     "objective": first["objective"], "temperature": first["temperature"],
                     "seeds": len(s.sweeps),
                     "depths": f"{s.depths[0]}–{s.depths[-1]}" if s.depths else "none",
                     "alpha_per_seed": ", ".join(f"{v:.3f}" for v in last),
                     "alpha_mean": float(last.mean()),
                     "lo": np.nan if est is None else est.lo,
                     "hi": np.nan if est is None else est.hi})
    return pd.DataFrame(rows)


def slope_table(runs: dict[str, dict[str, Any]]) -> "pd.DataFrame":
    """Final local slopes of every sweep, one row per consecutive depth pair."""
    import pandas as pd

    return pd.DataFrame([{"sweep": name, "teacher": run["config"]["teacher"],
                          "objective": run["config"]["objective"],
                          "temperature": run["config"]["temperature"],
                          "block": run["config"].get("student_block", "euler"),
                          "pair": f"{s['from']}→{s['to']}", "to": s["to"], "slope": s["slope"]}
                         for name, run in runs.items()
                         for s in local_slopes(run["depths"], run["final"])])


def loss_table(runs: dict[str, dict[str, Any]]) -> "pd.DataFrame":
    """Final test loss per sweep and student depth."""
    import pandas as pd

    return pd.DataFrame([{"sweep": name, "teacher": run["config"]["teacher"],
                          "objective": run["config"]["objective"],
                          "temperature": run["config"]["temperature"], "depth": d, "test_loss": v}
                         for name, run in runs.items() for d, v in zip(run["depths"], run["final"])])
