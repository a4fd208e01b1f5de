"""A real headless Chromium (Debian's) opens the exported report with the network
off, and the running dashboard on 127.0.0.1, and checks that the plots rendered."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nasmlcn.dashboard import figure_specs
from tests.conftest import copy_sqlite
from tests.dashboard.conftest import CHROMIUM, Made

playwright = pytest.importorskip("playwright.sync_api", reason="pip install playwright")
if not Path(CHROMIUM).exists():
    pytest.skip(f"no Chromium at {CHROMIUM}", allow_module_level=True)

NASMLCN = [sys.executable, "-m", "nasmlcn"]

# Flags that keep Chromium from reaching out on its own (updates, sync, QUIC).
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

# Every plot on the page: its id, number of traces in its data, and SVG/GL traces drawn.
PLOTS_JS = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).map(e => ({
    id: e.id,
    data: (e.data || []).length,
    drawn: e.querySelectorAll('g.trace, .gl-container canvas').length,
}))"""


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with playwright.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


class Watch:
    """Console errors, page errors and requests of one page."""

    def __init__(self, page: Any) -> None:
        self.errors: list[str] = []
        self.requests: list[str] = []
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(f"page error: {e}"))
        page.on("request", lambda r: self.requests.append(r.url))


def test_report_renders_offline(browser: Any, exported_report: Path, tmp_path: Path) -> None:
    context = browser.new_context(offline=True, viewport={"width": 1300, "height": 900})
    blocked: list[str] = []

    def only_files(route: Any) -> None:  # the network is off: anything not file:// fails
        if route.request.url.startswith("file://"):
            route.continue_()
        else:
            blocked.append(route.request.url)
            route.abort()

    context.route("**/*", only_files)
    page = context.new_page()
    watch = Watch(page)
    page.goto((exported_report / "report.html").as_uri())
    expected = len(figure_specs())
    page.wait_for_function(
        f"() => document.querySelectorAll('.js-plotly-plot .main-svg').length >= {expected}",
        timeout=30_000,
    )
    plots = page.evaluate(PLOTS_JS)
    assert [p["id"] for p in plots] == [f"fig-{s.name}" for s in figure_specs()]
    for plot in plots:
        assert plot["data"] > 0, plot
        assert plot["drawn"] > 0, plot
    assert page.evaluate("typeof Plotly") == "object"
    # the Pareto buttons work: hiding dominated trials hides their traces
    page.click("#fig-pareto_front .updatemenu-button >> nth=1")
    hidden = page.evaluate(
        "() => document.getElementById('fig-pareto_front').data"
        ".filter(t => t.visible === false).length"
    )
    assert hidden > 0
    page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
    assert watch.errors == [], watch.errors
    assert blocked == [], blocked
    assert all(u.startswith(("file://", "data:", "blob:")) for u in watch.requests), watch.requests
    context.close()


@pytest.fixture
def dashboard_url(pareto_study: Made, tmp_path: Path) -> Iterator[str]:
    """``nasmlcn dashboard`` on the study, on a free port of 127.0.0.1."""
    # the dashboard writes figures and notes: use a copy
    copy = copy_sqlite(pareto_study.path, tmp_path / "dash.db")
    proc = subprocess.Popen(
        [*NASMLCN, "dashboard", "--storage", f"sqlite:///{copy}", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # printed once the port is bound
        assert "http://127.0.0.1:" in line, (line, proc.stderr.read() if proc.stderr else "")
        yield line.split()[-1]
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _study_id(base: str, name: str) -> int:
    with urllib.request.urlopen(base.replace("/dashboard", "/api/studies"), timeout=30) as r:
        studies = json.load(r)["study_summaries"]
    return next(s["study_id"] for s in studies if s["study_name"] == name)


def test_dashboard_shows_figures_notes_and_feasibility(
    browser: Any, dashboard_url: str, pareto_study: Made, tmp_path: Path
) -> None:
    study_id = _study_id(dashboard_url, pareto_study.name)
    with urllib.request.urlopen(
        dashboard_url.replace("/dashboard", f"/api/studies/{study_id}?after=0"), timeout=30
    ) as r:
        detail = json.load(r)
    assert detail["objective_names"] == ["accuracy", "latency_s", "memory_MiB"]
    feasible = [all(c <= 0 for c in t["constraints"]) for t in detail["trials"]]
    # memory, the latency budget, and learning
    assert all(len(t["constraints"]) == 3 for t in detail["trials"])
    assert any(feasible)
    assert not all(feasible)

    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    watch = Watch(page)
    page.goto(f"{dashboard_url}/studies/{study_id}")
    expected = [s.name for s in figure_specs() if s.dashboard]
    page.wait_for_function(
        "() => Array.from(document.querySelectorAll('[id^=\"user-defined-plot:nasmlcn-\"]'))"
        f".filter(e => (e.data || []).length > 0).length >= {len(expected)}",
        timeout=60_000,
    )
    plots = {p["id"]: p for p in page.evaluate(PLOTS_JS)}
    for name in expected:
        plot = plots[f"user-defined-plot:nasmlcn-{name}"]
        assert plot["data"] > 0, plot
        assert plot["drawn"] > 0, plot
    assert plots["graph-pareto-front"]["data"] > 0  # optuna-dashboard's own views render too
    page.screenshot(path=str(tmp_path / "dashboard.png"), full_page=True)

    page.goto(f"{dashboard_url}/studies/{study_id}/trials?numbers=3")
    page.wait_for_selector("text=Validation accuracy per epoch", timeout=30_000)
    text = page.inner_text("body")
    assert "Trial 3: complete" in text
    assert "Placement (buckets" in text
    time.sleep(0.2)
    assert watch.errors == [], watch.errors
    context.close()
