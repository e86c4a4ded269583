"""The shared setting of P2's chapters: one model, the E0/E1 evaluators, and a results cache
whose keys say which model and which sentences produced a number."""

from __future__ import annotations

from functools import cached_property
from typing import Any

from layerlab import models, results
from layerlab.anatomy import evalsets
from layerlab.anatomy.evaluator import Evaluator, Scores
from layerlab.profiles import Profile
from layerlab.settings import AnatomySettings

__all__ = ["config_for", "Lab"]


def config_for(profile: Profile) -> AnatomySettings:
    """The profile's settings for P2's chapters (model, evaluation sets, bootstrap, methods)."""
    return AnatomySettings.from_profile(profile)


class Lab:
    """Loads the model and builds evaluators only when a result is missing from the cache."""

    def __init__(self, profile: Profile, *, progress: bool = True) -> None:
        self.profile = profile
        self.cfg = config_for(profile)
        self.cache = results.Cache(profile.name)
        self.progress = progress
        self._evaluators: dict[tuple[str, int], Evaluator] = {}

    @property
    def model_name(self) -> str:
        """The profile's model id (a `tiny-` name is a random model built from its config)."""
        return self.cfg.model

    def key(self, **extra: Any) -> dict[str, Any]:
        """Cache key: model, evaluation-set settings and whatever the experiment adds."""
        keep = ("model", "e1_source", "e1_tokens", "e1_max_len", "batch_tokens", "dtype")
        return {**{k: getattr(self.cfg, k) for k in keep}, **extra}

    @cached_property
    def lm(self) -> models.LoadedModel:
        """The model, loaded on first use and kept (in the profile's dtype on the default
        device); a `tiny-` model is built at random with `tiny_layers` layers."""
        dtype = models.resolve_dtype(self.cfg.torch_dtype)
        if self.model_name.startswith("tiny-"):
            return models.load_tiny(self.model_name, layers=self.cfg.tiny_layers)
        return models.load(self.model_name, dtype=dtype, device=models.default_device())

    @property
    def n_layers(self) -> int:
        """The depth the profile declares, known without loading the model; `evaluator`
        checks the loaded model against it."""
        return self.cfg.n_layers

    def evalset(self, name: str, tokens: int = 0) -> evalsets.EvalSet:
        """E0 or E1; `tokens` > 0 keeps only E1's first sentences up to that many tokens (E1 is
        taken in text order, so the subset is a prefix of the full set)."""
        if name == "E0":
            if tokens:
                raise ValueError("E0 has no subsets: it is ten sentences")
            return evalsets.e0(self.lm.tokenizer)
        if name == "E1":
            return evalsets.e1(self.lm.tokenizer, self.cfg.e1_source,
                               min_tokens=tokens or self.cfg.e1_tokens, max_len=self.cfg.e1_max_len)
        raise ValueError(f"unknown evaluation set {name!r}; use 'E0' or 'E1'")

    def evaluator(self, name: str, tokens: int = 0) -> Evaluator:
        """The evaluator of `evalset(name, tokens)`, built once and kept (it caches the unedited
        model's scores and, when they fit, its block inputs); refuses a model whose depth is not
        the profile's."""
        if (name, tokens) not in self._evaluators:
            ev = Evaluator(self.lm, self.evalset(name, tokens), batch_tokens=self.cfg.batch_tokens,
                           progress=self.progress)
            if ev.lm.n_layers != self.n_layers:
                raise ValueError(f"{self.model_name} has {ev.lm.n_layers} layers; the profile "
                                 f"expects {self.n_layers} (set AnatomySettings.n_layers)")
            self._evaluators[(name, tokens)] = ev
        return self._evaluators[(name, tokens)]

    def base(self, name: str) -> Scores:
        """Base scores of a set (cached)."""
        value = self.cache.cached("anatomy_base", self.key(set=name),
                                  lambda: self.evaluator(name).base().to_dict())
        return Scores.from_dict(value)

    def describe_sets(self) -> list[dict[str, Any]]:
        """Size of each evaluation set (cached, so notebooks need no model to show it)."""
        return [self.cache.cached("anatomy_sets", self.key(set=name),
                                  lambda name=name: self.evalset(name).describe())
                for name in ("E0", "E1")]
