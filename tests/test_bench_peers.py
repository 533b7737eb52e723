"""`scripts/bench-peers` without any peer installed: its options, its settings, the order of
its rounds, its medians and report, and the exactly-once check, so that the helper cannot rot
(the peers themselves need network installs and are never in the suite)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"
sys.path.insert(0, str(SCRIPTS))

from peers import cli, driver, registry, report, venvs  # noqa: E402


def test_help_runs_from_the_shell_script():
    done = subprocess.run(
        [str(SCRIPTS / "bench-peers"), "--help"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    for option in ("--jobs", "--peers", "--repeat", "--database-url", "--json", "--set"):
        assert option in done.stdout


@pytest.mark.parametrize(
    "argv",
    [
        ["--peers", "celery"],
        ["--shapes", "noop,fast"],
        ["--set", "pgqueuer.batch=10"],
        ["--set", "pgqueuer.batch_size=many"],
        ["--set", "oban.concurrency=1"],
        ["--database-url", "mysql://root@127.0.0.1/x"],
    ],
)
def test_bad_options_stop_before_anything_is_built(argv, monkeypatch, capsys):
    monkeypatch.setattr(venvs, "ensure", lambda *a: pytest.fail("built a venv"))
    assert cli.main(argv) == 2
    assert "bench-peers:" in capsys.readouterr().err


def test_non_positive_sizes_are_argparse_errors():
    with pytest.raises(SystemExit):
        cli.parser().parse_args(["--jobs", "0"])


def test_overrides_are_typed_by_the_default_and_leave_the_registry_alone():
    chosen = registry.settings_for(
        ["pgqueuer", "chancy"],
        ["pgqueuer.batch_size=10", "chancy.eager_polling=false", "pgqueuer.dequeue_timeout=5"],
    )
    assert chosen["pgqueuer"]["batch_size"] == 10
    assert chosen["pgqueuer"]["dequeue_timeout"] == 5
    assert chosen["chancy"]["eager_polling"] is False
    assert registry.PEERS["pgqueuer"].defaults()["batch_size"] == 100
    assert list(chosen) == ["pgqueuer", "chancy"]
    with pytest.raises(registry.UsageError, match="takes a bool"):
        registry.parse_override("chancy.eager_polling=1")


def test_each_peer_gets_its_own_database():
    url = "postgres://root@127.0.0.1:5432/hammerweb_peer"
    assert cli.peer_url(url, "chancy") == "postgres://root@127.0.0.1:5432/hammerweb_peer_chancy"
    assert cli.peer_url("postgresql://h/", "pgqueuer") == "postgresql://h/hammerweb_peer_pgqueuer"


def _run(peer, shape, value, error=None):
    run = {"peer": peer, "version": "1", "shape": shape, "settings": {"k": 1}}
    if error:
        run["error"] = error
    elif shape == "pickup":
        run["figures"] = {"p50_ms": value, "p99_ms": value * 2}
    else:
        run["figures"] = {"jobs_per_second": value, "worker_jobs_per_second": value + 1}
    return run


def test_medians_pick_each_peer_and_shape_middle_round_and_keep_errors():
    runs = [
        _run("pgqueuer", "noop", 300.0),
        _run("pgqueuer", "pickup", 9.0),
        _run("pgqueuer", "noop", 100.0),
        _run("pgqueuer", "pickup", 3.0),
        _run("pgqueuer", "noop", 200.0),
        _run("pgqueuer", "pickup", None, error="the worker exited (1)"),
        _run("chancy", "dict", 50.0),
    ]
    noop, pickup, chancy = report.medians(runs)
    assert (noop["shape"], noop["figures"]["jobs_per_second"], noop["rounds"]) == ("noop", 200, 3)
    assert noop["each_round"] == [100.0, 200.0, 300.0]
    # Two good rounds: the upper middle, as benchqueue's medians.
    assert pickup["figures"]["p50_ms"] == 9.0 and pickup["errors"] == ["the worker exited (1)"]
    assert chancy["results_stored"].startswith("no")
    table = report.as_table(
        {"repeat": 3, "jobs": 10, "samples": 5, "load_before": [1.0], "load_after": [2.0]},
        [noop, pickup, chancy],
    )
    assert "FAILED 1x: the worker exited (1)" in table
    assert "pgqueuer settings: k=1" in table and "load average 1.00 before" in table


def test_percentile_is_nearest_rank():
    values = [float(n) for n in range(1, 101)]
    assert report.percentile(values, 0.50) == 50.0
    assert report.percentile(values, 0.99) == 99.0
    assert report.percentile([7.0], 0.99) == 7.0


def test_rounds_interleave_peers_within_each_shape(monkeypatch, tmp_path, capsys):
    calls, throughput_extras = [], []

    def fake_driver(python, command, peer, dsn, settings, log, *extra):
        calls.append((command, peer, extra[1] if command == "throughput" else command))
        if command == "throughput":
            throughput_extras.append(extra)
        if command == "setup":
            return {"server_version": "15", "database": dsn.rsplit("/", 1)[-1]}
        if command == "pickup":
            return {"p50_ms": 2.0, "p99_ms": 4.0}
        return {"jobs_per_second": 10.0, "worker_jobs_per_second": 11.0}

    monkeypatch.setattr(venvs, "VAR", tmp_path)
    monkeypatch.setattr(venvs, "ensure", lambda peer, log: Path("python"))
    monkeypatch.setattr(cli, "run_driver", fake_driver)
    argv = ["--peers", "chancy,pgqueuer", "--shapes", "noop,pickup", "--repeat", "2", "--json"]
    assert cli.main(argv) == 0
    assert all("--planner-stats" in call for call in throughput_extras)
    measured = [call[1:] for call in calls if call[0] != "setup"]
    assert measured == [("chancy", "noop"), ("pgqueuer", "noop"), ("chancy", "pickup"),
                        ("pgqueuer", "pickup")] * 2
    output = json.loads(capsys.readouterr().out)
    assert [(r["peer"], r["shape"], r["rounds"]) for r in output["results"]] == [
        ("chancy", "noop", 2), ("pgqueuer", "noop", 2), ("chancy", "pickup", 2),
        ("pgqueuer", "pickup", 2),
    ]
    assert output["results"][0]["settings"]["eager_polling"] is True
    assert output["meta"]["server_version"] == "15" and output["meta"]["repeat"] == 2


class FakeConnection:
    def __init__(self, *rows):
        self.rows = list(rows)

    def execute(self, sql):
        return self

    def fetchone(self):
        return self.rows.pop(0)


class Module:
    VERIFY = "SELECT ..."


def test_verify_accepts_exactly_once_and_reports_anything_else():
    assert driver.verify(FakeConnection((5, 5, 0, 5)), Module, 5, "noop")["runs"] == 5
    assert driver.verify(FakeConnection((5, 5, 0, 5), (5, 5)), Module, 5, "sql")["rows"] == 5
    for rows in [((5, 5, 0, 6),), ((4, 4, 1, 5),), ((5, 5, 0, 5), (6, 5)), ((5, 4, 0, 5),)]:
        shape = "sql" if len(rows) == 2 else "noop"
        with pytest.raises(driver.BenchFailure, match="exactly once"):
            driver.verify(FakeConnection(*rows), Module, 5, shape)


def test_each_peer_is_given_as_a_ratio_to_hammerweb_of_the_same_run():
    def run(peer, shape, figure):
        key = report.key_figure(shape)
        return {"peer": peer, "version": "1", "shape": shape, "settings": {},
                "figures": {key: figure, "jobs_per_second": figure}}

    results = report.medians([
        run("hammerweb", "noop", 3000.0), run("pgqueuer", "noop", 1500.0),
        run("hammerweb", "pickup", 2.0), run("pgqueuer", "pickup", 4.0),
        run("chancy", "dict", 100.0),  # no Hammerweb figure for this shape: no ratio
        {"peer": "chancy", "version": "1", "shape": "noop", "settings": {}, "error": "boom"},
    ])
    ratios = {(r["peer"], r["shape"]): r.get("hammerweb_ratio") for r in results}
    assert ratios == {("hammerweb", "noop"): None, ("pgqueuer", "noop"): 2.0,
                      ("hammerweb", "pickup"): None, ("pgqueuer", "pickup"): 0.5,
                      ("chancy", "dict"): None, ("chancy", "noop"): None}
    meta = {"repeat": 1, "jobs": 10, "samples": 5, "load_before": [1.0], "load_after": [1.0]}
    table = report.as_table(meta, results)
    assert "2.00x" in table and "0.50x" in table


def test_the_table_shows_each_runs_cpu_a_job_and_leaves_what_was_not_measured_blank():
    def run(peer, server):
        figures = {"jobs_per_second": 1000.0, "worker_jobs_per_second": 1200.0,
                   "worker_cpu_us_per_job": 321.4, "server_cpu_us_per_job": server}
        return {"peer": peer, "version": "1", "shape": "noop", "settings": {},
                "figures": figures}

    meta = {"repeat": 1, "jobs": 10, "samples": 5, "load_before": [1.0], "load_after": [1.0]}
    table = report.as_table(meta, report.medians([run("hammerweb", 87.6), run("pgqueuer", None)]))
    rows = {line.split()[0]: line for line in table.splitlines() if "no-op" in line}
    assert rows["hammerweb"].split()[-2:] == ["321", "88"]
    assert rows["pgqueuer"].split()[-2:] == ["1.00x", "321"]  # no server figure: blank


def test_the_drivers_cpu_reader_is_the_projects_own():
    """The driver (in a peer's venv) loads the project's stdlib-only reader by its path."""
    from hammerweb.measure.benchmark import cpu

    assert Path(driver.cpu.__file__) == Path(cpu.__file__)
    assert driver.cpu.is_local("127.0.0.1") and not driver.cpu.is_local("db.example.com")


def test_hammerweb_runs_from_the_project_venv_with_its_own_cli():
    hammerweb = registry.PEERS["hammerweb"]
    assert hammerweb.project and not hammerweb.requirements
    assert venvs.ensure(hammerweb, print) == venvs.ROOT / ".venv" / "bin" / "python"
    from peers import hammerweb_app

    command = hammerweb_app.worker_command("/venv/bin", hammerweb.defaults())
    assert command[2:4] == ["runworker", hammerweb_app.QUEUE]
    assert command[4:6] == ["--batch-size", "50"] and "peers.hammerweb_app" in command
