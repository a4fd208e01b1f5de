"""Screenshots of the report and of optuna-dashboard for the README.

Opens an exported ``report.html`` and a running ``nasmlcn dashboard`` in
headless Chromium (Debian's, through Playwright), captures the report's header
and Pareto front, the dashboard's nasmlcn figures and one trial's note, and
writes them as small palette PNGs (under 200 KB each).
``scripts/screenshots.sh`` runs it; see there for the whole procedure.

    python dashboards/screenshots.py --report DIR/report.html --dashboard URL \
        --study NAME --trial N --out docs/screenshots
"""

from __future__ import annotations

import argparse
import json
import shutil
import urllib.request
from pathlib import Path
from typing import Any

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"]
MAX_BYTES = 200_000


def shrink(raw: Path, out: Path, width: int) -> Path:
    """Scales ``raw`` to ``width`` pixels and stores it with a 256-colour palette,
    halving the width again until it is under ``MAX_BYTES``."""
    from PIL import Image

    with Image.open(raw) as image:
        rgb = image.convert("RGB")
    while True:
        height = round(rgb.height * width / rgb.width)
        small = rgb.resize((width, height), Image.Resampling.LANCZOS)
        small.quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(out, optimize=True)
        if out.stat().st_size <= MAX_BYTES or width < 400:
            return out
        width = int(width * 0.8)


def _clip(page: Any, selector: str, height: int, pad: int = 10) -> Any:
    """A full-width clip of ``height`` pixels from just above ``selector``."""
    box = page.locator(selector).first.bounding_box()
    width = page.viewport_size["width"]
    return {"x": 0, "y": max(0, box["y"] - pad), "width": width, "height": height}


def main() -> None:
    from playwright.sync_api import sync_playwright

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--report", type=Path, required=True)
    parser.add_argument("--dashboard", required=True, help="http://127.0.0.1:PORT/dashboard")
    parser.add_argument("--study", required=True)
    parser.add_argument("--trial", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("docs/screenshots"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    raw = args.out / ".raw.png"
    api = args.dashboard.replace("/dashboard", "/api/studies")
    with urllib.request.urlopen(api, timeout=60) as r:
        studies = json.load(r)["study_summaries"]
    study_id = next(s["study_id"] for s in studies if s["study_name"] == args.study)
    written = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900}, device_scale_factor=1)

        page.goto(args.report.resolve().as_uri())
        page.wait_for_selector("#fig-pareto_front .main-svg")
        page.screenshot(path=str(raw), full_page=True, clip=_clip(page, "header", 1500, 0))
        written.append(shrink(raw, args.out / "report.png", 960))

        page.goto(f"{args.dashboard}/studies/{study_id}")
        page.wait_for_function(
            "() => document.querySelectorAll('[id^=\"user-defined-plot:nasmlcn-\"] .main-svg')"
            ".length >= 4",
            timeout=60_000,
        )
        page.wait_for_timeout(1500)  # let the grid settle
        clip = _clip(page, '[id^="user-defined-plot:nasmlcn-"]', 1000, 40)
        page.screenshot(path=str(raw), full_page=True, clip=clip)
        written.append(shrink(raw, args.out / "dashboard.png", 960))

        page.goto(f"{args.dashboard}/studies/{study_id}/trials?numbers={args.trial}")
        page.wait_for_selector("text=Validation accuracy per epoch", timeout=60_000)
        page.screenshot(path=str(raw), clip={"x": 0, "y": 0, "width": 1280, "height": 820})
        written.append(shrink(raw, args.out / "dashboard-note.png", 960))
        browser.close()
    raw.unlink()
    for path in written:
        print(f"{path} ({path.stat().st_size / 1000:.0f} KB)")


if __name__ == "__main__":
    main()
