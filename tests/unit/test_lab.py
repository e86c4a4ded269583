"""P2's shared setting (anatomy.lab, chapters 05–10): every P2 experiment's `run` takes a
profile or a Lab."""

import pytest

from layerlab import profiles
from layerlab.anatomy.lab import Lab


def test_a_p2_run_takes_a_profile_or_a_lab():
    """`Lab.of`: a Lab is itself; a profile gets one shared Lab (one model load per profile),
    built without loading anything."""
    smoke = profiles.get("smoke")
    lab = Lab(smoke)
    assert Lab.of(lab) is lab
    shared = Lab.of(smoke)
    assert shared is Lab.of(smoke) and shared is not lab and shared.profile is smoke
    assert "lm" not in vars(shared)  # the model is loaded on first use only
    with pytest.raises(TypeError, match="Profile or a Lab"):
        Lab.of("smoke")
