"""Settings: flags over PFSCOPE_* variables over safe defaults; unsafe combinations refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.settings import (
    DEFAULT_DATA,
    VARIABLES,
    SettingsError,
    default_workers,
    is_loopback,
    job_settings,
    load_settings,
    serve_workers,
)


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


# how many workers ``pfscope serve`` starts
def test_workers_flag_wins_over_the_environment_which_wins_over_the_default() -> None:
    assert serve_workers(3, {"PFSCOPE_WORKERS": "5"}) == 3
    assert serve_workers(None, {"PFSCOPE_WORKERS": "5"}) == 5
    assert serve_workers(None, {"PFSCOPE_WORKERS": " "}) == default_workers()
    assert serve_workers(None, {}) == default_workers()
    assert 1 <= default_workers() <= 12


@pytest.mark.parametrize(("flag", "env", "match"), [
    (None, {"PFSCOPE_WORKERS": "lots"}, "PFSCOPE_WORKERS='lots' is not a whole number"),
    (None, {"PFSCOPE_WORKERS": "0"}, r"workers: 0 \(need at least 1\)"),
    (-1, {}, r"workers: -1 \(need at least 1\)"),
])
def test_bad_worker_counts_are_one_line_errors(flag: int | None, env: dict[str, str], match: str) -> None:
    with pytest.raises(SettingsError, match=match):
        serve_workers(flag, env)


def test_the_jobs_flags_win_over_the_environment_which_wins_over_the_defaults() -> None:
    from app.cli import _parser
    from spark_jobs.publish import DEFAULT_KEEP

    def job(argv: list[str], env: dict[str, str]):  # type: ignore[no-untyped-def]
        return job_settings(_parser().parse_args(["compute", "--topology", "t", "--events", "e", "--out", "o", *argv]),
                            env)

    assert job([], {}).keep == DEFAULT_KEEP == 5 and job([], {}).master is None and job([], {}).driver_memory is None
    env = {"PFSCOPE_KEEP": "12", "PFSCOPE_SPARK_MASTER": "local[2]", "PFSCOPE_DRIVER_MEMORY": "6g"}
    s = job([], env)
    assert (s.keep, s.master, s.driver_memory) == (12, "local[2]", "6g")
    s = job(["--keep", "3", "--master", "local[1]"], env)
    assert (s.keep, s.master, s.driver_memory) == (3, "local[1]", "6g")
    assert job(["--keep", "0"], {}).keep == 0
    with pytest.raises(SettingsError, match="PFSCOPE_KEEP='x' is not a whole number"):
        job([], {"PFSCOPE_KEEP": "x"})


def test_every_variable_is_read_in_the_settings_module_and_listed() -> None:
    """No module but app/settings.py looks a ``PFSCOPE_*`` variable up, and VARIABLES lists them all."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    lookup = re.compile(r"""(?:environ\.get\(|environ\[|getenv\(|env\.get\(|env\[|env_\w+\(\w+, )["']PFSCOPE_""")
    readers, named = set(), set()
    for path in [*root.joinpath("app").rglob("*.py"), *root.joinpath("spark_jobs").rglob("*.py")]:
        text = path.read_text(encoding="utf-8")
        if lookup.search(text):
            readers.add(path.relative_to(root).as_posix())
        named |= set(re.findall(r"PFSCOPE_[A-Z][A-Z_]+", text))
    assert readers == {"app/settings.py"}
    assert named <= set(VARIABLES)
