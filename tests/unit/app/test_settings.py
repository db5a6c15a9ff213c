"""Settings: flags over PFSCOPE_* variables over safe defaults; unsafe combinations refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.settings import DEFAULT_DATA, SettingsError, is_loopback, load_settings


def test_defaults_are_safe() -> None:
    s = load_settings({})
    assert s.host == "127.0.0.1" and s.port == 8050 and s.data_dir == Path(DEFAULT_DATA)
    assert s.redis_url is None and not s.auth_required


def test_serve_default_is_where_the_demo_publishes() -> None:
    # scripts/demo publishes into data/demo/published and serves it; a bare `pfscope serve` finds it too
    assert DEFAULT_DATA == "data/demo/published"
    demo = (Path(__file__).resolve().parents[3] / "scripts" / "demo").read_text()
    assert '--out "$DATA/published"' in demo and 'serve --data "$DATA/published"' in demo


def test_environment_then_flags() -> None:
    env = {"PFSCOPE_SERVE_DATA": "/srv/runs", "PFSCOPE_PORT": "9000", "PFSCOPE_CACHE_DIR": "/var/cache/pf",
           "PFSCOPE_REDIS_URL": "redis://cache:6379/0", "PFSCOPE_CACHE_TIMEOUT": "60"}
    s = load_settings(env)
    assert (s.data_dir, s.port, s.cache_dir, s.redis_url, s.cache_timeout) == (
        Path("/srv/runs"), 9000, Path("/var/cache/pf"), "redis://cache:6379/0", 60)
    s = load_settings(env, data_dir="/other", port=8123)
    assert (s.data_dir, s.port) == (Path("/other"), 8123)


@pytest.mark.parametrize("host", ["0.0.0.0", "10.1.2.3", "pfscope.example.org", "::"])
def test_any_other_address_needs_credentials(host: str) -> None:
    with pytest.raises(SettingsError, match="without credentials"):
        load_settings({}, host=host)
    s = load_settings({"PFSCOPE_USER": "ops", "PFSCOPE_PASSWORD": "s3cret"}, host=host)
    assert s.auth_required and s.host == host
    assert "s3cret" not in repr(s)


@pytest.mark.parametrize("env", [{"PFSCOPE_USER": "ops"}, {"PFSCOPE_PASSWORD": "x"}])
def test_half_credentials_are_refused(env: dict[str, str]) -> None:
    with pytest.raises(SettingsError, match="both"):
        load_settings(env)


@pytest.mark.parametrize(("env", "match"), [({"PFSCOPE_PORT": "http"}, "whole number"),
                                            ({"PFSCOPE_PORT": "70000"}, "between"),
                                            ({"PFSCOPE_CACHE_TIMEOUT": "-1"}, "0 or more")])
def test_bad_values_are_one_line_errors(env: dict[str, str], match: str) -> None:
    with pytest.raises(SettingsError, match=match) as e:
        load_settings(env)
    assert "\n" not in str(e.value)


def test_loopback_addresses() -> None:
    assert all(is_loopback(h) for h in ("127.0.0.1", "127.8.9.1", "::1", "localhost"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "192.168.1.1", "example.org"))
