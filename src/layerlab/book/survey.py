"""Chapter 00: what each model of a profile is, how well it predicts each text, and what its
residual stream looks like (norm per layer, with the final-norm convention made visible)."""

from __future__ import annotations

from typing import Any

import torch

from layerlab import corpus, evaluate, models, profiles, results
from layerlab.profiles import Profile

CORPORA = ("wikipedia", "pydoc", "kjv", "shakespeare")


def corpora_for(profile: Profile) -> tuple[str, ...]:
    return ("fineweb", *CORPORA) if profile.name in profiles.ONLINE else CORPORA


@torch.no_grad()
def norm_profile(lm: models.LoadedModel, blocks: torch.Tensor) -> list[dict[str, Any]]:
    """Mean L2 norm of the residual stream per layer, over positions 1.. (position 0 is often an
    attention sink with an outsized norm), in both conventions for the last layer."""
    hidden, raw_last = models.forward_with_hidden(lm, blocks)
    rows = []
    n_layers = len(hidden) - 1
    for layer, h in enumerate(hidden):
        normed_last = layer == n_layers
        norms = h[:, 1:].float().norm(dim=-1)
        rows.append({"layer": layer, "depth": layer / n_layers, "mean_norm": float(norms.mean()),
                     "state": "after final norm" if normed_last else "residual stream"})
    raw = raw_last[:, 1:].float().norm(dim=-1)
    rows.append({"layer": n_layers, "depth": 1.0, "mean_norm": float(raw.mean()),
                 "state": "residual stream"})
    return rows


def survey_model(name: str, profile: Profile, *, corpora: list[str] | None = None,
                 split: str = "test") -> dict[str, Any]:
    """Load one model and measure it on `corpora` (default: every corpus of the profile), on
    their `split`."""
    lm = models.load(name, device=models.default_device())
    from layerlab.progress import tqdm

    ppl = {}
    for source in tqdm(corpora or corpora_for(profile), desc=f"perplexity {name}", leave=False):
        blocks = corpus.token_blocks(lm.tokenizer, source, n_tokens=profile.eval_tokens,
                                     seq_len=profile.seq_len, split=split, add_bos=lm.add_bos)
        ppl[source] = evaluate.perplexity(lm, blocks, batch_size=profile.batch_size)
    probe = corpus.token_blocks(lm.tokenizer, profile.eval_corpus, n_tokens=2 * profile.seq_len,
                                seq_len=profile.seq_len, split=split, add_bos=lm.add_bos)
    return {
        "summary": lm.summary(),
        "load_seconds": lm.info["load_seconds"],
        "add_bos": lm.add_bos,
        "perplexity": ppl,
        "norms": norm_profile(lm, probe),
        "last_hidden": models.last_hidden_convention(lm, probe[:1]),
    }


def run(profile: Profile, cache: results.Cache | None = None, *,
        force: bool = False) -> dict[str, dict[str, Any]]:
    """`survey_model` for every model of the profile, each cached as soon as it finishes."""
    return _surveyed.each({m: m for m in profile.models}, profile,
                          corpora=list(corpora_for(profile)), cache=cache, force=force)


@results.recorded("models_and_data", context=results.profile_config)
def _surveyed(profile: Profile, item: str, *, corpora: list[str],
              split: str = "test") -> dict[str, Any]:
    return survey_model(item, profile, corpora=corpora, split=split)


def perplexity_table(survey: dict[str, dict[str, Any]]):
    """Long table: model, corpus, perplexity, tokens."""
    import pandas as pd

    return pd.DataFrame(
        [{"model": m, "corpus": c, "perplexity": r["ppl"], "predicted_tokens": r["predicted_tokens"]}
         for m, res in survey.items() for c, r in res["perplexity"].items()]
    )


def model_table(survey: dict[str, dict[str, Any]]):
    """One column per model: architecture, size, source, and the measured last-state convention."""
    import pandas as pd

    rows = [{**res["summary"],
             "last hidden = final_norm(last block)": res["last_hidden"]["last_is_final_normed"]}
            for res in survey.values()]
    return pd.DataFrame(rows).set_index("name").T


def norm_table(survey: dict[str, dict[str, Any]]):
    import pandas as pd

    return pd.DataFrame([{"model": m, **row} for m, res in survey.items() for row in res["norms"]])


# Stated tolerances for "the model works" (see chapter 00). A pretrained ~100M-parameter LM lands
# in the tens on encyclopedic text; a random one is about as bad as a uniform guess.
PRETRAINED_WIKI_PPL = (10.0, 60.0)
RANDOM_PPL_OVER_VOCAB = (0.8, 1.25)


def sanity_table(survey: dict[str, dict[str, Any]]):
    """One row per model: the rule that applies to it, the measured value, and pass/fail."""
    import pandas as pd

    rows = []
    for model, res in survey.items():
        vocab = res["summary"]["vocab"]
        ppl = {c: r["ppl"] for c, r in res["perplexity"].items()}
        if res["summary"]["source"].startswith("random init"):
            lo, hi = RANDOM_PPL_OVER_VOCAB
            worst = max(abs(v / vocab - 1) for v in ppl.values())
            ok = all(lo <= v / vocab <= hi for v in ppl.values())
            rule = f"random weights: perplexity / vocab in [{lo}, {hi}] on every corpus"
            value = f"largest |ppl/vocab - 1| = {worst:.2f}"
        else:
            lo, hi = PRETRAINED_WIKI_PPL
            wiki = ppl.get("wikipedia", float("nan"))
            ok = lo <= wiki <= hi and max(ppl.values()) < 0.01 * vocab
            rule = (f"pretrained: Wikipedia perplexity in [{lo:g}, {hi:g}] and every corpus "
                    f"below 1 % of the vocabulary ({0.01 * vocab:.0f})")
            value = f"Wikipedia {wiki:.2f}; worst corpus {max(ppl.values()):.2f}"
        rows.append({"model": model, "rule": rule, "measured": value,
                     "verdict": "pass" if ok else "FAIL"})
    return pd.DataFrame(rows).set_index("model")
