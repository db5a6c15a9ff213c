"""The dashboard's charts draw with plotly.js's cartesian bundle, not the full one.

Every chart pfscope draws is a bar, scatter or heatmap trace on cartesian axes, all in plotly.js's
official cartesian bundle (npm ``plotly.js-cartesian-dist-min``, vendored in ``app/vendor/`` with
its MIT licence): 1.5 MB instead of the full bundle's 4.8 MB for the browser to fetch, parse and
run on each page with a chart (measured in Chromium on the demo: half the script time, 0.35-0.7 s
less to a drawn page). Dash's graphs load plotly.js from one fixed address
(``PLOTLY_PATH``); this answers that address with the cartesian bundle, only when it is the same
plotly.js version as the plotly package that builds the figures (otherwise the full bundle is
served as before). Standalone reports still embed the full bundle (``pfscope report``).
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from flask import Flask, Response, request

VENDORED = Path(__file__).resolve().parent / "vendor" / "plotly-cartesian.min.js"
#: where dash-renderer points dcc.Graph for plotly.js when serving locally
PLOTLY_PATH = "_dash-component-suites/plotly/package_data/plotly.min.js"


def bundle_version(path: Path = VENDORED) -> str | None:
    """The plotly.js version in the bundle's licence header (``plotly.js (cartesian - minified) v4.1.1``)."""
    try:
        head = path.read_bytes()[:400].decode("utf-8", "replace")
    except OSError:
        return None
    m = re.search(r"plotly\.js \(cartesian[^)]*\) v(\d+\.\d+\.\d+)", head)
    return m.group(1) if m else None


def serve_cartesian_plotly(server: Flask, prefix: str = "/") -> bool:
    """Answer Dash's plotly.js address with the cartesian bundle; False (nothing changed) when the
    vendored bundle is missing or is not the plotly package's plotly.js version. Register it after
    any authentication hook: it answers before Dash does, not before the credentials are checked."""
    from plotly.offline import get_plotlyjs_version

    if bundle_version() != get_plotlyjs_version():
        return False
    body = VENDORED.read_bytes()
    etag = hashlib.sha256(body).hexdigest()[:32]
    path = prefix + PLOTLY_PATH

    @server.before_request
    def _cartesian_plotly() -> Response | None:
        if request.path != path or request.method not in ("GET", "HEAD"):
            return None
        response = Response(body, mimetype="application/javascript")
        response.headers["X-Plotly-Bundle"] = "cartesian"
        response.set_etag(etag)  # revalidated like Dash's own unfingerprinted bundles
        response.make_conditional(request)  # in place: a 304 when the browser's copy is current
        return response

    return True
