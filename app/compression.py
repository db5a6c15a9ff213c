"""Compressed, cacheable responses: the first load of a page is mostly Dash's JavaScript bundles.

- flask-compress answers brotli or gzip (whatever the browser accepts) for JavaScript, JSON
  (layouts, callbacks), HTML and CSS; the compressed bundles are kept in memory per URL, so a
  multi-megabyte bundle is compressed once per worker, not per visitor (callback JSON is not
  cached: it differs per request).
- Dash's fingerprinted bundle URLs already carry a one-year ``max-age``; the ``/assets/`` files,
  whose URLs carry their modification time (``?m=``), get the same, marked immutable.
"""

from __future__ import annotations

import threading
from typing import Any

from flask import Flask, Request, Response, request

#: one year: the URL changes when the file does
IMMUTABLE = "public, max-age=31536000, immutable"
_NO_CACHE = "\0"


def is_static_bundle(path: str, args: Any) -> bool:
    """A URL whose bytes never change (fingerprinted bundle, or an asset with ``?m=``)."""
    if path.startswith("/_dash-component-suites/"):
        return True
    return path.startswith("/assets/") and "m" in args


def compressed_cache_key(req: Request) -> str:
    """The URL for a static bundle; for anything else a key the cache never stores."""
    if req.method == "GET" and is_static_bundle(req.path, req.args):
        return req.full_path
    return _NO_CACHE


class BundleCache:
    """In-memory cache of compressed static bundles (a few MB per worker); ignores other keys."""

    def __init__(self) -> None:
        self._items: dict[str, bytes] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> bytes | None:
        return None if key.endswith(_NO_CACHE) else self._items.get(key)

    def set(self, key: str, value: bytes) -> None:
        if not key.endswith(_NO_CACHE):
            with self._lock:
                self._items[key] = value


def install_compression(server: Flask) -> None:
    """Register compression (brotli, else gzip) and long cache lifetimes for immutable assets."""
    from flask_compress import Compress

    server.config.update(
        COMPRESS_ALGORITHM=["br", "gzip"],
        COMPRESS_BR_LEVEL=5,
        COMPRESS_LEVEL=6,
        COMPRESS_MIN_SIZE=500,
        COMPRESS_STREAMS=False,
        COMPRESS_MIMETYPES=[
            "text/html",
            "text/css",
            "text/plain",
            "application/json",
            "application/javascript",
            "text/javascript",
            "image/svg+xml",
        ],
        COMPRESS_CACHE_KEY=compressed_cache_key,
        COMPRESS_CACHE_BACKEND=BundleCache,
    )
    Compress(server)

    @server.after_request
    def _immutable_assets(response: Response) -> Response:
        if response.status_code == 200 and request.path.startswith("/assets/") and "m" in request.args:
            response.headers["Cache-Control"] = IMMUTABLE
        return response
