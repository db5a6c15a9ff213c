"""The report's stylesheet, embedded in each file (a report has no companion files).

Screen: a readable single column with the same colour-blind-safe health palette as the
dashboard. Print: black on white, no toolbars, tables not cut mid-row, charts sized to the page.
"""

from __future__ import annotations

from pfscope.app.report.matrix import matrix_css

CSS = (
    """
/* the health badges: white text on the dashboard's health hues (Okabe-Ito), darkened to 5.2:1
   or more (the dashboard's text colours for them, assets/pfscope.css) */
:root { --fg: #1b1f24; --muted: #57606a; --line: #d0d7de; --bg: #ffffff; --band: #f6f8fa;
  --link: #00649b; --warn: #906300;
  --in_sync: #007b5a; --backfilling: #1672a7; --overdue: #906300; --delete_pending: #b14380;
  --deleted: #6c6c6c;
  /* severity tiers (verdict and causes): borders in the dashboard's hues, the tier's word in
     their darkened text colours (4.9:1 or more) */
  --critical: #d55e00; --warning: #e69f00; --info: #56b4e9;
  --critical-text: #b24e00; --warning-text: #906300; --info-text: #1672a7; }
/* dark preference: the page, its text and its charts; every text 4.5:1 or more on its background */
@media (prefers-color-scheme: dark) {
  :root { color-scheme: dark; --fg: #e6edf3; --muted: #9aa4af; --line: #30363d; --bg: #0d1117;
    --band: #161b22; --link: #56b4e9; --warn: #e69f00;
    --critical-text: #f07a35; --warning-text: #e69f00; --info-text: #56b4e9; }
  .js-plotly-plot .main-svg { background: transparent !important; }
  .js-plotly-plot .bg { fill: transparent !important; }
  .js-plotly-plot g[class$="tick"] > text, .js-plotly-plot g[class^="g-"][class$="title"] text,
  .js-plotly-plot .legendtext, .js-plotly-plot .gtitle, .js-plotly-plot .colorbar text,
  .js-plotly-plot .cbtitle text, .js-plotly-plot .annotation-text { fill: #e6edf3 !important; }
  .js-plotly-plot .gridlayer path, .js-plotly-plot .zerolinelayer path { stroke: #30363d !important; }
  .js-plotly-plot .modebar, .js-plotly-plot .modebar-group { background-color: transparent !important; }
  .js-plotly-plot .modebar-btn .icon path { fill: #9aa4af !important; }
  .js-plotly-plot .modebar-btn:hover .icon path { fill: #e6edf3 !important; }
}
a { color: var(--link); }
* { box-sizing: border-box; }
html { color: var(--fg); background: var(--bg);
  font: 14px/1.45 "Liberation Sans", "Segoe UI", Arial, Helvetica, sans-serif; }
body { margin: 0 auto; max-width: 1200px; padding: 16px 24px 48px; }
header.report { border-bottom: 2px solid var(--fg); margin-bottom: 12px; }
h1 { font-size: 22px; margin: 4px 0 6px; overflow-wrap: anywhere; }
h2 { font-size: 17px; margin: 26px 0 8px; border-bottom: 1px solid var(--line); padding-bottom: 3px; }
h3 { font-size: 15px; margin: 16px 0 6px; overflow-wrap: anywhere; }
p, dl { margin: 6px 0; }
.muted, .note { color: var(--muted); }
.note { font-size: 12px; }
dl.facts { display: grid; grid-template-columns: max-content auto; gap: 2px 16px; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; font-variant-numeric: tabular-nums; }
table.data { border-collapse: collapse; margin: 6px 0 10px; font-size: 13px; }
table.data caption { text-align: left; color: var(--muted); font-size: 12px; padding-bottom: 2px; }
table.data th, table.data td { border: 1px solid var(--line); padding: 3px 7px; vertical-align: top;
  text-align: left; }
table.data th { background: var(--band); font-weight: 600; }
table.data td.num { text-align: right; font-variant-numeric: tabular-nums; }
table.data td { overflow-wrap: break-word; }
.cn { font-family: "Liberation Mono", Consolas, monospace; font-size: 12px; }
.health { display: inline-block; padding: 0 6px; border-radius: 3px; color: #fff; font-size: 12px; }
.health.in_sync { background: var(--in_sync); }
.health.backfilling { background: var(--backfilling); }
.health.overdue { background: var(--overdue); }
.health.delete_pending { background: var(--delete_pending); }
.health.deleted { background: var(--deleted); }
.chosen { font-weight: 600; }
ul.plain { margin: 0; padding: 0; list-style: none; }
ul.plain li { margin: 0; white-space: nowrap; }
td.nowrap { white-space: nowrap; }
.chart { width: 100%; min-height: 120px; }
.left-out { color: var(--muted); font-style: italic; font-size: 12px; }
p.count { font-weight: 600; }
nav.toc { font-size: 13px; }
nav.toc a { margin-right: 12px; }
footer.report { margin-top: 32px; border-top: 1px solid var(--line); color: var(--muted); font-size: 12px; }
noscript p { color: var(--warn); }
ul.verdict, ul.causes { list-style: none; padding-left: 0; }
ul.verdict > li, ul.causes > li { border-left: 4px solid var(--line); padding: 2px 10px; margin: 4px 0;
  overflow-wrap: anywhere; }
li.tier-critical { border-left-color: var(--critical) !important; }
li.tier-warning { border-left-color: var(--warning) !important; }
li.tier-info { border-left-color: var(--info) !important; }
.tier { font-size: 11px; font-weight: 600; text-transform: uppercase; letter-spacing: 0.03em; }
li.tier-critical .tier { color: var(--critical-text); }
li.tier-warning .tier { color: var(--warning-text); }
li.tier-info .tier { color: var(--info-text); }

"""
    + matrix_css()
    + """
@media print {
  @page { size: A4 landscape; margin: 12mm; }
  html { font-size: 10pt; background: #fff; color: #000; }
  body { max-width: none; padding: 0; }
  nav.toc, .modebar-container, .modebar { display: none !important; }
  h2 { break-after: avoid; page-break-after: avoid; }
  h3 { break-after: avoid; page-break-after: avoid; }
  section { break-inside: auto; }
  table.data { font-size: 8.5pt; width: 100%; }
  table.data tr, .chart, figure { break-inside: avoid; page-break-inside: avoid; }
  table.data thead { display: table-header-group; }
  .health { color: #000; border: 1px solid #000; background: none !important; }
  .matrix-wrap { overflow: visible; }
  table.matrix { font-size: 8.5pt; }
  table.matrix tr { break-inside: avoid; page-break-inside: avoid; }
  li.tier-critical .tier, li.tier-warning .tier, li.tier-info .tier { color: #000; }
  a { color: #000; text-decoration: none; }
}
"""
)
