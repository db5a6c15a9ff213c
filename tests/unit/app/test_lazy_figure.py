"""A chart drawn when it is about to be seen: its parts, and a placeholder that keeps its place."""

from __future__ import annotations

from dash import dcc

from pfscope.app.lazy_figure import DATA, GRAPH, PENDING, TURN, graph_id, lazy_graph, placeholder

FIG = {
    "data": [{"type": "bar", "x": [1], "y": ["A"]}],
    "layout": {"height": 420, "paper_bgcolor": "rgba(0,0,0,0)", "margin": {"l": 10}, "title": {"text": "t"}},
}


def test_the_placeholder_keeps_the_height_and_draws_nothing() -> None:
    empty = placeholder(FIG)
    assert empty["data"] == [] and empty["layout"]["meta"] == PENDING
    assert empty["layout"]["height"] == 420 and empty["layout"]["margin"] == {"l": 10}
    assert "title" not in empty["layout"]  # nothing of the chart itself before it is drawn
    assert placeholder({"data": []})["layout"]["meta"] == PENDING  # a figure without a layout


def test_a_lazy_graph_holds_its_figure_and_a_placeholder_graph_under_its_name() -> None:
    div = lazy_graph(FIG, "pf-x-fig", "pf-figure pf-clickable", config={"displaylogo": False})
    assert div.id == "pf-x-fig" and div.className == "pf-lazy pf-figure pf-clickable"
    assert getattr(div, "data-lazy") == "pf-x-fig"
    store, turn, graph = div.children
    assert store.id == {"type": DATA, "graph": "pf-x-fig"} and store.data == FIG
    assert turn.id == {"type": TURN, "graph": "pf-x-fig"}
    assert isinstance(graph, dcc.Graph) and graph.id == graph_id("pf-x-fig") == {
        "type": GRAPH,
        "graph": "pf-x-fig",
    }
    assert graph.figure == placeholder(FIG) and graph.config == {"displaylogo": False}
