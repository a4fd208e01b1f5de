"""A normal install works: the wheel carries every data file the package reads.

The slow test builds the wheel from a copy of the sources, installs it into a
fresh venv outside the checkout and runs the CLI from another folder, so that
nothing can come from the repository layout. The venv reuses this environment's
installed packages (torch, optuna, ...) through a ``.pth`` line that is read after
the venv's own site-packages, so the wheel's nasmlcn wins over the editable one
(whose finder is installed by a ``.pth`` file that such a line does not run).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import optuna
import pytest
import tomllib

ROOT = Path(__file__).resolve().parents[1]
SPACES = sorted(p.name for p in (ROOT / "search_spaces").glob("*.toml"))
# What building a wheel needs: pyproject.toml, its readme, the packages.
SOURCES = ("pyproject.toml", "README.md", "nasmlcn", "search_spaces", "studies")
# Folders outside nasmlcn/ that ship inside it: the built-in spaces and the recipes of
# `nasmlcn reproduce` (their engines are nasmlcn.reproduce.engines; benchmarks/ is
# not installed).
MAPPED = {
    "nasmlcn.search_spaces": "search_spaces",
    "nasmlcn.studies": "studies",
}
ENGINES = ROOT / "nasmlcn" / "reproduce" / "engines"


def test_the_package_list_matches_the_source_tree() -> None:
    """pyproject.toml lists the packages (two live outside nasmlcn/): none forgotten."""
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    found = {
        ".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "nasmlcn").rglob("__init__.py")
    }
    assert sorted(setuptools["packages"]) == sorted({*found, *MAPPED})
    assert setuptools["package-dir"] == MAPPED
    assert (ROOT / "search_spaces" / "__init__.py").is_file()
    assert (ROOT / "studies" / "__init__.py").is_file()
    # benchmarks/ has no __init__.py on purpose (its scripts import their siblings
    # as top-level modules), and it is no package of the wheel.
    assert not (ROOT / "benchmarks" / "__init__.py").exists()
    assert not any(p.startswith("nasmlcn.benchmarks") for p in setuptools["packages"])


def _run(
    cmd: list[str], cwd: Path, env: dict[str, str], timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{cmd} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    return done


def _build_wheel(tmp: Path) -> Path:
    src = tmp / "src"
    src.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build")
    for name in SOURCES:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=ignore)
        else:
            shutil.copy2(path, src / name)
    for path in ROOT.glob("LICEN[CS]E*"):
        shutil.copy2(path, src / path.name)
    dist = tmp / "dist"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    _run(
        [*pip, "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w", str(dist), "."],
        cwd=src,
        env=dict(os.environ),
    )
    (wheel,) = dist.glob("nasmlcn-*.whl")
    return wheel


def _make_venv(tmp: Path, wheel: Path) -> tuple[Path, dict[str, str]]:
    venv = tmp / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=tmp, env=dict(os.environ))
    python = venv / "bin" / "python"
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "--disable-pip-version-check",
            "-q",
            "--python",
            str(python),
            "install",
            "--no-deps",
            "--no-index",
            str(wheel),
        ],
        cwd=tmp,
        env=dict(os.environ),
    )
    # The dependencies: this environment's site-packages, after the venv's own.
    site = Path(
        _run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            cwd=tmp,
            env=dict(os.environ),
        ).stdout.strip()
    )
    deps = dict.fromkeys(
        [sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]
        + [p for p in sys.path if Path(p).name in ("site-packages", "dist-packages")]
    )
    (site / "zz_nasmlcn_test_deps.pth").write_text("\n".join(deps) + "\n")
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "NASMLCN_SPACES")
    }
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return venv, env


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_wheel_works_outside_the_checkout(tmp_path: Path) -> None:
    wheel = _build_wheel(tmp_path)
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "nasmlcn/hardware/devices.toml" in names
    assert "nasmlcn/py.typed" in names
    for space in [*SPACES, "__init__.py", "README.md"]:
        assert f"nasmlcn/search_spaces/{space}" in names
    for recipe in (ROOT / "studies").glob("*.toml"):
        assert f"nasmlcn/studies/{recipe.name}" in names
    for engine in ENGINES.glob("*.py"):
        assert f"nasmlcn/reproduce/engines/{engine.name}" in names
    assert not [n for n in names if n.startswith("nasmlcn/benchmarks/")]
    # no file of benchmarks/ ships under another name
    with zipfile.ZipFile(wheel) as zipped:
        shipped = {zipped.read(n) for n in names if n.endswith(".py")}
    ours = [p for p in (ROOT / "benchmarks").rglob("*.py") if p.read_bytes().strip()]
    assert not [p for p in ours if p.read_bytes() in shipped]
    assert {n.split("/")[0] for n in names} == {
        "nasmlcn",
        wheel.name.split("-py")[0] + ".dist-info",
    }

    venv, env = _make_venv(tmp_path, wheel)
    work = tmp_path / "work"
    work.mkdir()
    nasmlcn = str(venv / "bin" / "nasmlcn")

    # The wheel's nasmlcn is imported, not the checkout's, and its data is inside it.
    where = json.loads(
        _run(
            [
                str(venv / "bin" / "python"),
                "-c",
                "import json, nasmlcn, nasmlcn.search_spaces as s\n"
                "from nasmlcn.hardware import BUILTIN_CATALOG\n"
                "from nasmlcn.search.spaces import space_dirs\n"
                "print(json.dumps([nasmlcn.__file__, s.__file__, str(BUILTIN_CATALOG),"
                " [str(d) for d in space_dirs()]]))",
            ],
            cwd=work,
            env=env,
        ).stdout
    )
    package, spaces_init, catalog, dirs = where
    installed = (venv / "lib").resolve()
    for path in (package, spaces_init, catalog, *dirs):
        assert Path(path).resolve().is_relative_to(installed), where
    assert Path(catalog).is_file()
    assert dirs == [str(Path(spaces_init).parent)]

    devices = json.loads(_run([nasmlcn, "devices", "--json"], cwd=work, env=env).stdout)
    assert {"K80", "V100", "H200", "cpu"} <= {d["name"] for d in devices["catalog"]}
    assert "K80" in _run([nasmlcn, "devices"], cwd=work, env=env).stdout

    plan = json.loads(
        _run(
            [nasmlcn, "plan", "--devices", "2xK80", "--lanes", "2*mlcn1:4x1", "--json"],
            cwd=work,
            env=env,
        ).stdout
    )
    assert [len(d["lanes"]) for d in plan["devices"]] == [1, 1]
    assert plan["makespan"] > 0

    # An unknown space: the error lists the built-in ones.
    search = [nasmlcn, "search", "--devices", "2xK80", "--mem", "12GB", "--evaluator", "proxy"]
    done = subprocess.run(
        [*search, "--space", "nope", "--trials", "1", "--storage", f"sqlite:///{tmp_path}/x.db"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    assert "known spaces: " + ", ".join(Path(s).stem for s in SPACES) in done.stderr

    # The default space (built in) and the export.
    storage = f"sqlite:///{tmp_path}/s.db"
    result = json.loads(
        _run(
            [*search, "--trials", "5", "--storage", storage, "--study", "w", "-q", "--json"],
            cwd=work,
            env=env,
        ).stdout
    )
    assert result["n_trials"] == 5, result
    assert result["completed"] == 5, result
    assert result["config"]["space"] == "mlcn-buckets"
    space = optuna.load_study(study_name="w", storage=storage).user_attrs["nasmlcn"]["space"]
    assert Path(space["source"]) == Path(spaces_init).parent / "mlcn-buckets.toml"

    out = tmp_path / "exp"
    export = [nasmlcn, "export", "--study", "w", "--storage", storage, "--out", str(out)]
    _run([*export, "--format", "html,csv,json"], cwd=work, env=env)
    for name in ("report.html", "trials.csv", "trials.json"):
        assert (out / name).stat().st_size > 0, name
    exported = json.loads((out / "trials.json").read_text())
    assert exported["study"] == "w"
    assert len(exported["trials"]) == 5

    # What users do: copy a built-in space, find it by name through $NASMLCN_SPACES.
    mine = tmp_path / "my-spaces"
    mine.mkdir()
    shutil.copy2(Path(spaces_init).parent / "mlcn-homogeneous.toml", mine / "my-space.toml")
    storage = f"sqlite:///{tmp_path}/m.db"
    result = json.loads(
        _run(
            [*search, "--space", "my-space", "--trials", "2", "--storage", storage, "-q", "--json"],
            cwd=work,
            env={**env, "NASMLCN_SPACES": str(mine)},
        ).stdout
    )
    assert result["completed"] == 2, result
    study = optuna.load_study(study_name=result["study"], storage=storage)
    assert Path(study.user_attrs["nasmlcn"]["space"]["source"]) == mine / "my-space.toml"

    # Calibration measures CPU memory in child processes that import this nasmlcn.
    calibrate = [nasmlcn, "calibrate", "--quick", "--lanes", "3", "--run-on", "cpu", "-q"]
    cal_file = tmp_path / "cal.json"
    cal = json.loads(_run([*calibrate, "--json", "--out", str(cal_file)], cwd=work, env=env).stdout)
    assert cal["lanes"] == 3
    assert cal_file.is_file()

    # nasmlcn reproduce finds its recipes and engines inside the wheel.
    listed = json.loads(_run([nasmlcn, "reproduce", "--list", "--json"], cwd=work, env=env).stdout)
    recipes = {Path(r["recipe"]).resolve() for r in listed["results"]}
    assert {p.name for p in recipes} >= {"thesis-table4.1.toml", "nascaps-table3.toml"}
    assert all(p.is_relative_to(installed) for p in recipes), recipes
    rep = tmp_path / "rep"
    done = json.loads(
        _run(
            [
                nasmlcn,
                "reproduce",
                "nascaps-table3",
                "--scale",
                "smoke",
                "--out",
                str(rep),
                "--json",
            ],
            cwd=work,
            env=env,
        ).stdout
    )
    assert done["results"][0]["verdict"]["kind"] == "smoke"
    run = json.loads((rep / "nascaps-table3" / "smoke" / "run.json").read_text())
    assert run["commands"][""][1:3] == ["-m", "nasmlcn.reproduce.engines.capsacc_table3"]
    assert (rep / "index.html").is_file()
    assert not list(work.iterdir()), "the commands wrote into the working directory"
