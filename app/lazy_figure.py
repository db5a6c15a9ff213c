"""Charts below the fold drawn when they are about to be seen, not before the first screen.

On the overview of 40 stores, plotly.js drew its three charts (lag heatmap, trend, health bars)
right after the first screen, in one task of 1-1.4 s: the page did not answer until the last was
drawn, and all three are below the fold. :func:`lazy_graph` sends the figure with the page, in a
``dcc.Store``, and mounts its ``dcc.Graph`` with an empty placeholder of the same height (nothing
moves when it is drawn). ``assets/pfscope-lazy.js`` gives a chart its turn when it comes within
half a screen of the viewport: it sets the chart's turn store and a clientside callback hands
the figure to the graph; several due at once are drawn one at a time, the nearest first, each in
a task of its own. A drawn chart's ``div[data-lazy]`` has ``data-drawn`` (tests and benchmarks
scroll to a chart and wait for it).
"""

from __future__ import annotations

from typing import Any

import dash
from dash import MATCH, Input, Output, State, dcc, html

#: the id types of a lazy chart's parts (pattern-matching ids: one callback serves them all)
GRAPH, DATA, TURN = "pf-lazy-graph", "pf-lazy-data", "pf-lazy-turn"
#: the placeholder figure's ``layout.meta``: a chart still showing it is not drawn yet
PENDING = "pf-lazy-pending"


def graph_id(name: str) -> dict[str, str]:
    """The ``dcc.Graph``'s id for a lazy chart ``name`` (its callbacks' Input, e.g. clickData)."""
    return {"type": GRAPH, "graph": name}


def placeholder(fig: dict[str, Any]) -> dict[str, Any]:
    """An empty figure of ``fig``'s height and background: cheap to draw, nothing moves later."""
    layout = fig.get("layout") or {}
    keep = {k: layout[k] for k in ("height", "paper_bgcolor", "plot_bgcolor", "margin") if k in layout}
    return {
        "data": [],
        "layout": {**keep, "meta": PENDING, "xaxis": {"visible": False}, "yaxis": {"visible": False}},
    }


def lazy_graph(fig: dict[str, Any], name: str, class_name: str = "", **props: Any) -> html.Div:
    """A chart drawn when it is about to be seen: a ``div#name[data-lazy]`` (of class
    ``class_name``) holding the figure (a store) and its graph (``graph_id(name)``), which reads
    ``#name .main-svg`` once drawn. ``props`` go to the ``dcc.Graph`` (config, style...)."""
    # a data-* attribute (not a Python name); Any: mypy checks a spread dict against every keyword
    attrs: dict[str, Any] = {"data-lazy": name}
    return html.Div(
        id=name,
        className=f"pf-lazy {class_name}".strip(),
        **attrs,
        children=[
            dcc.Store(id={"type": DATA, "graph": name}, data=fig),
            dcc.Store(id={"type": TURN, "graph": name}),
            dcc.Graph(id=graph_id(name), figure=placeholder(fig), **props),
        ],
    )


# a chart in the page: pfscope-lazy.js queues it (Dash knows the chart's parts by now)
dash.clientside_callback(
    """function (figure) {
        var dc = window.dash_clientside;
        if (figure && window.pfscopeLazy) { window.pfscopeLazy.queue(dc.callback_context.outputs_list.id.graph); }
        return dc.no_update;
    }""",
    Output({"type": TURN, "graph": MATCH}, "data"),
    Input({"type": DATA, "graph": MATCH}, "data"),
)

# its turn (pfscope-lazy.js sets its TURN store): the figure from the page's store to its graph
dash.clientside_callback(
    """function (turn, figure) {
        return turn && figure ? figure : window.dash_clientside.no_update;
    }""",
    Output({"type": GRAPH, "graph": MATCH}, "figure"),
    Input({"type": TURN, "graph": MATCH}, "data"),
    State({"type": DATA, "graph": MATCH}, "data"),
    prevent_initial_call=True,
)
