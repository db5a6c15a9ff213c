"""A frozen subtree is the same elements as markup, with every text and attribute escaped."""

from __future__ import annotations

import pytest
from dash import dcc, html

from pfscope.app.frozen import frozen, to_html


def test_elements_attributes_and_text_come_out_as_markup() -> None:
    tree = html.Td(
        [html.Span("PFS1:1-3,", className="pf-cn-range"), html.Wbr(), "5"],
        className="pf-cell",
        title="a title",
        style={"marginLeft": "2px"},
        **{"data-observer": "PFS1"},
    )
    assert to_html(tree) == (
        '<td class="pf-cell" data-observer="PFS1" style="margin-left: 2px" title="a title">'
        '<span class="pf-cn-range">PFS1:1-3,</span><wbr/>5</td>'
    )


def test_data_stays_text_in_children_and_attributes() -> None:
    hostile = '<script>alert("x")</script>'
    out = to_html(html.Div(hostile, title=hostile, **{"data-cnset": '" onmouseover="x'}))
    assert "<script>" not in out
    assert out == (
        '<div data-cnset="&quot; onmouseover=&quot;x" title="&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;">'
        '&lt;script&gt;alert("x")&lt;/script&gt;</div>'
    )


def test_a_newline_in_data_cannot_end_the_html_block() -> None:
    assert (
        frozen(html.P("a\n\nb", title="c\n\nd")).children
        == '<div><p title="c&#10;&#10;d">a&#10;&#10;b</p></div>'
    )


def test_a_link_is_an_anchor_the_page_follows_without_a_reload() -> None:
    assert (
        to_html(dcc.Link("PFS1", href="/store/PFS1")) == '<a data-pf-link="true" href="/store/PFS1">PFS1</a>'
    )


def test_components_with_state_cannot_be_frozen() -> None:
    with pytest.raises(TypeError, match="Graph"):
        to_html(html.Div(dcc.Graph(id="g")))


def test_frozen_is_one_markdown_component_holding_one_html_block() -> None:
    md = frozen([html.Table(html.Tr(html.Td("1"))), html.P("note")], id="x")
    assert isinstance(md, dcc.Markdown) and md.dangerously_allow_html and md.id == "x"
    assert md.children == "<div><table><tr><td>1</td></tr></table><p>note</p></div>"
    assert "\n" not in md.children  # a blank line would end the raw HTML block
