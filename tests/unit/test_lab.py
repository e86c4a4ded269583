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


def test_a_p2_records_key_is_the_labs_and_the_steps_arguments(tmp_path, monkeypatch):
    """`anatomy.lab.recorded`: nobody writes a P2 key. E1's documents enter only the keys of
    steps that read E1 (`reads_e1`, fixed or named by an argument); state derived from the
    key's arguments (`ignore`) does not enter; records live in the Lab's cache."""
    from layerlab import results
    from layerlab.anatomy import lab as lab_module
    from layerlab.anatomy.importance import experiment as importance
    from layerlab.anatomy.strategies import experiment as strategies

    monkeypatch.setenv("LAYERLAB_RESULTS", str(tmp_path))  # records go to a temporary root
    smoke = profiles.get("smoke")
    lab = Lab(smoke)
    assert lab.cfg.e1_documents  # else E1's documents could not tell the keys apart
    documents = {"e1_documents": lab.cfg.e1_documents}
    e0, e1 = lab.key(reads_e1=False), lab.key()
    assert e1 == {**e0, **documents}
    assert lab_module._base.key(lab, set="E0") == {**e0, "set": "E0"}
    assert lab_module._base.key(lab, set="E1") == {**e1, "set": "E1"}
    assert importance._twin_item.key(lab, None, seed=0, sets=["E0"], held={}) == {
        **e0, "twin": "untrained", "seed": 0}
    assert importance._twin_item.key(lab, None, seed=0, sets=["E0", "E1"], held={}) == {
        **e1, "twin": "untrained", "seed": 0}
    assert strategies._generation.key(lab, None, target=(5, 7), new_tokens=4, prompts=["a"],
                                      conds={}) == {**e0, "target": [5, 7], "new_tokens": 4,
                                                    "prompts": ["a"]}

    calls = []

    @lab_module.recorded("anatomy_sets", reads_e1=False)
    def step(lab: Lab, x: int) -> dict:
        calls.append(x)
        return {"x": x}

    assert step(lab, 2) == step(lab, 2) == {"x": 2} and calls == [2]
    assert lab.cache.get("anatomy_sets", {**e0, "x": 2}) == {"x": 2}
    assert results.Cache(smoke.name).get("anatomy_sets", {**e0, "x": 2}) == {"x": 2}
