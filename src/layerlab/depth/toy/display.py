"""Chapter 04's tables from the sweeps' run records: α_ℓ of every sweep at every evaluation (the
table the verdicts in `rules` read), the final local slopes, the final losses, and the summary
over teacher seeds."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from layerlab.depth.toy.fits import fit_alpha, local_slopes

if TYPE_CHECKING:
    import pandas as pd


def alpha_table(runs: dict[str, dict[str, Any]]) -> "pd.DataFrame":
    """α_ℓ of every sweep at every evaluation step (the last row per sweep is the final one):
    over the sweep's own depths (`alpha`, its least-squares SE `alpha_se` over `n_depths`
    depths), over the depths every sweep of its block type shares (`alpha_common`,
    `alpha_common_se` over `n_common` depths, for comparing sweeps), and the deepest pair's local
    slope (`deep_slope`)."""
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
                         "deep_slope": deep})
    return pd.DataFrame(rows)


def final_alphas(alphas: "pd.DataFrame") -> "pd.DataFrame":
    """The last row of each sweep in an `alpha_table`, indexed by sweep."""
    return alphas.sort_values("step").groupby("sweep").tail(1).set_index("sweep")


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


def replicate_summary(alphas: "pd.DataFrame") -> "pd.DataFrame":
    """Final α_ℓ per teacher type, objective, temperature and student block over the depths
    every sweep shares: mean and SD over teacher seeds."""
    final = final_alphas(alphas)
    return final.groupby(["block", "teacher", "objective", "temperature"]).agg(
        alpha_mean=("alpha_common", "mean"), alpha_sd=("alpha_common", "std"),
        replicates=("alpha_common", "size")).reset_index()
