"""Settings of `layerlab report` (both papers' diagnostics on one model, chapter 12's page and
the command line): how much text each part reads, the `REPORT_QUICK` and `REPORT_FULL` presets,
and chapter 12's few models side by side.
"""

from __future__ import annotations

from dataclasses import dataclass

from layerlab.settings.base import _check, _Settings


# --- `layerlab report` -------------------------------------------------------------------------
@dataclass(frozen=True)
class ReportSettings(_Settings):
    """Both papers' per-model diagnostics on one model (`layerlab report`): how much text each
    part reads and how many intervals it draws. `QUICK` and `FULL` below are the two presets."""

    mode: str
    eval_tokens: int  # predicted tokens of the evaluation sentences (importance map, ×α sweep)
    eval_max_len: int  # longest sentence kept, in tokens
    geometry_tokens: int  # tokens of text in windows for P1's statistics
    seq_len: int  # window length for P1's statistics
    batch_size: int  # windows per forward pass
    profiles: int  # tokens sampled for the profile PCA (bulk fraction)
    lens_windows: int  # windows for the CE lens (it costs about L/2 forward passes each)
    bootstrap: int  # resamples of every interval
    alphas: tuple[float, ...]  # the ×α sweep
    scale_layers: int  # the sweep scales the k least important layers together
    ridge_alphas: tuple[float, ...]  # ridge penalties, in-sample and leave-one-out
    batch_tokens: int = 2048  # padded tokens per evaluation batch
    min_eval_tokens: int = 256  # a shorter evaluation text is refused
    seed: int = 0

    def validate(self) -> None:
        _check(self.mode in ("quick", "full", "custom"), f"mode must be quick/full/custom: {self.mode!r}")
        _check(min(self.eval_tokens, self.eval_max_len, self.geometry_tokens, self.batch_size,
                   self.profiles, self.lens_windows, self.bootstrap, self.scale_layers,
                   self.batch_tokens, self.min_eval_tokens) > 0,
               f"report sizes must be positive: {self}")
        _check(self.seq_len >= 8, f"seq_len must be at least 8 tokens, got {self.seq_len}")
        _check(self.geometry_tokens >= 2 * self.seq_len,
               "geometry_tokens must hold at least two windows of seq_len")
        _check(all(a > 0 for a in self.alphas) and self.alphas, f"bad alphas {self.alphas}")
        _check(all(a > 0 for a in self.ridge_alphas) and self.ridge_alphas,
               f"bad ridge_alphas {self.ridge_alphas}")

    def shrunk(self) -> "ReportSettings":
        return self.replace(mode="custom", eval_tokens=300, geometry_tokens=256, seq_len=32,
                            batch_size=4, profiles=200, lens_windows=2, bootstrap=50,
                            alphas=(0.9, 1.1), scale_layers=2, batch_tokens=512,
                            min_eval_tokens=64)


REPORT_QUICK = ReportSettings(
    mode="quick", eval_tokens=2048, eval_max_len=96, geometry_tokens=4096, seq_len=256,
    batch_size=4, profiles=4000, lens_windows=4, bootstrap=1000,
    alphas=(0.8, 0.9, 0.95, 1.05, 1.1), scale_layers=5, ridge_alphas=(1.0, 1e2, 1e4))
REPORT_FULL = REPORT_QUICK.replace(
    mode="full", eval_tokens=20_000, geometry_tokens=65_536, seq_len=512, batch_size=8,
    profiles=20_000, lens_windows=16, scale_layers=10)


@dataclass(frozen=True)
class ReportsSettings(_Settings):
    """Chapter 12: `layerlab report` on a few models, side by side. A model is a zoo name, a hub
    id, a local folder, or `family:<depth>:<seed>` (a member of this profile's depth family,
    saved with save_pretrained first)."""

    models: tuple[str, ...]
    report: ReportSettings

    profile_field = "reports"

    def validate(self) -> None:
        _check(len(self.models) > 0 and all(isinstance(m, str) and m for m in self.models),
               f"reports.models must name at least one model: {self.models!r}")

    def shrunk(self) -> "ReportsSettings":
        return self.replace(models=("tiny-llama", "tiny-gemma3"), report=self.report.shrunk())
