"""The page for a person at `/`: each chain's status and data age, the trending pairs, and a
chosen pair's candles and trades updating live from its stream. One HTML file and the charting
library from the project's npm lockfile: no build step."""

import os
from pathlib import Path

from edge.web.http import Response

PAGE = Path(__file__).with_name("page.html")
# Where `npm ci` puts the charting library (CHAINTAPE_CHARTS_JS names another copy).
CHARTS = (Path(__file__).resolve().parents[1] / "node_modules" / "lightweight-charts" / "dist"
          / "lightweight-charts.standalone.production.js")
CACHED = [("cache-control", "public, max-age=3600")]


def page_documents() -> dict[str, Response]:
    """`/` and the script it loads; without the library installed, the page alone (its chart
    then says the library is missing in the browser's console)."""
    made = {"/": Response(PAGE.read_bytes(), 200, "text/html; charset=utf-8",
                          [("cache-control", "no-cache")])}
    charts = Path(os.environ.get("CHAINTAPE_CHARTS_JS") or CHARTS)
    if charts.is_file():
        made["/assets/lightweight-charts.js"] = Response(
            charts.read_bytes(), 200, "text/javascript; charset=utf-8", list(CACHED))
    return made
