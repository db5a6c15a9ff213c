"""The self-contained document: one HTML file with its stylesheet and plotly.js inside.

A report is mailed and archived, so it must open anywhere, offline: plotly.js is embedded once
from the installed plotly package (never a CDN link), and a Content-Security-Policy forbids the
page any network request at all. Figures travel as JSON in ``<script type="application/json">``
blocks (plotly's JSON encoder escapes ``<``, ``>`` and ``/``, so data cannot close the script)
and are drawn by one small boot script. Ids are numbered in document order, so the same content
gives the same bytes.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field

import plotly.graph_objects as go

from pfscope.app.report.html import Html, esc, tag
from pfscope.app.report.style import CSS

#: no fetch, no frame, no form, no external font or image: the file is all there is. Scripts run
#: only when their hash is listed (plotly.js and the boot script): even text that escaped escaping
#: could not run. plotly.js sets inline styles, hence style-src 'unsafe-inline'.
CSP = (
    "default-src 'none'; script-src {scripts}; style-src 'unsafe-inline'; "
    "img-src data: blob:; font-src data:; connect-src 'none'; form-action 'none'; base-uri 'none'"
)


def script_hash(source: str) -> str:
    """A CSP source expression allowing exactly this inline script."""
    return (
        "'sha256-" + base64.b64encode(hashlib.sha256(source.encode("utf-8")).digest()).decode("ascii") + "'"
    )


@functools.cache
def _plotly_hash() -> str:
    return script_hash(plotly_js())


#: interactive (zoom, pan, hover) but nothing that talks to a server
PLOT_CONFIG = {
    "displaylogo": False,
    "responsive": True,
    "showLink": False,
    "showSendToCloud": False,
    "showEditInChartStudio": False,
}

#: draws every figure block; on print, charts are redrawn at page width and back afterwards
BOOT_JS = """
(function () {
  "use strict";
  var config = %(config)s;
  var blocks = document.querySelectorAll('script[type="application/json"][data-figure]');
  var divs = [];
  for (var i = 0; i < blocks.length; i++) {
    var block = blocks[i];
    var div = document.getElementById(block.getAttribute("data-figure"));
    var fig = JSON.parse(block.textContent);
    Plotly.newPlot(div, fig.data || [], fig.layout || {}, config);
    divs.push(div);
  }
  function each(fn) { for (var j = 0; j < divs.length; j++) { fn(divs[j]); } }
  window.addEventListener("beforeprint", function () {
    each(function (d) { Plotly.relayout(d, {width: 1000}); });
  });
  window.addEventListener("afterprint", function () {
    each(function (d) { Plotly.relayout(d, {width: null, autosize: true}); });
  });
})();
"""


@functools.cache
def plotly_js() -> str:
    """The installed plotly package's plotly.js bundle (read once per process)."""
    from plotly.offline import get_plotlyjs

    js = get_plotlyjs()
    if "</script" in js.lower():  # would end the embedding script early
        raise RuntimeError("the installed plotly.js bundle contains '</script'")
    return js


def figure_json(fig: go.Figure) -> str:
    """Figure JSON safe inside a script element (``<``, ``>``, ``/``, U+2028/9 escaped)."""
    text = fig.to_json(validate=False, engine="json")
    for raw, safe in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("/", "\\u002f"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(raw, safe)
    return text


@dataclass
class Document:
    """A report under construction: its title, its sections, and figures numbered in order."""

    title: str
    body: list[Html] = field(default_factory=list)
    figures: int = 0

    def figure(self, fig: go.Figure, label: str) -> Html:
        """A chart: its div, its JSON, and an accessible label (the figure's data stays text)."""
        self.figures += 1
        div_id = f"figure-{self.figures}"
        div = tag("div", id=div_id, class_="chart", role="img", aria_label=label)
        data = Html(f'<script type="application/json" data-figure="{div_id}">{figure_json(fig)}</script>')
        return tag("figure", div, data)

    def render(self, header: Html, toc: Sequence[tuple[str, str]], footer: Html) -> str:
        scripts = ""
        allowed = "'none'"
        if self.figures:
            boot = BOOT_JS % {"config": json.dumps(PLOT_CONFIG, sort_keys=True)}
            scripts = f"<script>{plotly_js()}</script>\n<script>{boot}</script>"
            allowed = f"{_plotly_hash()} {script_hash(boot)}"
        nav = (
            tag("nav", *(tag("a", text, href=f"#{anchor}") for anchor, text in toc), class_="toc")
            if toc
            else ""
        )
        head = Html(
            '<meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{esc(CSP.format(scripts=allowed))}">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            '<meta name="generator" content="pfscope report">'
            f"<title>{esc(self.title)}</title>"
            f"<style>{CSS}</style>"
        )
        noscript = tag(
            "noscript", tag("p", "Charts need JavaScript; every figure's numbers are also in the tables.")
        )
        return (
            "<!DOCTYPE html>\n"
            f'<html lang="en">\n<head>{head}</head>\n<body>\n{header}\n{nav}\n{noscript}\n'
            + "\n".join(self.body)
            + f"\n{footer}\n{scripts}\n</body>\n</html>\n"
        )
