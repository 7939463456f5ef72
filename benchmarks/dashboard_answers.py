"""The dashboard's /api answers of one tree on a store at a fixed clock, for a before/after comparison (issue 40):
a `WebContext` of the tree on PYTHONPATH, its probe cache's clock pinned and warmed, every request below through a
TestClient; each body is written to OUT/<path>.out and its sha256 printed. Run it with each tree on the same store
state (no probe writing between the two) and compare the digests or the files.

    PYTHONPATH=<tree>/src python benchmarks/dashboard_answers.py HOME OUT CLOCK_NS [PATH...]

PATH...: these requests instead of PATHS (`/status /api/status`: the Status page's HTML and JSON alone).
"""

from __future__ import annotations

import hashlib
import re
import sys
from pathlib import Path

from starlette.testclient import TestClient

from ioweather.config import Settings
from ioweather.web.app import create_app
from ioweather.web.context import WebContext

PATHS = ["/api/status", "/api/history", "/history", "/api/history/changes", "/api/timeline", "/api/workload",
         "/workload", "/api/jobs", "/jobs", "/jobs?sort=start&order=asc&offset=300", "/api/servers", "/api/factors"]


def main() -> None:
    home, out, clock = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
    out.mkdir(parents=True, exist_ok=True)
    ctx = WebContext(Settings.resolve(home))
    ctx.cache.clock = lambda: clock
    ctx.cache.warm()
    client = TestClient(create_app(ctx.settings, ctx=ctx, warm=False), base_url="http://127.0.0.1:8000")
    for path in sys.argv[4:] or PATHS:
        r = client.get(path)
        body = re.sub(rb'nonce="[^"]*"', b"", r.content) if not path.startswith("/api") else r.content
        (out / (re.sub(r"[/?&=]", "_", path.strip("/")) + ".out")).write_bytes(body)
        print(path, r.status_code, len(body), hashlib.sha256(body).hexdigest()[:16], flush=True)


if __name__ == "__main__":
    main()
