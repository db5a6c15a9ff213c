"""A large subtree of plain HTML components drawn as one Dash component.

Dash's renderer gives every component of a callback's output its own wrapper subscribed to the
store, and (Dash 4.2 and later) mounts a returned subtree afresh: replacing the hierarchy's
matrix (about 3,000 components as of the run) took 25 s in the browser while the server spent
under one. A subtree the page only ever replaces whole (never a callback's input or output
inside it) is therefore serialised here to escaped markup and handed to the browser as one
``dcc.Markdown`` with HTML allowed: the same elements, classes and attributes, one component.

Only ``dash.html`` components and ``dcc.Link`` are accepted; a link becomes ``<a data-pf-link>``,
which ``assets/pfscope-nav.js`` follows inside the page as ``dcc.Link`` does. Every text and
attribute value is escaped, so data (a folder path such as ``<script>``) stays text.
"""

from __future__ import annotations

import html as _html
import re
from typing import Any

from dash import dcc
from dash.development.base_component import Component

#: elements with no closing tag
VOID = frozenset({"area", "br", "col", "hr", "img", "wbr"})

#: Dash prop names whose HTML attribute is spelled otherwise
ATTRIBUTE = {"className": "class", "htmlFor": "for"}

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_:.-]*$")


def _css(style: dict[str, Any]) -> str:
    """``{"marginLeft": "2px"}`` -> ``margin-left: 2px``."""
    return "; ".join(
        f"{re.sub('([A-Z])', lambda m: '-' + m.group(1).lower(), k)}: {v}" for k, v in style.items()
    )


def to_html(node: Any) -> str:
    """Markup for a tree of ``dash.html`` components, strings and numbers (lists allowed)."""
    if node is None or node is False:
        return ""
    if isinstance(node, (list, tuple)):
        return "".join(to_html(n) for n in node)
    if isinstance(node, Component):
        props = node.to_plotly_json()["props"]
        if node._namespace == "dash_core_components" and node._type == "Link":
            tag, props = "a", {**props, "data-pf-link": "true"}
        elif node._namespace == "dash_html_components":
            tag = node._type.lower()
        else:
            raise TypeError(
                f"only dash.html components and dcc.Link can be frozen, not {node._namespace}.{node._type}"
            )
        attrs = []
        for key, value in sorted(props.items()):
            if key == "children" or value is None or value is False:
                continue
            name = ATTRIBUTE.get(key, key)
            if not _NAME.match(name):
                raise ValueError(f"not an attribute name: {name!r}")
            if key == "style":
                value = _css(value)
            text = _html.escape(str(value), quote=True).replace("\r", "&#13;").replace("\n", "&#10;")
            attrs.append(name if value is True else f'{name}="{text}"')
        head = "<" + " ".join([tag, *attrs]) + ">"
        if tag in VOID:  # written self-closed: the Markdown component's HTML parser drops a bare <wbr>
            return head[:-1] + "/>"
        return head + to_html(props.get("children")) + f"</{tag}>"
    # a newline in data as a character reference: a blank line would end Markdown's raw HTML block
    return _html.escape(str(node), quote=False).replace("\r", "&#13;").replace("\n", "&#10;")


def frozen(tree: Any, **props: Any) -> dcc.Markdown:
    """``tree`` (a component or a list) as one component; ``props`` go to the wrapper (id,
    className). The markup is one line inside a ``<div>``, so Markdown reads it as one raw HTML
    block and changes nothing in it."""
    return dcc.Markdown(f"<div>{to_html(tree)}</div>", dangerously_allow_html=True, **props)
