"""``nasmlcn export``: every file, valid images, a self-contained report, clear errors."""

from __future__ import annotations

import csv
import json
import re
import subprocess
from pathlib import Path

import pytest

from nasmlcn.dashboard import (
    ExportError,
    default_out_dir,
    export_study,
    figure_specs,
    parse_formats,
)
from tests.conftest import ROOT, run_cli
from tests.dashboard.conftest import Made

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_export_writes_every_file(exported: Path, pareto_study: Made) -> None:
    names = [s.name for s in figure_specs()]
    # the three-objective proxy study has something to show in every figure
    for name in names:
        for ext in ("png", "svg"):
            assert (exported / "figures" / f"{name}.{ext}").is_file(), f"{name}.{ext}"
    for name in ("report.html", "trials.csv", "trials.json"):
        assert (exported / name).is_file(), name

    with (exported / "trials.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    study = pareto_study.load()
    assert len(rows) == len(study.trials)
    assert rows[0]["accuracy"]
    assert rows[0]["lane_mix"]
    assert rows[0]["param:lane0"]
    data = json.loads((exported / "trials.json").read_text())
    assert data["study"] == pareto_study.name
    assert len(data["trials"]) == len(study.trials)


def test_exports_show_each_model_once(exported: Path, pareto_study: Made) -> None:
    """A repeat (it took an earlier trial's result) names its original, is never on
    the front, and the original says how many trials proposed its model: in the CSV,
    the JSON and the report's table."""
    with (exported / "trials.csv").open(newline="") as f:
        rows = {int(r["number"]): r for r in csv.DictReader(f)}
    repeats = {n: int(r["repeat_of"]) for n, r in rows.items() if r["repeat_of"]}
    assert repeats, "NSGA-II's 40 proposals in this space repeat some models"
    assert all(rows[n]["pareto"] == "False" for n in repeats)
    assert all(rows[n]["proposed"] == "" for n in repeats)
    for original in set(repeats.values()):
        assert int(rows[original]["proposed"]) == 1 + list(repeats.values()).count(original)
    trials = json.loads((exported / "trials.json").read_text())["trials"]
    assert {t["number"]: t["repeat_of"] for t in trials if t["repeat_of"] is not None} == repeats
    html = (exported / "report.html").read_text()
    shown = [o for o in set(repeats.values()) if rows[o]["pareto"] == "True"]
    for original in shown:
        assert f"<td>{original} (x{rows[original]['proposed']})</td>" in html
    assert shown, "a repeated model is on this study's front"
    assert "Each model is shown once" in html


def test_pngs_are_valid_images(exported: Path) -> None:
    from PIL import Image

    for path in sorted((exported / "figures").glob("*.png")):
        assert path.read_bytes()[:8] == PNG_MAGIC, path
        with Image.open(path) as image:
            image.verify()
        with Image.open(path) as image:
            assert image.width == 1000, (path, image.size)
            assert image.height >= 300, (path, image.size)
            # a rendered plot, not a blank page: many distinct colours
            colours = image.convert("RGB").getcolors(maxcolors=1 << 20)
            assert colours is not None, path
            assert len(colours) > 20, path
    for path in sorted((exported / "figures").glob("*.svg")):
        text = path.read_text()
        assert text.lstrip().startswith("<svg"), path
        assert "</svg>" in text, path


def test_report_is_self_contained(exported: Path) -> None:
    page = (exported / "report.html").read_text()
    assert len(page.encode()) < 10 * 1024**2
    # plotly.js inlined exactly once, and nothing loaded from elsewhere
    assert page.count("plotly.js v") <= 2
    assert "Plotly.newPlot" in page
    assert not re.search(r"<script[^>]+src=", page)
    assert not re.search(r"<link[^>]+href=", page)
    assert "cdn.plot.ly/plotly" not in page.replace("https://cdn.plot.ly/un/", "")
    for spec in figure_specs():
        assert f'id="fig-{spec.name}"' in page, spec.name
    assert 'id="correlation_table"' in page
    assert "Spearman" in page
    assert "proxy evaluator" in page  # the proxy accuracy is labelled as such
    # predicted and measured figures under their own headings, each naming its device
    assert 'class="group">predicted on ' in page
    assert ">inference per image (median, IQR)</th>" in page


def test_single_objective_export_leaves_out_pareto_figures(
    single_study: Made, tmp_path: Path
) -> None:
    result = export_study(single_study.load(), tmp_path, ("html", "csv"))
    assert "pareto_front" not in result.figures
    assert "hypervolume_history" not in result.figures
    assert "optimization_history" in result.figures
    page = (tmp_path / "report.html").read_text()
    assert "single-objective study" in page
    assert {p.name for p in result.files} == {"report.html", "trials.csv"}


def test_parse_formats() -> None:
    assert parse_formats("html, PNG,.csv") == ("html", "png", "csv")
    assert parse_formats("all") == ("html", "png", "svg", "csv", "json")
    with pytest.raises(ExportError, match="did you mean 'png'"):
        parse_formats("html,pgn")
    with pytest.raises(ExportError, match="no export format"):
        parse_formats(" , ")
    assert default_out_dir("mlcn-buckets-8xK80-1x.a_b") == Path(
        "dashboards/exports/mlcn-buckets-8xK80-1x.a_b"
    )
    # a name no folder takes as it is stays inside the exports, in a folder of its own
    folders = [default_out_dir(n) for n in ("a/b c", "a b", "a_b", "..", ".", "...")]
    assert len(set(folders)) == len(folders)
    assert all(f.parent == Path("dashboards/exports") for f in folders)
    assert all(f.name.strip(".") for f in folders)
    assert folders[0].name.startswith("a_b_c-")


def test_export_cli(pareto_study: Made, tmp_path: Path) -> None:
    out = tmp_path / "cli"
    proc = run_cli(
        "export",
        "--study",
        pareto_study.name,
        "--storage",
        pareto_study.url,
        "--out",
        str(out),
        "--format",
        "csv,json",
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["study"] == pareto_study.name
    assert sorted(Path(p).name for p in result["files"]) == ["trials.csv", "trials.json"]
    assert (out / "trials.csv").is_file()


def test_an_export_never_mixes_with_another_study_s_or_a_user_s_files(
    pareto_study: Made, single_study: Made, tmp_path: Path
) -> None:
    # `export --study mo1 --out exports/real1` wrote mo1's report beside real1's
    # trials.json and figures, without a word
    def export(
        made: Made, out: Path, formats: str = "csv,json"
    ) -> subprocess.CompletedProcess[str]:
        args = ("--study", made.name, "--storage", made.url, "--out", str(out))
        return run_cli("export", *args, "--format", formats)

    out = tmp_path / "real1"
    assert export(pareto_study, out).returncode == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    other = export(single_study, out)
    assert other.returncode == 2
    assert other.stderr.strip() == (
        f"error: --out {str(out)!r} holds the export of study 'pareto'; give another folder "
        "for study 'single' (two studies' reports and figures never mix)"
    )
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    # the same study again refreshes its export, leaving none of its old files stale
    again = export(pareto_study, out, "json")
    assert again.returncode == 0, again.stderr
    assert {p.name for p in out.iterdir()} == {"trials.json", ".nasmlcn-export.json"}
    # a folder of the user's own is not written into either
    own = tmp_path / "mine"
    own.mkdir()
    (own / "notes.txt").write_text("mine")
    refused = export(pareto_study, own)
    assert refused.returncode == 2
    assert "already holds files that are no export of study 'pareto'" in refused.stderr
    assert [p.name for p in own.iterdir()] == ["notes.txt"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--storage", "sqlite:///{tmp}/nope.db"), "no such database file"),
        (("--storage", "nosuchdriver://host/db"), "storage 'nosuchdriver://host/db'"),
        (("--storage", "{url}", "--study", "paretto"), "did you mean 'pareto'"),
        (("--storage", "{url}", "--format", "html,gif"), "unknown export format 'gif'"),
    ],
)
def test_export_errors_are_one_line(
    args: tuple[str, ...], message: str, pareto_study: Made, tmp_path: Path
) -> None:
    filled = [a.format(tmp=tmp_path, url=pareto_study.url) for a in args]
    proc = run_cli("export", *filled, "--out", str(tmp_path / "x"))
    assert proc.returncode == 2, proc.stderr
    lines = [line for line in proc.stderr.strip().splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert message in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "x" / "report.html").exists()


def test_dashboard_cli_bad_storage_is_one_line(tmp_path: Path) -> None:
    proc = run_cli("dashboard", "--storage", f"sqlite:///{tmp_path}/nope.db", "--port", "0")
    assert proc.returncode == 2
    assert "no such database file" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_the_dashboard_listens_on_an_ipv6_address(pareto_study: Made) -> None:
    import socket
    import threading
    import urllib.request

    from nasmlcn.dashboard import make_dashboard_server
    from nasmlcn.errors import DashboardError

    try:
        socket.create_server(("::1", 0), family=socket.AF_INET6).close()
    except OSError:  # a machine without IPv6: one clear error
        with pytest.raises(DashboardError, match=r"cannot listen on ::1:0"):
            make_dashboard_server(pareto_study.url, "::1", 0)
        return
    server = make_dashboard_server(pareto_study.url, "::1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        assert server.server_address[0] == "::1"
        url = f"http://[::1]:{server.server_port}/api/studies"
        with urllib.request.urlopen(url, timeout=30) as response:
            assert response.status == 200
    finally:
        server.shutdown()
        server.server_close()


def test_exports_are_git_ignored() -> None:
    assert "dashboards/exports/" in (ROOT / ".gitignore").read_text().splitlines()


def test_dashboards_readme_describes_every_figure() -> None:
    text = (ROOT / "dashboards" / "README.md").read_text()
    for spec in figure_specs():
        assert f"| `{spec.name}` |" in text, spec.name
