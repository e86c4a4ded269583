"""The install files agree with each other."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def _lock() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "requirements" / "lock.txt").read_text().splitlines():
        if "==" in line and not line.startswith("#"):
            name, version = line.split("==")
            pins[name.lower()] = version.strip()
    return pins


def test_environment_yml_mirrors_the_lock():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    lock = _lock()
    for spec in pip:
        name, version = spec.split("==")
        assert lock[name.lower()] == version, spec
    assert "jupyter-book==1.0.4.post1" in pip


def test_lock_pins_the_cpu_torch_and_jupyter_book_1():
    lock = _lock()
    assert lock["torch"] == "2.13.0" and lock["jupyter-book"] == "1.0.4.post1"
    assert not any(name.startswith("nvidia-") for name in lock)  # no CUDA wheels


def test_book_symlinks_point_at_the_root():
    for link, target in (("book/_toc.yml", "../_toc.yml"), ("book/notebooks", "../notebooks")):
        path = ROOT / link
        assert path.is_symlink() and str(path.readlink()) == target


def test_readme_test_command_is_what_ci_runs():
    ci = (ROOT / ".ci" / "run").read_text()
    readme = (ROOT / "README.md").read_text()
    assert re.search(r"^\s*time make test\s*$", ci, re.M)
    assert "make test" in readme and "make book" in readme


def test_the_floors_file_pins_every_declared_lower_bound():
    # `make test-floors` tests the versions pyproject.toml promises: each declared ">=" bound of
    # a runtime dependency (torch aside: today's CPU build) is pinned in floors.txt at that
    # version, so raising a floor in one file and not the other fails here
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    floors = {}
    for line in (ROOT / "requirements" / "floors.txt").read_text().splitlines():
        if "==" in line and not line.startswith("#"):
            name, version = line.split("==")
            floors[name.lower()] = version.strip()
    for spec in deps:
        name, bound = re.match(r"([A-Za-z0-9_.-]+)>=([0-9.a-z]+)$", spec).groups()
        if name == "torch":
            continue
        pinned = floors[name.lower()]
        assert [int(x) for x in pinned.split(".")][:len(bound.split("."))] == \
            [int(x) for x in bound.split(".")], (spec, pinned)
