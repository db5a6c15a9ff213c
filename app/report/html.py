"""A small template layer: every text is escaped unless it is already `Html`.

Reports are mailed and opened anywhere, so a folder path such as ``<script>`` must stay text.
Fragments are built by functions that escape what they are given; only this module and
trusted constants make `Html` from plain strings.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["Html", "esc", "join", "plotly_text", "table", "tag"]


class Html(str):
    """Markup that is safe to emit as is (built here, from escaped parts)."""

    __slots__ = ()


def esc(value: Any) -> Html:
    """Text for HTML: `Html` passes, None is empty, anything else is escaped (quotes too)."""
    if isinstance(value, Html):
        return value
    if value is None:
        return Html("")
    return Html(html.escape(str(value), quote=True))


def join(parts: Iterable[Any], sep: str = "") -> Html:
    return Html(sep.join(esc(p) for p in parts))


def tag(name: str, *children: Any, attrs: Mapping[str, Any] | None = None, **kw: Any) -> Html:
    """``<name attr="...">children</name>``; attribute values are escaped, False/None dropped.

    Keyword names lose a trailing underscore (``class_``) and turn ``_`` into ``-`` (``data_fid``).
    """
    all_attrs: dict[str, Any] = dict(attrs or {})
    for k, v in kw.items():
        all_attrs[k.rstrip("_").replace("_", "-")] = v
    parts = [name]
    for k, v in all_attrs.items():
        if v is None or v is False:
            continue
        parts.append(k if v is True else f'{k}="{esc(v)}"')
    return Html(f"<{' '.join(parts)}>{join(children)}</{name}>")


def table(
    headers: Iterable[Any],
    rows: Iterable[Iterable[Any]],
    *,
    class_: str = "data",
    numeric: Iterable[int] = (),
    caption: Any = None,
) -> Html:
    """A data table; every cell escaped unless `Html`. ``numeric``: column indexes aligned right."""
    num = set(numeric)
    head = tag("thead", tag("tr", *(tag("th", h, scope="col") for h in headers)))
    body_rows = []
    for row in rows:
        cells = [tag("td", v, class_="num" if i in num else None) for i, v in enumerate(row)]
        body_rows.append(tag("tr", *cells))
    cap = tag("caption", caption) if caption is not None else Html("")
    return tag("table", cap, head, tag("tbody", *body_rows), class_=class_)


def plotly_text(value: Any) -> str:
    """Text for a plotly title, label or hover text: plotly.js reads a few tags (``<b>``, ``<br>``,
    ``<a>``) and entities in them, so ``&``, ``<`` and ``>`` are escaped. Quotes are not: plotly.js
    does not decode ``&quot;`` and would show it literally (seen in Chromium)."""
    return html.escape("" if value is None else str(value), quote=False)
