"""The model zoo's errors: an unknown name, a model that cannot be obtained, an unsupported
architecture (every chapter that loads a model, through `load`).
"""

from __future__ import annotations


class ModelError(RuntimeError):
    """Base class for model-zoo errors; the message always says what to do."""


class UnknownModel(ModelError):
    pass


class ModelNotAvailable(ModelError):
    pass


class UnsupportedArchitecture(ModelError):
    pass
