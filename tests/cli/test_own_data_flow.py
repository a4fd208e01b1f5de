"""A user's own images from search to deployment, as a user runs it: a search on a
folder with two workers, then ``best --export``, ``retrain``, ``evaluate`` and
``export-model`` with no ``--dataset`` (the study and the run folders know their
data), and the exported model run in plain PyTorch on the user's test images with
the stored preprocessing, which must give ``evaluate``'s accuracy. A search
continued on changed data is refused; the same data at another path continues."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import optuna
import pytest
import torch
from PIL import Image

from tests.conftest import run_cli
from tests.data._images import write_folder

SEARCH = (
    *("search", "--devices", "1xK80", "--mem", "12GB", "--flops", "0.05x"),
    *("--epochs", "1", "--batch-size", "20", "--no-prune", "--run-on", "cpu"),
    *("--sampler", "random", "--seed", "1", "--study", "own", "-q"),
)


def _ok(result: subprocess.CompletedProcess[str]) -> dict[str, object]:
    assert result.returncode == 0, (result.stdout, result.stderr)
    return json.loads(result.stdout) if result.stdout.startswith("{") else {}


@pytest.fixture(scope="module")
def flow(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """The search, export, retraining and exports, run once for the module."""
    root = tmp_path_factory.mktemp("own-flow")
    (root / "data").mkdir()
    write_folder(root / "imgs", classes=3, per_class=24, size=(28, 28), channels=3, split=True)
    env = {"NASMLCN_DATA_DIR": str(root / "data")}
    storage = ("--storage", f"sqlite:///{root / 's.db'}")

    def cli(*args: str) -> dict[str, object]:
        return _ok(run_cli(*args, env=env, cwd=root))

    cli(*SEARCH, *storage, "--dataset", str(root / "imgs"), "--trials", "4", "--workers", "2")
    cli("best", *storage, "--study", "own", "--export", str(root / "best"))
    evaluated = cli("evaluate", "--run", str(root / "best"), "--json")
    retrained = cli(
        "retrain", *storage, "--study", "own", "--top", "1", "--epochs", "2",
        "--out", str(root / "rt"), "--json",
    )  # fmt: skip
    run = root / "rt" / f"trial-{retrained['models'][0]['number']:04d}"  # type: ignore[index]
    tested = cli("evaluate", "--run", str(run), "--json")
    exported = cli("export-model", "--run", str(run), "--json")
    return {
        "root": root, "env": env, "storage": storage, "evaluated": evaluated,
        "retrained": retrained, "tested": tested, "exported": exported,
    }  # fmt: skip


def test_every_command_after_the_search_knows_the_data_without_being_told(
    flow: dict[str, object],
) -> None:
    root = flow["root"]
    assert isinstance(root, Path)
    evaluated, tested, retrained = flow["evaluated"], flow["tested"], flow["retrained"]
    assert isinstance(evaluated, dict)
    assert isinstance(tested, dict)
    assert isinstance(retrained, dict)
    for result in (evaluated, tested):
        assert result["dataset"] == str(root / "imgs")
        assert [c["class"] for c in result["per_class"]] == ["c0", "c1", "c2"]
        assert sum(c["images"] for c in result["per_class"]) == result["test_images"] == 18
        correct = sum(round(c["accuracy"] * c["images"]) for c in result["per_class"])
        assert correct / 18 == pytest.approx(result["test_accuracy"])
    assert retrained["dataset"] == str(root / "imgs")
    assert retrained["models"][0]["test_images"] == 18  # the test/ folder's images


@pytest.mark.filterwarnings("ignore:`torch.jit.load` is deprecated:FutureWarning")
def test_the_exported_model_in_plain_pytorch_matches_evaluate(flow: dict[str, object]) -> None:
    root, exported, tested = flow["root"], flow["exported"], flow["tested"]
    assert isinstance(root, Path)
    assert isinstance(exported, dict)
    assert isinstance(tested, dict)
    sidecar = json.loads(Path(str(exported["preprocessing_path"])).read_text())
    assert sidecar["classes"] == ["c0", "c1", "c2"]
    assert sidecar["input_shape"] == [3, 28, 28]
    assert sidecar["normalization"] is not None  # colour data: its training split's statistics
    # what a deployment does, with nothing from nasmlcn: read the files, scale, normalise
    model = torch.jit.load(str(exported["path"]))
    mean = torch.tensor(sidecar["normalization"]["mean"]).view(3, 1, 1)
    std = torch.tensor(sidecar["normalization"]["std"]).view(3, 1, 1)
    correct = total = 0
    for k, name in enumerate(sidecar["classes"]):
        for path in sorted((root / "imgs" / "test" / name).glob("*.png")):
            pixels = np.asarray(Image.open(path).convert("RGB"), dtype=np.float32) / 255
            x = (torch.from_numpy(pixels).permute(2, 0, 1) - mean) / std  # (3, H, W)
            probabilities, _ = model(x[None])
            correct += int(probabilities.argmax(1).item() == k)
            total += 1
    assert total == tested["test_images"]
    assert correct / total == pytest.approx(tested["test_accuracy"])


def test_a_search_goes_on_with_its_data_at_another_path_and_not_with_changed_data(
    flow: dict[str, object],
) -> None:
    root, env, storage = flow["root"], flow["env"], flow["storage"]
    assert isinstance(root, Path)
    assert isinstance(env, dict)
    assert isinstance(storage, tuple)
    # a worker where the path is not: the data directory's cache has the data
    (root / "imgs").rename(root / "away")
    try:
        search = (*SEARCH, *storage, "--dataset", str(root / "imgs"))
        _ok(run_cli(*search, "--trials", "5", env=env))
    finally:
        (root / "away").rename(root / "imgs")
    shutil.copytree(root / "imgs", root / "moved")  # the same images at another path
    _ok(run_cli(*SEARCH, *storage, "--dataset", str(root / "moved"), "--trials", "6", env=env))
    changed = root / "moved" / "train" / "c0" / "0001.png"
    Image.fromarray(np.zeros((28, 28, 3), np.uint8)).save(changed)
    result = run_cli(*SEARCH, *storage, "--dataset", str(root / "moved"), "--trials", "7", env=env)
    assert result.returncode == 2
    assert "error: study 'own' was made on other data: folder 'imgs'" in result.stderr
    assert "(now folder 'moved'" in result.stderr
    trials = optuna.load_study(study_name="own", storage=storage[1]).trials
    assert len(trials) == 6  # 4, then one from the cache, one from the copy; none after
