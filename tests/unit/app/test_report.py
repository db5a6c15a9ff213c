"""The standalone HTML reports: what they show equals what the published Parquet holds.

The runs are the real Spark job's (``tests/published.py``: the worked example with hostile folder
paths and rejected lines, and the demo). Each report is parsed back (stdlib ``html.parser``) and
its tables and figure data are compared with the tables read straight from Parquet with
pyarrow, not through the code under test. The pure parts (escaping, the document shell, CN-set
cutting, file names) are tested on their own first.
"""

from __future__ import annotations

import base64
import html as htmllib
import json
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pyarrow.dataset as ds
import pytest

from pfscope.app.data import RunData, require_run
from pfscope.app.figures.overview import STORE_DOWN_LABEL
from pfscope.app.report import (
    Limits,
    ReportError,
    build_report,
    report_download,
    report_filename,
    write_report,
)
from pfscope.app.report.cells import cn_text
from pfscope.app.report.document import Document, figure_json, plotly_js
from pfscope.app.report.html import Html, esc, table, tag
from tests.published_runs import HOSTILE_CONFLICT_LINE, HOSTILE_PATH, ROOT, _env, published

WE_FID = "1-123"
MB = 1024 * 1024


# -- reading a report back ------------------------------------------------------------------


class _Reader(HTMLParser):
    """Sections (by id) with their tables (rows of cell texts), and the figure JSON blocks."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.sections: dict[str, list[list[list[str]]]] = {}
        self.section_text: dict[str, list[str]] = {}
        self.figures: dict[str, Any] = {}
        self.figure_section: dict[str, str | None] = {}
        self.h1: list[str] = []
        self.title: list[str] = []
        self._section: str | None = None
        self._cell: list[str] | None = None
        self._row: list[str] | None = None
        self._figure: str | None = None
        self._in: list[str] = []

    def handle_starttag(self, name: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        self._in.append(name)
        if name == "section":
            self._section = a.get("id")
            self.sections.setdefault(self._section or "", [])
            self.section_text.setdefault(self._section or "", [])
        elif name == "table" and self._section is not None:
            self.sections[self._section].append([])
        elif name == "tr" and self._section is not None:
            self._row = []
        elif name in ("td", "th") and self._row is not None:
            self._cell = []
        elif name == "script" and a.get("type") == "application/json":
            self._figure = a.get("data-figure")
            self.figures[self._figure or ""] = ""
            self.figure_section[self._figure or ""] = self._section

    def handle_endtag(self, name: str) -> None:
        if self._in:
            self._in.pop()
        if name == "section":
            self._section = None
        elif name in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append("".join(self._cell).strip())
            self._cell = None
        elif name == "tr" and self._row is not None and self._section is not None:
            self.sections[self._section][-1].append(self._row)
            self._row = None
        elif name == "script" and self._figure is not None:
            self.figures[self._figure] = json.loads(self.figures[self._figure])
            self._figure = None

    def handle_data(self, data: str) -> None:
        if self._figure is not None:
            self.figures[self._figure] += data
            return
        if self._cell is not None:
            self._cell.append(data)
        if self._section is not None:
            self.section_text[self._section].append(data)
        if self._in and self._in[-1] == "h1":
            self.h1.append(data)
        if self._in and self._in[-1] == "title":
            self.title.append(data)


def values(v: Any) -> Any:
    """A figure array as plain lists (plotly sends numpy arrays base64-encoded as ``bdata``)."""
    if isinstance(v, dict) and "bdata" in v:
        arr = np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"]))
        if "shape" in v:
            arr = arr.reshape([int(n) for n in str(v["shape"]).split(",")])
        return (
            [[None if np.isnan(x) else float(x) for x in row] for row in arr]
            if arr.ndim == 2
            else arr.tolist()
        )
    return v


def read_report(text: str) -> _Reader:
    r = _Reader()
    r.feed(text)
    r.close()
    return r


def records(rows: list[list[str]]) -> list[dict[str, str]]:
    head, *body = rows
    return [dict(zip(head, row, strict=True)) for row in body]


def matrix_grid_cells(r: _Reader) -> dict[tuple[str, str], str]:
    """The folder report's matrix table (its first table): (subject, observer) -> the cell's text."""
    head, *body = r.sections["matrix"][0]
    return {
        (row[0], observer): text for row in body for observer, text in zip(head[1:], row[1:], strict=True)
    }


def parquet(data_dir: Path, table: str, **eq: Any) -> pd.DataFrame:
    """A published table read with pyarrow directly (independent of app.data)."""
    pointer = json.loads((data_dir / "LATEST").read_text())
    dataset = ds.dataset(str(data_dir / pointer["path"] / table), format="parquet")
    expr = None
    for k, v in eq.items():
        part = ds.field(k) == v
        expr = part if expr is None else expr & part
    return dataset.to_table(filter=expr).to_pandas()


def utc(value: Any) -> str:
    """A Parquet time (naive UTC) as the report writes it."""
    if value is None or pd.isna(value):
        return ""
    ts = pd.Timestamp(value)
    ts = ts.tz_localize("UTC") if ts.tzinfo is None else ts.tz_convert("UTC")
    return ts.strftime("%Y-%m-%d %H:%M:%SZ")


# -- fixtures: the real Spark job's runs -----------------------------------------------------


@pytest.fixture(scope="module")
def we() -> Path:
    return published("worked-example")


@pytest.fixture(scope="module")
def demo() -> Path:
    return published("demo")


@pytest.fixture(scope="module")
def we_run(we: Path) -> RunData:
    return RunData(require_run(we))


@pytest.fixture(scope="module")
def demo_run(demo: Path) -> RunData:
    return RunData(require_run(demo))


@pytest.fixture(scope="module")
def we_org(we_run: RunData) -> str:
    return build_report(we_run)


@pytest.fixture(scope="module")
def we_folder(we_run: RunData) -> str:
    return build_report(we_run, fid=WE_FID)


def busiest_fid(data_dir: Path) -> str:
    """The demo folder with the most backfill request attempts (then status requests, then FID)."""
    req = parquet(data_dir, "backfill_requests")
    req = req[req["entry_id"].notna() & (req["entry_id"] != "") & (req["fid"] != "1-1")]
    attempts = req.groupby("fid")[["entry_id", "attempt"]].apply(lambda g: len(g.drop_duplicates()))
    resp = parquet(data_dir, "responders").groupby("fid")["msg"].nunique()
    score = pd.DataFrame({"attempts": attempts, "status": resp}).fillna(0)
    score = score.reset_index(names="fid").sort_values(
        ["attempts", "status", "fid"], ascending=[False, False, True]
    )
    return str(score["fid"].iloc[0])


# -- the template layer and the document shell -----------------------------------------------


def test_esc_and_tag_escape_text_and_attributes() -> None:
    bad = "<script>alert(1)</script> & \"q\" 's'"
    assert esc(bad) == "&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;q&quot; &#x27;s&#x27;"
    assert esc(Html("<b>ok</b>")) == "<b>ok</b>"  # trusted markup passes once, never re-escaped
    assert esc(None) == ""
    t = tag("a", bad, href='x" onclick="evil()', data_fid="1-1", hidden=True, title=None)
    assert t.startswith('<a href="x&quot; onclick=&quot;evil()" data-fid="1-1" hidden>')
    assert "<script>" not in t and "title" not in t
    cells = table(["<th>"], [["<td>", Html("<i>kept</i>")]])
    assert "&lt;th&gt;" in cells and "&lt;td&gt;" in cells and "<i>kept</i>" in cells


def test_figure_json_cannot_close_its_script() -> None:
    fig = go.Figure(go.Bar(x=["</script><script>alert(1)</script>"], y=[1], name="a\u2028b"))
    text = figure_json(fig)
    assert "<" not in text and ">" not in text and "\u2028" not in text
    assert json.loads(text)["data"][0]["x"] == ["</script><script>alert(1)</script>"]


def test_document_embeds_plotly_once_and_only_when_charted() -> None:
    doc = Document(title="<t>")
    plain = doc.render(Html("<header></header>"), [], Html(""))
    assert "Plotly.newPlot" not in plain and "<title>&lt;t&gt;</title>" in plain
    doc.body += [
        doc.figure(go.Figure(go.Bar(x=[1], y=[1])), "one"),
        doc.figure(go.Figure(go.Bar(x=[2], y=[2])), "two"),
    ]
    page = doc.render(Html(""), [("a", "A")], Html(""))
    assert page.count("Plotly.newPlot") == 1  # one boot script draws every figure
    assert page.count('data-figure="figure-1"') == page.count('data-figure="figure-2"') == 1
    assert page.count("* plotly.js v") == 1 and len(page) > 3 * MB  # the bundle itself, once
    outside = page.replace(plotly_js(), "")  # the bundle knows CDN URLs (geo maps) it never uses here
    assert len(outside) < len(page) - 3 * MB
    assert "http:" not in outside and "https:" not in outside and "src=" not in outside
    assert "default-src &#x27;none&#x27;" in page  # the Content-Security-Policy: the page may fetch nothing
    assert (
        "unsafe-inline&#x27;; style" not in page and page.count("&#x27;sha256-") == 2
    )  # hashed scripts only


def test_cn_text_cuts_at_a_range_boundary() -> None:
    text = ",".join(f"{i}-{i + 1}" for i in range(1, 400, 3))  # 134 ranges, about 900 characters
    s = "PFS1:" + text
    out = cn_text(s, 268, 60)
    shown = re.sub(r"<[^>]+>", "", out)
    assert shown.endswith("(268 CNs in all)")
    body = shown.split(" …")[0]
    assert len(body) <= 60 and s.startswith(body) and s[len(body)] in ",;"
    assert re.sub(r"<[^>]+>", "", cn_text("PFS1:1-5", 5, 60)) == "PFS1:1-5"
    assert "∅" in cn_text("", 0, 60)


def test_report_filename_is_safe_and_names_the_view() -> None:
    assert report_filename("20261122T1-ab") == "pfscope-20261122T1-ab.html"
    name = report_filename("r1", "1-2A45", pd.Timestamp("2026-11-02T08:15:00Z"))
    assert name == "pfscope-r1-1-2A45-at-20261102T081500Z.html"
    assert "/" not in report_filename("r1", "../../etc/<x>")


def test_write_report_is_whole_or_nothing(tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    assert write_report("<p>é</p>", out) == len("<p>é</p>".encode())
    assert out.read_text(encoding="utf-8") == "<p>é</p>"
    assert [p.name for p in tmp_path.iterdir()] == ["r.html"]
    with pytest.raises(OSError):
        write_report("x", tmp_path / "missing" / "r.html")
    assert not list((tmp_path).glob(".r.html.*"))


# -- the organisation report against the Parquet ---------------------------------------------


def test_org_report_states_the_run_and_its_accounting(we: Path, we_org: str) -> None:
    summary = parquet(we, "summary").iloc[0]
    r = read_report(we_org)
    text = " ".join(r.section_text["accounting"])
    for name in ("lines_read", "accepted", "duplicates", "rejected"):
        assert f"{name.replace('_', ' ')} {int(summary[name]):,} " in text
    assert int(summary["rejected"]) > 0  # the hostile worked example has rejected lines
    reasons = parquet(we, "rejects").groupby("reason").size()
    shown = {row["reason"]: int(row["lines"]) for row in records(r.sections["accounting"][0])}
    assert shown == {k: int(v) for k, v in reasons.items()}
    assert "holds" in text and "DOES NOT" not in text
    assert summary["run_id"] in we_org and utc(summary["as_of"]) in we_org
    # the report never states when it was generated: only the run's times
    assert utc(summary["finished_at"]) not in we_org and utc(summary["started_at"]) not in we_org


def test_org_report_stores_and_health_counts(demo: Path, demo_run: RunData) -> None:
    r = read_report(build_report(demo_run))
    stores = parquet(demo, "stores")
    replicas = parquet(demo, "replicas")
    counts = replicas.groupby(["store", "health"]).size()
    seen = set()
    for tbl in r.sections["stores"]:
        for row in records(tbl):
            s = row["store"]
            seen.add(s)
            st = stores[stores["store"] == s].iloc[0]
            assert (row["server"], row["version"], row["status"]) == (
                st["server"],
                st["version"],
                st["status"],
            )
            for h in ("in_sync", "backfilling", "overdue", "delete_pending", "deleted"):
                assert int(row[h.replace("_", " ")].replace(",", "")) == int(counts.get((s, h), 0))
            assert int(row["replicas"].replace(",", "")) == int((replicas["store"] == s).sum())
    assert seen == set(stores["store"])
    sites = [h for h in " ".join(r.section_text["stores"]).split() if h in set(stores["site"])]
    assert set(sites) == set(stores["site"])


def test_org_report_lists_every_open_entry_with_due_time_and_sources(demo: Path, demo_run: RunData) -> None:
    r = read_report(build_report(demo_run))
    entries = parquet(demo, "backfill_entries", state="open")
    assert len(entries) > 0
    rows = {row["entry"]: row for row in records(r.sections["open-entries"][0])}
    assert set(rows) == set(entries["entry_id"])
    cand = parquet(demo, "backfill_candidates")
    for e in entries.to_dict("records"):
        row = rows[e["entry_id"]]
        assert row["next due"] == utc(e["next_due_at"])
        assert row["store"] == e["observer"] and row["FID"] == e["fid"]
        assert int(row["count"].replace(",", "")) == int(e["cnset_remaining_count"])
        mine = cand[cand["entry_id"] == e["entry_id"]]
        if mine.empty:
            assert "no request yet" in row["chosen sources"] or "no candidate" in row["chosen sources"]
            continue
        last = mine[(mine["attempt"] == mine["attempt"].max()) & mine["chosen"]]
        for c in last.to_dict("records"):
            assert c["candidate"] in row["chosen sources"]
            assert (c["assigned_cnset"] or "∅")[:60] in row["chosen sources"]


def test_org_report_content_at_risk_and_worst_folders(demo: Path, demo_run: RunData) -> None:
    r = read_report(build_report(demo_run))
    replicas = parquet(demo, "replicas")
    risky = replicas[replicas["at_risk_count"] > 0]
    assert len(risky) > 0
    rows = records(r.sections["at-risk"][0])
    assert {(x["store"], x["FID"]) for x in rows} == set(zip(risky["store"], risky["fid"], strict=True))
    for x in rows:  # what is so, with the store's belief beside it, labelled
        p = risky[(risky["store"] == x["store"]) & (risky["fid"] == x["FID"])].iloc[0]
        assert int(x["content at risk (CNs)"].replace(",", "")) == int(p["at_risk_count"])
        assert x["held alone"].startswith(p["at_risk_cnset"][:60])
        assert int(x["believed unique (its store's belief)"].replace(",", "")) == int(p["unique_count"])
    assert f"{int(risky['at_risk_count'].sum()):,} CN" in " ".join(r.section_text["at-risk"])
    worst = records(r.sections["worst"][0])
    assert worst and worst[0]["content at risk (CNs)"] != "0"  # content at risk ranks first
    for x in worst:
        missing = replicas.loc[replicas["fid"] == x["FID"], "missing_count"].sum()
        assert int(x["known missing CNs"].replace(",", "")) == int(missing)


def test_org_report_lag_heatmap_holds_the_summed_lag(demo: Path, demo_run: RunData) -> None:
    r = read_report(build_report(demo_run))
    heatmaps = [v["data"][0] for v in r.figures.values() if v["data"] and v["data"][0]["type"] == "heatmap"]
    figs = [h for h in heatmaps if h.get("x") == h.get("y")]  # store x store (the other: store x time)
    assert len(figs) == 1
    hm = figs[0]
    st = parquet(demo, "state_table")
    st = st[~st["is_self"]]
    lag = st.groupby(["observer", "subject"])["lag_count"].sum()
    assert hm["x"] == hm["y"] == parquet(demo, "stores").sort_values(["site", "store"])["store"].tolist()
    for i, obs in enumerate(hm["y"]):
        for j, sub in enumerate(hm["x"]):
            z = values(hm["z"])[i][j]
            if (obs, sub) in lag.index:
                assert z == lag[(obs, sub)]
            else:
                assert z is None


# -- the folder report against the Parquet ---------------------------------------------------


def test_folder_matrix_equals_the_state_table(we: Path, we_folder: str) -> None:
    r = read_report(we_folder)
    st = parquet(we, "state_table", fid=WE_FID)
    rows = records(r.sections["matrix"][-1])
    assert len(rows) == len(st)
    by_key = {(x["observer"], x["subject"]): x for x in rows}
    for s in st.to_dict("records"):
        row = by_key[(s["observer"], s["subject"])]
        assert row["believed (observer's row)"] == (s["cnset"] or "∅")
        assert int(row["CNs"]) == int(s["cnset_count"])
        if not s["is_self"]:
            assert (row["not told yet"] == "∅") == (int(s["lag_count"]) == 0)
    # the matrix's cells hold the same CN sets (its table: columns observers, rows subjects), each
    # cell led by its state in the dashboard's words
    grid = matrix_grid_cells(r)
    assert len(grid) == len(st)
    for s in st.to_dict("records"):
        text = grid[(s["subject"], s["observer"])]
        assert (s["cnset"] or "∅") in text
        assert text.startswith(by_key[(s["observer"], s["subject"])]["state"])
    # seed 004: PFS1 believes PFS3 holds PFS1:1-11,17 (not told of 12-16)
    assert by_key[("PFS1", "PFS3")]["believed (observer's row)"] == "PFS1:1-11,17;PFS2:1-20;PFS3:1-31"


def test_folder_matrix_marks_derived_cells_as_the_state_table_does(we: Path, we_folder: str) -> None:
    ingested = published("ingested")
    st = parquet(ingested, "state_table", fid=WE_FID)
    assert st["derived"].any() and not st["derived"].all()  # regular messages: derived; status: printed
    r = read_report(build_report(RunData(require_run(ingested)), fid=WE_FID))
    rows = {(x["observer"], x["subject"]): x for x in records(r.sections["matrix"][-1])}
    assert len(rows) == len(st)
    for s in st.to_dict("records"):
        assert rows[(s["observer"], s["subject"])]["derived"] == (
            "≥ lower bound (derived from Exchange logs)" if s["derived"] else ""
        ), s
    assert "inferred from Exchange's event logs" in " ".join(r.section_text["matrix"])
    # the matrix's cells carry the mark too
    grid = matrix_grid_cells(r)
    for s in st.to_dict("records"):
        assert ("≥ lower bound (derived from Exchange logs)" in grid[(s["subject"], s["observer"])]) == bool(
            s["derived"]
        )
    # a simulated run has no derived cell and no legend entry for one
    plain = read_report(we_folder)
    assert {x["derived"] for x in records(plain.sections["matrix"][-1])} == {""}
    assert "inferred from Exchange's event logs" not in " ".join(plain.section_text["matrix"])


def test_folder_matrix_at_an_earlier_time_follows_state_history(we: Path, we_run: RunData) -> None:
    hist = parquet(we, "state_history", fid=WE_FID)
    at = "2026-11-04T20:00:00Z"
    r = read_report(build_report(we_run, fid=WE_FID, at=at))
    rows = {(x["observer"], x["subject"]): x for x in records(r.sections["matrix"][-1])}
    t = pd.Timestamp(at).tz_localize(None)
    past = hist[hist["at"] <= t].sort_values("at", kind="stable").groupby(["observer", "subject"]).tail(1)
    assert len(rows) == len(past) > 0
    for h in past.to_dict("records"):
        row = rows[(h["observer"], h["subject"])]
        assert row["believed (observer's row)"] == (h["cnset"] or "∅")
        assert int(row["CNs"]) == int(h["cnset_count"])
        assert row["last heard"] == utc(h["at"])
    heading = " ".join(r.section_text["matrix"])
    assert "at 2026-11-04 20:00:00Z" in heading
    # at that time the entry was open: PFS3 had not yet got PFS1:12-16
    assert rows[("PFS3", "PFS3")]["believed (observer's row)"] == "PFS1:1-11,17;PFS2:1-20;PFS3:1-31"


def test_folder_entries_and_candidates_equal_the_tables(demo: Path, demo_run: RunData) -> None:
    fid = busiest_fid(demo)
    r = read_report(build_report(demo_run, fid=fid))
    entries = parquet(demo, "backfill_entries", fid=fid)
    rows = {x["entry"]: x for x in records(r.sections["entries"][0])}
    assert set(rows) == set(entries["entry_id"])
    for e in entries.to_dict("records"):
        x = rows[e["entry_id"]]
        assert (x["store"], x["state"], x["locality"]) == (e["observer"], e["state"], e["locality"])
        assert x["opened"] == utc(e["opened_at"]) and x["next due"] == utc(e["next_due_at"])
        assert int(x["requests"] or 0) == int(e["requests"])
    cand = parquet(demo, "backfill_candidates", fid=fid)
    attempts = cand.groupby(["entry_id", "attempt"]).size()
    tables = r.sections["candidates"]
    assert len(tables) == min(len(attempts), Limits().attempts) > 0
    shown = 0
    heads = re.findall(r"Entry (\S+), attempt (\d+):", " ".join(r.section_text["candidates"]))
    with_candidates = [(e, int(a)) for e, a in heads if (e, int(a)) in attempts.index]
    assert len(with_candidates) == len(tables)
    for (entry_id, attempt), tbl in zip(with_candidates, tables, strict=True):
        want = cand[(cand["entry_id"] == entry_id) & (cand["attempt"] == attempt)].sort_values("rank")
        got = records(tbl)
        assert [g["candidate"] for g in got] == list(want["candidate"])
        assert [g["chosen"] == "yes" for g in got] == [bool(v) for v in want["chosen"]]
        assert [g["CNs held"] for g in got] == [f"{int(v):,}" for v in want["holds_count"]]
        for g, w in zip(got, want.to_dict("records"), strict=True):
            assert g["asked for"].startswith((w["assigned_cnset"] or "∅")[:60])
        shown += 1
    assert shown > 0


def test_folder_status_requests_and_responders(demo: Path, demo_run: RunData) -> None:
    resp = parquet(demo, "responders")
    fid = str(resp.groupby("fid")["msg"].nunique().sort_values(ascending=False).index[0])
    r = read_report(build_report(demo_run, fid=fid))
    mine = resp[resp["fid"] == fid]
    msgs = (
        mine.groupby("msg", as_index=False)["sent_at"]
        .first()
        .sort_values(["sent_at", "msg"], ascending=[False, True])["msg"]
        .tolist()
    )
    tables = r.sections["responders"]
    assert len(tables) == min(len(msgs), Limits().status_requests)
    text = " ".join(r.section_text["responders"])
    for msg, tbl in zip(msgs, tables, strict=False):
        assert msg in text
        want = mine[mine["msg"] == msg]
        got = records(tbl)
        assert sorted(g["responder"] for g in got) == sorted(want["responder"])
        for g in got:
            w = want[want["responder"] == g["responder"]].iloc[0]
            assert g["group"] == (w["group"] or "")
            assert g["should respond"] == (
                "" if pd.isna(w["should_respond"]) else "yes" if w["should_respond"] else "no"
            )


# -- safety, determinism, bounds, errors -------------------------------------------------------


def test_hostile_folder_path_stays_text(we_folder: str, we_org: str) -> None:
    for page in (we_folder, we_org):
        assert "<script>window.__pfxss" not in page and "<img src=x" not in page
    assert htmllib.escape(HOSTILE_PATH) in we_folder
    r = read_report(we_folder)
    assert HOSTILE_PATH in "".join(r.h1) and HOSTILE_PATH in "".join(r.title)
    # plotly.js reads tags and entities in titles: the figure carries the escaped path
    titles = [fig["layout"]["title"]["text"] for fig in r.figures.values() if fig["layout"].get("title")]
    assert titles and all(htmllib.escape(HOSTILE_PATH, quote=False) in t for t in titles)
    assert "&lt;b&gt;bold&lt;/b&gt;" in build_report(
        RunData(require_run(published("worked-example"))), fid="1-124"
    )


def test_same_run_and_view_give_the_same_bytes(we_run: RunData, we_org: str, we_folder: str) -> None:
    fresh = RunData(require_run(we_run.run.data_dir))
    assert build_report(fresh) == we_org
    assert build_report(fresh, fid=WE_FID) == we_folder
    at = "2026-11-04T20:00:00Z"
    assert build_report(fresh, fid=WE_FID, at=at) == build_report(we_run, fid=WE_FID, at=at)


def test_demo_reports_fit_the_size_budget(demo: Path, demo_run: RunData) -> None:
    org = build_report(demo_run)
    folder = build_report(demo_run, fid=busiest_fid(demo))
    hierarchy = build_report(demo_run, fid="1-1")
    for page in (org, folder, hierarchy):
        assert len(page.encode("utf-8")) < 6 * MB
        assert page.count("* plotly.js v") == 1


def test_long_lists_are_bounded_and_say_what_was_left_out(demo: Path, demo_run: RunData) -> None:
    n_open = len(parquet(demo, "backfill_entries", state="open"))
    assert n_open > 3
    small = Limits(open_entries=3, worst_folders=2, at_risk=1, matrix_stores=2, lag_stores=4)
    r = read_report(build_report(demo_run, limits=small))
    assert len(records(r.sections["open-entries"][0])) == 3
    assert f"Showing the first 3 of {n_open:,} open entries" in " ".join(r.section_text["open-entries"])
    assert len(records(r.sections["worst"][0])) == 2
    worst_text = " ".join(r.section_text["worst"])
    assert re.search(r"the 2 worst of ([\d,]+) are listed below", worst_text)
    assert "The other " in worst_text and "worst first: " in worst_text
    hm = next(
        v["data"][0]
        for v in r.figures.values()
        if v["data"] and v["data"][0]["type"] == "heatmap" and v["data"][0]["x"] == v["data"][0]["y"]
    )
    assert len(hm["x"]) == 4 and "of 10 stores" in " ".join(r.section_text["lag"])
    f = read_report(build_report(demo_run, fid="1-1", limits=small))
    cells = records(f.sections["matrix"][-1])
    assert len({x["observer"] for x in cells}) == len({x["subject"] for x in cells}) == 2
    assert "of 10 stores" in " ".join(f.section_text["matrix"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--fid", "9-999"], "no folder with FID '9-999'"),
        (["--fid", WE_FID, "--at", "yesterday"], "not RFC 3339"),
        (["--fid", WE_FID, "--at", "2030-01-01T00:00:00Z"], "after the run's as-of"),
        (["--at", "2026-11-04T20:00:00Z"], "--at needs --fid"),
    ],
)
def test_cli_operator_errors_are_one_line(we: Path, tmp_path: Path, args: list[str], message: str) -> None:
    out = tmp_path / "r.html"
    done = subprocess.run(
        [sys.executable, "-m", "pfscope.app.cli", "report", "--data", str(we), "--out", str(out), *args],
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pfscope report: ") and message in lines[0]
    assert not out.exists()


def test_cli_without_a_published_run(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pfscope.app.cli",
            "report",
            "--data",
            str(tmp_path),
            "--out",
            str(tmp_path / "r.html"),
        ],
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (
        done.returncode == 2
        and "no published run" in done.stderr
        and len(done.stderr.strip().splitlines()) == 1
    )


def test_cli_writes_the_same_file_as_the_function(we: Path, we_folder: str, tmp_path: Path) -> None:
    out = tmp_path / "folder.html"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pfscope.app.cli",
            "report",
            "--data",
            str(we),
            "--out",
            str(out),
            "--fid",
            WE_FID,
        ],
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert out.read_bytes() == we_folder.encode("utf-8")
    assert f"{out.stat().st_size:,} bytes" in done.stdout


def test_parse_view_rejects_what_the_run_cannot_show(we_run: RunData) -> None:
    with pytest.raises(ReportError, match="no folder"):
        build_report(we_run, fid="nope")
    with pytest.raises(ReportError, match="RFC 3339"):
        build_report(we_run, fid=WE_FID, at="2026-13-01")


def test_dashboard_download_is_the_same_file_as_the_command(
    we: Path, we_run: RunData, tmp_path: Path
) -> None:
    out = tmp_path / "at.html"
    at = "2026-11-04T20:00:00Z"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pfscope.app.cli",
            "report",
            "--data",
            str(we),
            "--out",
            str(out),
            "--fid",
            WE_FID,
            "--at",
            at,
        ],
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    payload = report_download(we_run, WE_FID, at)
    assert payload["content"].encode("utf-8") == out.read_bytes()
    assert payload["filename"] == f"pfscope-{we_run.run_id}-{WE_FID}-at-20261104T200000Z.html"
    assert payload["type"] == "text/html"
    with pytest.raises(ReportError):
        report_download(we_run, "9-999")


def test_at_with_an_offset_and_before_any_history(we_run: RunData) -> None:
    utc_view = build_report(we_run, fid=WE_FID, at="2026-11-04T20:00:00Z")
    assert build_report(we_run, fid=WE_FID, at="2026-11-04T21:00:00+01:00") == utc_view
    early = read_report(build_report(we_run, fid=WE_FID, at="2026-11-01T00:00:00Z"))
    assert early.sections["matrix"] == []  # no table: nothing was known yet
    assert "No state table row for this folder at that time." in " ".join(early.section_text["matrix"])


def test_matrix_at_the_as_of_through_history_equals_the_state_table(demo: Path, demo_run: RunData) -> None:
    fid = busiest_fid(demo)
    as_of = utc(parquet(demo, "summary").iloc[0]["as_of"]).replace(" ", "T")
    now = {
        (x["observer"], x["subject"]): x["believed (observer's row)"]
        for x in records(read_report(build_report(demo_run, fid=fid)).sections["matrix"][-1])
    }
    then = {
        (x["observer"], x["subject"]): x["believed (observer's row)"]
        for x in records(read_report(build_report(demo_run, fid=fid, at=as_of)).sections["matrix"][-1])
    }
    assert now and then == now


def test_folder_replicas_worst_first_and_bounded(demo: Path, demo_run: RunData) -> None:
    replicas = parquet(demo, "replicas", fid="1-1")
    r = read_report(build_report(demo_run, fid="1-1", limits=Limits(folder_replicas=3)))
    rows = records(r.sections["replicas"][0])
    assert len(rows) == 3
    order = ["delete pending", "overdue", "backfilling", "in sync", "deleted"]
    ranks = [order.index(x["health"].split(",")[0].split(" (")[0]) for x in rows]
    assert ranks == sorted(ranks)
    worst = min(order.index(h.replace("_", " ")) for h in replicas["health"])
    assert ranks[0] == worst
    assert f"Showing the first 3 of {len(replicas)} replicas" in " ".join(r.section_text["replicas"])


def test_org_report_backfill_trend_counts_the_entries_of_the_tables(demo: Path, demo_run: RunData) -> None:
    """The organisation's totals over time: every point counts the entries opened by then and not
    yet closed (all stores); the last point the open entries and the overdue among them."""
    r = read_report(build_report(demo_run))
    figs = [v for k, v in r.figures.items() if r.figure_section.get(k) == "trend"]
    assert len(figs) == 2  # the totals, then the store x time heatmap
    lines = {t["name"]: t for t in figs[0]["data"] if t.get("mode") == "lines"}
    entries = parquet(demo, "backfill_entries")
    for col in ("opened_at", "closed_at"):
        entries[col] = pd.to_datetime(entries[col], utc=True)
    as_of = pd.to_datetime(parquet(demo, "summary")["as_of"], utc=True).iloc[0]
    open_now = entries[entries["state"] == "open"]
    opened = lines["open entries, all stores"]
    at = list(pd.to_datetime(pd.Series(values(opened["x"])), utc=True))
    y = [int(v) for v in values(opened["y"])]
    assert at[-1] == as_of and len(at) > 10
    assert y == [int(((entries["opened_at"] <= x) & ~(entries["closed_at"] <= x)).sum()) for x in at]
    assert y[-1] == len(open_now)
    overdue = [int(v) for v in values(lines["overdue entries, all stores"]["y"])]
    assert overdue[-1] == int((open_now["requests"] >= 2).sum()) > 0  # the demo has overdue entries


def test_an_unknown_report_fid_answers_404_with_close_matches(we_run: RunData) -> None:
    from pfscope.app.report.not_found import report_error_page

    status, page = report_error_page(we_run, "1-12", None, "no folder with FID '1-12'")
    assert status == 404 and "<h1>Report: folder not found</h1>" in page
    assert 'href="/report?fid=1-123"' in page and page.index("1-123") < page.index('href="/report"')
    status, page = report_error_page(we_run, "<b>x</b>", None, "no folder with FID '<b>x</b>'")
    assert status == 404 and "<b>x" not in page and "&lt;b&gt;x&lt;/b&gt;" in page
    status, page = report_error_page(we_run, "1-123", "soon", "--at: not RFC 3339")
    assert status == 400 and 'href="/report?fid=1-123"' in page and 'href="/folder/1-123"' in page


def test_org_report_opens_with_a_summary_by_cause(demo: Path, demo_run: RunData) -> None:
    text = build_report(demo_run)
    body = text[text.index("<body") :]
    assert body.index('id="summary"') < body.index('id="accounting"')  # the summary comes first
    stores = parquet(demo, "stores")
    for store in stores.loc[stores["status"] == "down", "store"]:
        assert f"{store} down since" in body  # the cause, with since when
    nxt = parquet(demo, "next_requests")
    assert nxt["waiting"].any()
    assert "open entries of its own wait for it" in body or "open entry of its own wait for it" in body


# -- the folder report's verdict and the rejects that name a line ---------------------------


def verdict_lines(page: str) -> list[tuple[str, str, str]]:
    """(tier, store, text) of each verdict line, as the browser shows them (tags out, entities in)."""
    section = page[page.index('<section id="verdict">') :]
    section = section[: section.index("</section>")]
    return [
        (tier, htmllib.unescape(store), htmllib.unescape(re.sub(r"<[^>]*>", "", text)))
        for tier, store, text in re.findall(
            r'<li class="tier-(\w+)" data-store="([^"]*)"><span class="tier">\w+</span> '
            r'<span class="verdict-text">(.*?)</span></li>',
            section,
        )
    ]


def test_folder_report_opens_with_the_dashboards_verdict(demo: Path, demo_run: RunData) -> None:
    """The verdict comes first, before every table, and is the dashboard folder page's: the same
    lines in the same order, one per replica not in sync, lacking CNs (known or not told yet) or on a
    store that is down."""
    from pfscope.app.figures import TIERS, folder_verdicts

    reps, stores = parquet(demo, "replicas"), parquet(demo, "stores")
    down = set(stores.loc[stores["status"] == "down", "store"])
    reps = reps[reps["fid"] != "1-1"]
    unwell = reps[
        reps["health"].isin(["delete_pending", "overdue", "backfilling"])
        | reps["store"].isin(down)
        | ((reps["lacks_count"] > 0) & (reps["health"] != "deleted"))
    ]
    assert down and not unwell.empty
    # the folder with the most such replicas, a down store's among them when one is
    score = unwell.groupby("fid").agg(n=("store", "size"), down=("store", lambda s: int(s.isin(down).any())))
    fid = str(
        score.reset_index().sort_values(["down", "n", "fid"], ascending=[False, False, True])["fid"].iloc[0]
    )
    page = build_report(demo_run, fid=fid)
    body = page[page.index("<body") :]
    assert body.index('id="verdict"') < body.index('id="replicas"') < body.index('id="matrix"')
    assert '<a href="#verdict">Verdict</a>' in body
    lines = verdict_lines(page)
    mine = unwell[unwell["fid"] == fid]
    assert {s for _, s, _ in lines} == set(mine["store"]) and len(lines) == len(mine)
    assert [TIERS.index(t) for t, _, _ in lines] == sorted(TIERS.index(t) for t, _, _ in lines)
    for _, store, text in lines:
        assert text.startswith(f"{store}: ")
        if store in down:
            assert "store down since" in text
    expected = folder_verdicts(
        demo_run.replicas(fid=fid),
        demo_run.backfill_entries(fid=fid),
        demo_run.next_requests(fid=fid),
        demo_run.stores(),
        demo_run.summary().get("as_of"),
        demo_run.forecast(fid=fid),  # as the folder page: each line ends with its forecast
    )
    assert lines == [(v.tier, v.store, v.text) for v in expected]  # the dashboard's very lines


def test_folder_report_verdict_escapes_its_text_and_says_when_all_is_well(
    we_run: RunData, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pfscope.app import figures
    from pfscope.app.figures import Verdict

    hostile = Verdict(
        '<img src=x onerror="window.__pfxss=9">',
        "critical",
        "<script>window.__pfxss=8</script> lacks 3 CNs (PFS1:1-3) & more",
    )
    monkeypatch.setattr(figures, "folder_verdicts", lambda *_a: [hostile])
    page = build_report(we_run, fid=WE_FID)
    assert "<script>window.__pfxss=8" not in page and "<img src=x" not in page
    assert verdict_lines(page) == [("critical", hostile.store, hostile.text)]
    monkeypatch.setattr(figures, "folder_verdicts", lambda *_a: [])
    page = build_report(we_run, fid=WE_FID)
    assert verdict_lines(page) == [] and "Every replica is in sync, as of the run." in page


def test_org_report_names_the_line_a_reject_conflicts_with(we: Path, we_org: str) -> None:
    rejects = parquet(we, "rejects")
    named = rejects[rejects["conflict_line"].notna()].sort_values(["source", "line"])
    assert len(named) == 1 and int(named["conflict_line"].iloc[0]) == HOSTILE_CONFLICT_LINE
    r = read_report(we_org)
    shown = records(r.sections["accounting"][1])
    assert shown == [
        {
            "file": row.source,
            "line": str(row.line),
            "reason": row.reason,
            "conflicts with (file:line)": f"{row.conflict_source}:{int(row.conflict_line)}",
        }
        for row in named.itertuples()
    ]


def test_org_report_draws_a_down_stores_replicas_out_of_reach(demo: Path, demo_run: RunData) -> None:
    """As on the overview: a down store's replicas are one "store down" bar, never drawn in the
    health they last had (PFJNB02, down till the demo's end, last had them "in sync")."""
    r = read_report(build_report(demo_run))
    bars = [v for v in r.figures.values() if v["data"] and v["data"][0]["type"] == "bar"]
    (fig,) = [b for b in bars if any(t.get("name") == STORE_DOWN_LABEL for t in b["data"])]
    down = set(parquet(demo, "stores").query("status == 'down'")["store"])
    assert down == {"PFJNB02"}
    shown = {t["name"]: {s for s, x in zip(t["y"], values(t["x"]), strict=True) if x} for t in fig["data"]}
    assert down <= shown[STORE_DOWN_LABEL]
    assert not down & shown.get("in sync", set())


def test_org_report_per_store_trend_is_a_heatmap_worst_first_every_down_store_in_it(
    demo: Path, demo_run: RunData
) -> None:
    """Backfill over time per store as the overview draws it: one heatmap row per store (labels
    distinct, no line styles to repeat), every store that was down among them."""
    r = read_report(build_report(demo_run))
    heatmaps = [v["data"][0] for v in r.figures.values() if v["data"] and v["data"][0]["type"] == "heatmap"]
    (trend,) = [h for h in heatmaps if h.get("x") != h.get("y")]
    stores = set(parquet(demo, "stores")["store"])
    labels = [str(y).split(" ")[0] for y in trend["y"]]
    assert len(labels) == len(set(labels)) and set(labels) <= stores
    assert set(parquet(demo, "store_periods")["store"]) <= set(labels)
    assert not any(
        v["data"] and v["data"][0]["type"] == "scatter" and len(v["data"]) > 20 for v in r.figures.values()
    )
