"""What chapter 10 shows of its runs: the curves as one table, bands and final losses over
seeds, each arm against uniform (`comparison`, which the claims also read), the arms'
programs, the cost of SmolLM2's vocabulary and the settings line for provenance.

Budgets are compared in every measure of the curves (`MEASURES`): optimizer steps,
layer-steps, tokens, FLOPs, wall-clock and CPU-seconds (NaN for a run never timed in them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from layerlab import models, paper
from layerlab.anatomy.growth.arms import program_flops, programs
from layerlab.anatomy.growth.model import step_flops
from layerlab.settings import GrowthConfig, GrowthSettings

if TYPE_CHECKING:
    import pandas as pd


MEASURES = ("step", "layer_steps", "tokens", "flops", "seconds", "cpu_seconds")
PAPER = paper.P2_GROWTH.value


def curves(runs: dict[str, dict[str, Any]]) -> "pd.DataFrame":
    """Every evaluation of every run as one long table (regime, seed and arm read from the run
    names `run` and `tuned` give), the table the rest of the analysis reads."""
    import pandas as pd

    rows = []
    for name, r in runs.items():
        regime, seed = name.split("-s")[0], int(name.split("-s")[1].split("-")[0])
        rows += [{"regime": regime, "seed": seed, "arm": r["arm"], **c} for c in r["curve"]]
    df = pd.DataFrame(rows)
    for m in MEASURES:  # a run recorded before a measure was counted: NaN, not a missing column
        if m not in df.columns:
            df[m] = float("nan")
    if len(df):
        df["cpu_seconds"] = df["cpu_seconds"].astype(float)  # None (a GPU run) becomes NaN
    return df


def bands(cv: "pd.DataFrame") -> "pd.DataFrame":
    """Mean, min and max over seeds at each evaluation point (seeds share the schedule)."""
    g = cv.groupby(["regime", "arm", "step"])
    out = g[list(MEASURES[1:])].mean().join(g["val_loss"].agg(["mean", "min", "max", "count"]))
    return out.reset_index().rename(columns={"mean": "val_loss", "min": "lo", "max": "hi"})


def finals(cv: "pd.DataFrame") -> "pd.DataFrame":
    """Final validation loss (mean ± sd over seeds) and the budget each arm spent."""
    last = cv.sort_values("step").groupby(["regime", "seed", "arm"]).tail(1)
    g = last.groupby(["regime", "arm"])
    out = g["val_loss"].agg(["mean", "std", "count"]).rename(
        columns={"mean": "final val loss", "std": "sd", "count": "seeds"})
    for m in MEASURES:
        out[m] = g[m].mean()
    return out.reset_index()


def comparison(cv: "pd.DataFrame") -> "pd.DataFrame":
    """Per regime and arm, against uniform at full budget: loss ratio and difference, the share
    of uniform's budget spent (each measure), and the first evaluation at which the arm's mean
    curve reaches uniform's final loss (as a share of uniform's steps and FLOPs)."""
    import pandas as pd

    f = finals(cv).set_index(["regime", "arm"])
    b = bands(cv)
    rows = []
    for regime in f.index.get_level_values(0).unique():
        uni = f.loc[(regime, "uniform")]
        for arm in f.loc[regime].index:
            r = f.loc[(regime, arm)]
            curve = b[(b["regime"] == regime) & (b["arm"] == arm)].sort_values("step")
            hit = curve[curve["val_loss"] <= uni["final val loss"]]
            rows.append({
                "regime": regime, "arm": arm, "final val loss": r["final val loss"], "sd": r["sd"],
                "uniform / arm loss": uni["final val loss"] / r["final val loss"],
                "loss − uniform": r["final val loss"] - uni["final val loss"],
                **{f"{m} share": r[m] / uni[m] for m in MEASURES},
                "reaches uniform's final loss at step share":
                    float(hit["step"].iloc[0] / uni["step"]) if len(hit) else float("nan"),
                "… at FLOP share":
                    float(hit["flops"].iloc[0] / uni["flops"]) if len(hit) else float("nan"),
            })
    return pd.DataFrame(rows)


def timing(runs: dict[str, dict[str, Any]], cfg: GrowthConfig,
           reruns: dict[str, dict[str, Any]] | None = None) -> "pd.DataFrame":
    """Per arm (mean over seeds): optimizer steps, training FLOPs (counted analytically from
    the arm's program, and as the run counted them), CPU-seconds and wall-clock seconds, each
    also as a share of uniform's; with the timing `reruns`, how far a rerun's final loss lies
    from its run's (the rerun trains the same program from the same seed)."""
    import pandas as pd

    vocab = len(models.byte_tokenizer()) if cfg.tokenizer == "byte" else 49_152
    rows = []
    for name, r in runs.items():
        seed = int(name.split("-s")[1].split("-")[0])
        # by the name the run records (the key of `programs` may differ: "uniform same budget")
        prog = {pr.arm: pr for pr in programs(cfg, seed).values()}[r["arm"]]
        last = r["curve"][-1]
        cpu = last.get("cpu_seconds")
        row = {"arm": r["arm"], "seed": seed, "steps": prog.steps,
               "FLOPs (program)": program_flops(prog, cfg, vocab), "FLOPs (run)": last["flops"],
               "CPU-seconds": float("nan") if cpu is None else cpu,
               "wall-clock seconds": last["seconds"]}
        if reruns is not None:
            again = reruns.get(name)
            row["rerun − run final loss"] = (again["final_val_loss"] - r["final_val_loss"]
                                             if again else float("nan"))
        rows.append(row)
    t = pd.DataFrame(rows).groupby("arm").mean(numeric_only=True).drop(columns="seed")
    for col in ("FLOPs (program)", "CPU-seconds", "wall-clock seconds"):
        t[f"{col} share"] = t[col] / t.loc["uniform", col] if "uniform" in t.index else float("nan")
    return t.reset_index()


def program_table(cfg: GrowthConfig, seed: int = 0) -> "pd.DataFrame":
    """Segments of every arm: layers trained, optimizer steps, layer-steps, operation."""
    import pandas as pd

    rows = []
    for prog in programs(cfg, seed).values():
        for s in prog.segments:
            rows.append({"arm": prog.arm, "segment": s.name, "layers trained": list(s.trainable),
                         "steps": s.steps, "layer-steps": len(s.trainable) * s.steps,
                         "operation": s.op or "", "model layers": s.model_layers})
        if prog.final_scale:
            rows.append({"arm": prog.arm, "segment": "end", "layers trained": [], "steps": 0,
                         "layer-steps": 0, "model layers": cfg.layers,
                         "operation": f"scale layers {list(prog.final_scale)} by {cfg.anti_scale}"})
    return pd.DataFrame(rows)


def vocab_cost(cfg: GrowthConfig, tuned_runs: dict[str, dict[str, Any]] | None = None,
               vocab: int = 49_152) -> str:
    """Training FLOPs per step of the paper's model with SmolLM2's vocabulary against ours, and
    what the paper-regime pipeline would have cost with it: the wall-clock our runs measured
    (every search, grid and seed run), times the FLOP ratio."""
    ours = step_flops(cfg, len(models.byte_tokenizer()) if cfg.tokenizer == "byte" else vocab,
                      cfg.layers, tuple(range(cfg.layers)))
    paper_model = step_flops(cfg, vocab, cfg.layers, tuple(range(cfg.layers)))
    ratio = paper_model / ours
    out = (f"training FLOPs per step: {ours:.3g} with our {cfg.tokenizer} vocabulary, "
           f"{paper_model:.3g} with SmolLM2's {vocab:,} tokens ({ratio:.1f}×)")
    if tuned_runs:
        hours = sum(r["curve"][-1]["seconds"] for r in tuned_runs.values()) / 3600
        out += (f"; the paper-regime runs took {hours:.1f} h of wall-clock here, so with SmolLM2's "
                f"vocabulary at least {hours * ratio:.0f} h on the same machine (FLOPs alone; the 49k-way "
                "softmax and the embedding's optimizer step add more)")
    return out


def seeds(cv: "pd.DataFrame") -> list[int]:
    """The training seeds in the curves, sorted (for the chapter's setting line)."""
    return sorted(int(s) for s in cv["seed"].unique())


def describe(profile) -> str:
    """The profile's growth settings on one line, for provenance blocks."""
    return GrowthSettings.from_profile(profile).describe()
