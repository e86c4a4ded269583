"""The shared setting of P2's chapters: one model, the E0/E1 evaluators, and a results cache
whose keys say which model and which sentences produced a number."""

from __future__ import annotations

from functools import cached_property
from typing import Any, Callable, Iterable, Mapping

from layerlab import models, results
from layerlab.anatomy import evalsets
from layerlab.anatomy.evaluator import Evaluator, Scores
from layerlab.profiles import Profile
from layerlab.settings import AnatomySettings

__all__ = ["config_for", "Lab", "ProfileOrLab", "recorded"]


def config_for(profile: Profile) -> AnatomySettings:
    """The profile's settings for P2's chapters (model, evaluation sets, bootstrap, methods)."""
    return AnatomySettings.from_profile(profile)


class Lab:
    """Loads the model and builds evaluators only when a result is missing from the cache.

    Every P2 experiment's `run` takes a profile or a Lab (`ProfileOrLab`, through `Lab.of`): a
    profile gets that profile's shared Lab, so the chapters that read one model load it once."""

    _shared: dict[int, tuple[Profile, Lab]] = {}

    @classmethod
    def of(cls, source: ProfileOrLab) -> Lab:
        """`source` itself if it is a Lab, else the one Lab this process keeps for that profile
        object (the profile is kept with it, so its id is never reused)."""
        if isinstance(source, Lab):
            return source
        if not isinstance(source, Profile):
            raise TypeError(f"expected a Profile or a Lab, got {type(source).__name__}")
        held = cls._shared.get(id(source))
        if held is None or held[0] is not source:
            held = cls._shared[id(source)] = (source, cls(source))
        return held[1]

    def __init__(self, profile: Profile, *, progress: bool = True) -> None:
        self.profile = profile
        self.cfg = config_for(profile)
        self.cache = results.Cache(profile.name)
        self.progress = progress
        self._evaluators: dict[tuple[str, int, bool], Evaluator] = {}

    @property
    def model_name(self) -> str:
        """The profile's model id (a `tiny-` name is a random model built from its config)."""
        return self.cfg.model

    def key(self, *, reads_e1: bool = True, **extra: Any) -> dict[str, Any]:
        """What a record's key takes from the Lab (read by `recorded`, which adds the step's
        arguments as `extra`): the model and the evaluation-set settings.

        E1's documents enter the key of an experiment that reads E1 (`reads_e1`) when set; an
        experiment that reads only E0, the weights or the in-order passage (`passage`) keeps
        its key, so its records stay valid whatever E1's documents are."""
        keep = ("model", "e1_source", "e1_tokens", "e1_max_len", "batch_tokens", "dtype")
        documents = ({"e1_documents": self.cfg.e1_documents}
                     if reads_e1 and self.cfg.e1_documents else {})
        return {**{k: getattr(self.cfg, k) for k in keep}, **documents, **extra}

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

    def evalset(self, name: str, tokens: int = 0, *, passage: bool = False) -> evalsets.EvalSet:
        """E0 or E1; `tokens` > 0 asks for a smaller E1 (the same documents, fewer sentences of
        each, when E1 is drawn by document). `passage` asks instead for E1's source read in
        text order up to `tokens` tokens -- one stretch of held-out text, for a curve tracked
        step by step rather than an interval (recovery)."""
        if name == "E0":
            if tokens:
                raise ValueError("E0 has no subsets: it is ten sentences")
            return evalsets.e0(self.lm.tokenizer)
        if name == "E1":
            if not passage:  # a subset is never larger than the set itself (the dry run's E1 is tiny)
                tokens = min(tokens or self.cfg.e1_tokens, self.cfg.e1_tokens)
            return evalsets.e1(self.lm.tokenizer, self.cfg.e1_source,
                               min_tokens=tokens or self.cfg.e1_tokens, max_len=self.cfg.e1_max_len,
                               documents=0 if passage else self.cfg.e1_documents)
        raise ValueError(f"unknown evaluation set {name!r}; use 'E0' or 'E1'")

    def evaluator(self, name: str, tokens: int = 0, *, passage: bool = False) -> Evaluator:
        """The evaluator of `evalset(name, tokens, passage=...)`, built once and kept (it caches
        the unedited model's scores and, when they fit, its block inputs); refuses a model whose
        depth is not the profile's."""
        which = (name, tokens, passage and name == "E1")
        if which not in self._evaluators:
            ev = Evaluator(self.lm, self.evalset(name, tokens, passage=which[2]),
                           batch_tokens=self.cfg.batch_tokens, progress=self.progress)
            if ev.lm.n_layers != self.n_layers:
                raise ValueError(f"{self.model_name} has {ev.lm.n_layers} layers; the profile "
                                 f"expects {self.n_layers} (set AnatomySettings.n_layers)")
            self._evaluators[which] = ev
        return self._evaluators[which]

    def base(self, name: str) -> Scores:
        """Base scores of a set (cached)."""
        return Scores.from_dict(_base(self, set=name))

    def describe_sets(self) -> list[dict[str, Any]]:
        """Size of each evaluation set (cached, so notebooks need no model to show it)."""
        return [_sizes(self, set=name) for name in ("E0", "E1")]


ProfileOrLab = Profile | Lab  # what every P2 experiment's `run` takes


def _reads_e1(value: Any) -> bool:
    return value == "E1" or (isinstance(value, (list, tuple)) and "E1" in value)


def recorded(experiment: str, *, reads_e1: bool | str = True, ignore: Iterable[str] = (),
             encode: Callable[[Any], Any] = lambda v: v,
             decode: Callable[[Any], Any] = lambda v: v) -> Callable[[Callable], Callable]:
    """Decorate a P2 step `fn(lab, …)` (`results.recorded` with the Lab as its context): its
    records live in the Lab's cache under the Lab's key (`Lab.key`: the model and evaluation-set
    settings) plus the step's other bound arguments, less `ignore` (state derived from those
    arguments, e.g. a model built once for many items). `reads_e1` says whether the step reads
    E1, or names its argument (a set's name, or several) that says so. Called as
    `step(lab, …)`, or `step.each(items, lab, …, progress=…)` for a step run per `item`;
    `encode`/`decode` turn its value into JSON and back (e.g. a table)."""
    def context(arguments: Mapping[str, Any]) -> tuple[dict[str, Any], results.Cache]:
        lab = Lab.of(next(iter(arguments.values())))
        reads = reads_e1 if isinstance(reads_e1, bool) else _reads_e1(arguments[reads_e1])
        return lab.key(reads_e1=reads), lab.cache

    return results.recorded(experiment, ignore=ignore, encode=encode, decode=decode,
                            context=context)


@recorded("anatomy_base", reads_e1="set")
def _base(lab: Lab, set: str) -> dict[str, Any]:  # noqa: A002 -- the key's field is "set"
    return lab.evaluator(set).base().to_dict()


@recorded("anatomy_sets", reads_e1="set")
def _sizes(lab: Lab, set: str) -> dict[str, Any]:  # noqa: A002
    return lab.evalset(set).describe()
