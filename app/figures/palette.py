"""The figures' colours: Okabe-Ito (colour-blind safe) per health, cell state and series; the lag scales."""

from __future__ import annotations

from typing import Any

HEALTH_ORDER: tuple[str, ...] = ("in_sync", "backfilling", "overdue", "delete_pending", "deleted")
HEALTH_COLOURS: dict[str, str] = {
    "in_sync": "#009e73",
    "backfilling": "#56b4e9",
    "overdue": "#e69f00",
    "delete_pending": "#cc79a7",
    "deleted": "#999999",
}

#: a down store's replicas on the overview's bars: out of reach, not their last known health; a
#: dark grey (distinct from "deleted") crossed with white, and labelled "store down" in the legend
STORE_DOWN_COLOUR = "#4d4d4d"
STORE_DOWN_PATTERN = "x"


CELL_COLOURS: dict[str, str] = {
    "current": "#009e73",
    "not_told": "#e69f00",
    "told_later": "#009e73",  # harmless (nothing missing): the dashboard's green, as current
    "lacks": "#d55e00",
    "owned": "#0072b2",
    "unknown": "#999999",
}


BLUE, ORANGE, SKY, GREEN, VERMILLION, PURPLE, GREY = (
    "#0072b2",
    "#e69f00",
    "#56b4e9",
    "#009e73",
    "#d55e00",
    "#cc79a7",
    "#999999",
)
#: cividis is readable with every common colour vision deficiency
LAG_SCALE = "Cividis"
#: the overview heatmap's absolute scale: this many CNs behind or more is the darkest colour
LAG_ALARM = 1000
#: pale to vermillion, monotonic in lightness (readable with colour vision deficiencies): a
#: small lag stays pale whatever the largest lag of the run is
LAG_ABSOLUTE_SCALE: list[list[Any]] = [
    [0.0, "#eef3f7"],
    [0.02, "#fbeed0"],
    [0.1, "#f5c96b"],
    [0.4, "#e69f00"],
    [1.0, "#b34700"],
]


#: Okabe-Ito's yellow (#f0e442) darkened to olive: 4:1 or more on white and on the dark page
#: (#0d1117). It stands in for Okabe-Ito's black, which vanished on the dark page; every trend
#: colour reads 3:1 or more on both backgrounds, as the charts take the page's colour (base_layout)
YELLOW = "#867d0b"

#: the per-store heatmap's open entries: pale to dark blue, monotonic in lightness (readable with
#: colour vision deficiencies, and apart from the vermillion of overdue and outages)
OPEN_SCALE: list[list[Any]] = [[0.0, "#deebf7"], [0.3, "#6baed6"], [0.7, "#2171b5"], [1.0, "#08306b"]]
