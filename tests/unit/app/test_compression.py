"""Compressed, cacheable responses (the cold first load is mostly JavaScript bundles)."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import brotli
import pytest

from pfscope.app.compression import BundleCache, compressed_cache_key, is_static_bundle
from pfscope.app.main import create_app
from pfscope.app.settings import load_settings


@pytest.fixture(scope="module")
def client(we_data: Path, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    settings = load_settings(
        {"PFSCOPE_CACHE_DIR": str(tmp_path_factory.mktemp("cache"))}, data_dir=str(we_data)
    )
    return create_app(settings).server.test_client()


def test_only_immutable_urls_are_static_bundles() -> None:
    assert is_static_bundle("/_dash-component-suites/dash/dcc/dash_core_components.v4_4_1m17.js", {})
    assert is_static_bundle("/assets/pfscope.css", {"m": "17"})
    assert not is_static_bundle("/assets/pfscope.css", {})
    assert not is_static_bundle("/_dash-update-component", {}) and not is_static_bundle("/_dash-layout", {})
    cache = BundleCache()
    cache.set("br;/_dash-component-suites/x.js?", b"zz")
    cache.set("br;\0", b"never")
    assert cache.get("br;/_dash-component-suites/x.js?") == b"zz" and cache.get("br;\0") is None


def test_bundles_answer_brotli_or_gzip_with_a_year_of_cache(client) -> None:  # type: ignore[no-untyped-def]
    index = client.get("/").get_data(as_text=True)
    bundles = re.findall(r'src="(/_dash-component-suites/[^"]+)"', index)
    assert bundles and not any("plotly" in b for b in bundles)  # plotly.js loads only where a chart is drawn
    biggest = max(bundles, key=lambda u: len(client.get(u).get_data()))
    plain = client.get(biggest).get_data()
    br = client.get(biggest, headers={"Accept-Encoding": "br, gzip"})
    assert br.headers["Content-Encoding"] == "br" and "max-age=31536000" in br.headers["Cache-Control"]
    assert brotli.decompress(br.get_data()) == plain and len(br.get_data()) < len(plain) / 3
    gz = client.get(biggest, headers={"Accept-Encoding": "gzip"})
    assert gz.headers["Content-Encoding"] == "gzip" and gzip.decompress(gz.get_data()) == plain
    again = client.get(biggest, headers={"Accept-Encoding": "br"})  # served from the bundle cache: same bytes
    assert again.get_data() == br.get_data()
    css = re.search(r'href="(/assets/pfscope\.css\?m=[^"]+)"', index)
    assert css and client.get(css.group(1)).headers["Cache-Control"] == "public, max-age=31536000, immutable"


def test_dash_json_is_compressed_and_never_cached_across_requests(client) -> None:  # type: ignore[no-untyped-def]
    layout = client.get("/_dash-layout", headers={"Accept-Encoding": "gzip"})
    assert layout.headers["Content-Encoding"] == "gzip"
    assert b"pf-content" in gzip.decompress(layout.get_data())

    class Req:
        method, path, args, full_path = "POST", "/_dash-update-component", {}, "/_dash-update-component?"

    assert compressed_cache_key(Req()) == "\0"  # type: ignore[arg-type]
