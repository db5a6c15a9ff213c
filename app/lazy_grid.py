"""AG Grid's JavaScript only on pages that draw a grid.

Dash puts every imported component library's bundle in every page (there is no per-page
loading in Dash 4: its ``dynamic_loading`` option was removed). dash-ag-grid's main bundle is
1.3 MB (0.3 MB compressed) that the overview, the folder pages and most others never run.
:func:`defer_ag_grid` marks that bundle ``dynamic`` (still served, no longer in the page) and
names its address in a ``<meta>`` tag; ``assets/pfscope-grid.js`` stands in for the library: its
``AgGrid`` loads the bundle the first time a grid is drawn, then draws the real grid (the
library's own chunks, e.g. the community modules, load from there as before).
"""

from __future__ import annotations

import dash
import dash_ag_grid

BUNDLE = "dash_ag_grid.min.js"
META = "pfscope-grid-src"


def defer_ag_grid(app: dash.Dash) -> str:
    """Take the grid's bundle out of every page of ``app``; returns its address (for the meta tag)."""
    dash_ag_grid._js_dist = [
        {**r, "dynamic": True} if r.get("relative_package_path") == BUNDLE else r
        for r in dash_ag_grid._js_dist
    ]
    # the fingerprinted address Dash itself would write (version and file time: cacheable for a year)
    (src,) = app._collect_and_register_resources(
        [{"relative_package_path": BUNDLE, "namespace": "dash_ag_grid"}]
    )
    app.config.meta_tags.append({"name": META, "content": src})
    return str(src)
