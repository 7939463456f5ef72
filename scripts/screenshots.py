"""Screenshots of every dashboard page a minute after `make watch` starts and an hour later, for
docs/dashboard.md (docs/img/first-minute-*.png, docs/img/first-hour-*.png).

    .venv/bin/python scripts/screenshots.py [OUTDIR]

Headless Debian chromium through Playwright, 1280×800, PNGs reduced to a 256-colour palette.
The stores are synthetic (tests/first_hour_data.py) with the clock stopped, so a rerun gives the
same pictures; pages whose data a probe-only store lacks (jobs, workload, ...) are hidden from the
navigation and are not photographed.
"""

from __future__ import annotations

import json
import sys
import tempfile
import urllib.request
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from browser import launch, visit  # noqa: E402
from first_hour_data import TARGET, first_hour, first_minute  # noqa: E402
from web_server import Server, frozen_app  # noqa: E402

VIEWPORT = {"width": 1280, "height": 800}
#: Query strings that make a page show the one target (pages that need one).
QUERY = {"timeline": f"?target={quote(TARGET)}", "factors": f"?target={quote(TARGET)}&since=1h"}


def available_pages(url: str) -> list[str]:
    with urllib.request.urlopen(url + "/api", timeout=60) as r:
        index = json.loads(r.read())
    return [p["slug"] for p in index["pages"] if p["available"] and p.get("in_nav", True)]


def shoot(home: Path, t0_ns: int, prefix: str, out: Path, chromium: str) -> list[Path]:
    shots = []
    with Server(frozen_app(home, t0_ns)) as srv, launch(chromium) as default:
        # A context of the screenshots' size from the start: resizing a drawn page leaves Plotly's
        # responsive plots at their old height over the text below them.
        context = default.browser.new_context(viewport=VIEWPORT)
        for slug in available_pages(srv.url):
            with visit(context, srv.url + f"/{slug}" + QUERY.get(slug, "")) as v:
                path = out / f"{prefix}-{slug}.png"
                v.page.screenshot(path=str(path))
                if v.errors:
                    raise SystemExit(f"{slug}: {v.errors}")
                shots.append(path)
        context.close()
    return shots


def optimise(path: Path) -> None:
    """A 256-colour palette: a dashboard has few colours, and the file shrinks about 4×."""
    from PIL import Image

    img = Image.open(path).convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    img.save(path, optimize=True)


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "img"
    out.mkdir(parents=True, exist_ok=True)
    chromium = next(p for p in ("/usr/bin/chromium", "/usr/bin/chromium-browser") if Path(p).exists())
    with tempfile.TemporaryDirectory() as tmp:
        shots = []
        for prefix, fill in (("first-minute", first_minute), ("first-hour", first_hour)):
            home = Path(tmp) / prefix
            shots += shoot(home, fill(home), prefix, out, chromium)
    for p in shots:
        optimise(p)
        print(f"{p.relative_to(ROOT) if p.is_relative_to(ROOT) else p}  {p.stat().st_size // 1024} KiB")


if __name__ == "__main__":
    main()
