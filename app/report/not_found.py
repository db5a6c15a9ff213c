"""The answer to a ``/report`` URL the run cannot give: a small HTML page (everything from the URL
escaped) saying why, with close matches, instead of a bare line of text."""

from __future__ import annotations

from html import escape
from urllib.parse import quote, urlencode

from pfscope.app.components import suggestions
from pfscope.app.data import RunData


def report_error_page(data: RunData, fid: str | None, at: str | None, reason: str) -> tuple[int, str]:
    """(status, HTML): 404 with the closest FIDs and paths for an unknown folder, 400 otherwise
    (a bad ``at``) with links to the folder's report as of the run and its page."""
    unknown = fid is not None and data.folder(fid) is None
    links: list[tuple[str, str]] = []
    if unknown:
        folders = data.folders()
        choices = [
            (str(r.fid), f"{r.fid} {r.path or ''}".strip(), str(r.fid))
            for r in folders.itertuples(index=False)
        ]
        choices += [
            (str(r.path), f"{r.fid} {r.path}", str(r.fid))
            for r in folders.itertuples(index=False)
            if isinstance(r.path, str)
        ]
        for label, match in suggestions(fid or "", choices):
            links.append((f"report of {label}", "/report?" + urlencode({"fid": match})))
    elif fid is not None:
        links.append((f"report of {fid} as of the run", "/report?" + urlencode({"fid": fid})))
        links.append((f"folder {fid} (pick a time with the slider)", "/folder/" + quote(fid, safe="")))
    links.append(("the organisation report", "/report"))
    status = 404 if unknown else 400
    title = "Report: folder not found" if unknown else "Report: bad parameter"
    items = "".join(
        f'<li><a href="{escape(href, quote=True)}">{escape(label)}</a></li>' for label, href in links
    )
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>pfscope · {escape(title)}</title>
<link rel="icon" type="image/svg+xml" href="/assets/favicon.svg">
<style>body{{font-family:system-ui,sans-serif;max-width:48rem;margin:2rem auto;padding:0 1rem;line-height:1.5}}
@media (prefers-color-scheme:dark){{body{{background:#111;color:#eee}}a{{color:#8cf}}}}</style></head>
<body><main class="pf-not-found">
<h1>{escape(title)}</h1>
<p id="pf-report-reason">{escape(reason)}</p>
<h2>{"Did you mean" if unknown and len(links) > 1 else "Try"}</h2>
<ul>{items}</ul>
<p><a href="/">Back to the dashboard</a></p>
</main></body></html>
"""
    return status, page
