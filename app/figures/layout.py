"""What every figure shares: the mark limit, the common plotly layout and the empty figure."""

from __future__ import annotations

import plotly.graph_objects as go

#: a figure's paper and plot area: none (the page's colour shows through)
TRANSPARENT = "rgba(0,0,0,0)"
#: the mode-bar's icons on the light page (the page's muted and text colours: 6:1 and 16:1 on white)
MODEBAR, MODEBAR_ACTIVE = "#5b6470", "#1b1f24"

#: the most marks (points, bars, cells) one figure sends to a browser
MAX_MARKS = 10_000


def base_layout(fig: go.Figure, title: str | None = None, height: int | None = None) -> go.Figure:
    fig.update_layout(
        title=title,
        template="plotly_white",
        height=height,
        margin={"l": 10, "r": 10, "t": 40 if title else 10, "b": 10},
        font={"family": "Liberation Sans, Arial, sans-serif", "size": 13},
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.02, "x": 0},
        # no paper of its own: a chart is drawn on the page's colour, light or dark (the dark
        # preference recolours its text, grid and mode-bar: assets/pfscope.css, app/report/style.py)
        paper_bgcolor=TRANSPARENT,
        plot_bgcolor=TRANSPARENT,
        modebar={"bgcolor": TRANSPARENT, "color": MODEBAR, "activecolor": MODEBAR_ACTIVE},
    )
    return fig


def empty_figure(message: str) -> go.Figure:
    """A figure that says why it is empty instead of drawing blank axes."""
    fig = go.Figure()
    fig.add_annotation(text=message, showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper")
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return base_layout(fig, height=160)
