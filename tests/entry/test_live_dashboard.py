"""A real parallel CartPole run watched live: status.json read during the run, ``ding-lite
status`` on the live and the finished run, and the dashboard rendered in headless Chromium
(Debian's ``chromium`` and ``chromium-driver``, driven by Selenium)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import port_is_free, processes_with, wait_for
from test_parallel import FAST

from ding_lite.utils.log import read_tb_scalars

CHROMIUM, CHROMEDRIVER = shutil.which("chromium"), shutil.which("chromedriver")
BROWSER_MISSING = (
    "needs Debian's chromium and chromium-driver and selenium (.ci/run installs them)"
    if not (CHROMIUM and CHROMEDRIVER)
    else ""
)
# A long run (the checks below need it live for a while); it never solves.
RUN_ARGS = ["--max-env-step", "300000", "evaluator.stop_value=100000", "evaluator.eval_freq=4"]


def ding_lite(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ding_lite", *args], capture_output=True, text=True, **kwargs
    )


@pytest.fixture(scope="module")
def live_run(tmp_path_factory):
    """A parallel run going on in the background: (process, run dir)."""
    tmp = tmp_path_factory.mktemp("live")
    run = tmp / "run"
    log = open(tmp / "launcher.out", "w")  # noqa: SIM115
    proc = subprocess.Popen(
        [sys.executable, "-m", "ding_lite", "parallel", "-c", "cartpole_ppo_parallel"]
        + ["--exp-dir", str(run), *RUN_ARGS, *FAST],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    log.close()
    try:
        yield proc, run
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=60)


def status_of(run: Path) -> dict:
    return json.loads((run / "status.json").read_text())


def wait_running(proc, run: Path) -> dict:
    def up():
        assert proc.poll() is None, "the run ended early"
        try:
            doc = status_of(run)
        except (FileNotFoundError, json.JSONDecodeError):
            return False
        return doc["state"] == "running" and doc["iteration"] >= 1

    assert wait_for(up, 120), (run.parent / "launcher.out").read_text()
    return status_of(run)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_status_json_and_the_status_command_during_and_after_a_run(live_run):
    proc, run = live_run
    wait_running(proc, run)
    seen = []
    for _ in range(200):  # the writer replaces the file about once a second meanwhile
        doc = json.loads((run / "status.json").read_text())  # whole JSON every time
        seen.append((doc["updated_at"], doc["envstep"]))
        time.sleep(0.02)
    assert len({t for t, _ in seen}) >= 2 and seen[-1][1] >= seen[0][1]
    live = ding_lite("status", str(run), timeout=60)
    assert live.returncode == 0, live.stderr
    lines = live.stdout.splitlines()
    assert lines[0].startswith("running  [parallel]  cartpole_ppo_parallel")
    assert all(len(line) <= 80 for line in lines), live.stdout
    collectors = [line for line in lines if re.match(r"collector\d\s", line)]
    assert len(collectors) == 2 and all(re.search(r" v\d+ ", c) for c in collectors)
    assert "token" not in (run / "status.json").read_text()


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_dashboard_shows_the_run_live_in_chromium(live_run, tmp_path):
    if BROWSER_MISSING:
        if os.environ.get("DING_LITE_REQUIRE_BROWSER"):
            pytest.fail(BROWSER_MISSING)
        pytest.skip(BROWSER_MISSING)
    webdriver = pytest.importorskip("selenium.webdriver")
    proc, run = live_run
    wait_running(proc, run)
    with _dashboard(run, tmp_path, webdriver) as (driver, port):
        assert port.startswith("127.0.0.1:")

        def page(script):
            return driver.execute_script(script)

        def collectors():
            return page(
                "return [...document.querySelectorAll('#workers-0 tr[data-role=collector]')]"
                ".map(r => r.querySelector('.version').textContent)"
            )

        assert wait_for(lambda: len(collectors()) == 2, 30), driver.page_source[:2000]
        assert wait_for(lambda: all(re.fullmatch(r"v\d+", v) for v in collectors()), 30)

        def envstep():
            text = page("return document.getElementById('envstep-0').textContent")
            return int(text.split("/")[0].replace(",", "")) if text[0].isdigit() else -1

        assert wait_for(lambda: envstep() > 0, 30)
        first = envstep()
        assert wait_for(lambda: envstep() > first, 30), "the env-step count did not rise"

        def ledger():
            rows = page(
                "return [...document.querySelectorAll('#ledger-0 tr')]"
                ".map(r => [r.dataset.key, r.cells[1].textContent])"
            )
            return {key: int(count.replace(",", "")) for key, count in rows}

        assert wait_for(lambda: ledger().get("written", 0) > 0, 30)
        assert {"written", "trained", "waiting", "dropped_stale"} <= set(ledger())

        def points(tag):
            return page(
                f"const l = document.querySelector('figure[data-tag=\"{tag}\"] polyline');"
                "return l ? Number(l.dataset.count) : 0"
            )

        assert wait_for(lambda: points("charts/episodic_return") >= 2, 60)
        assert wait_for(lambda: points("losses/value_loss") >= 2, 60)  # the learner's too
        drawn = page(
            'return document.querySelector(\'figure[data-tag="charts/episodic_return"] '
            "polyline').getAttribute('points').split(' ').length"
        )
        assert drawn >= 2

        assert proc.wait(timeout=240) == 0  # the run ends on its own: max_env_step
        assert wait_for(
            lambda: "max_env_step" in page("return document.getElementById('stop-0').textContent"),
            30,
        )
        assert page("return document.getElementById('state-0').textContent") == "finished"

        def newest_dot(tag):  # drawn for one point too, which a line cannot show
            return page(
                f"const d = document.querySelector('figure[data-tag=\"{tag}\"] circle.dot');"
                "return d ? [Number(d.getAttribute('cx')), Number(d.getAttribute('cy'))] : null"
            )

        assert wait_for(lambda: newest_dot("charts/eval_return") is not None, 30)
        assert all(value > 0 for value in newest_dot("charts/eval_return"))
        assert driver.save_screenshot(str(tmp_path / "dashboard.png"))
        assert (tmp_path / "dashboard.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert port_is_free(port) and not processes_with(str(run))

    done = ding_lite("status", str(run), timeout=60)
    assert done.returncode == 0 and done.stdout.startswith("finished (max_env_step)")
    final = status_of(run)
    assert all(w["state"] == "closed" for w in final["workers"])
    # The closing evaluation (after the last iteration) is in tensorboard too, so the
    # curves end on the figure result.json gives.
    result = json.loads((run / "result.json").read_text())
    (events,) = (run / "tb" / "coordinator").glob("events.out.tfevents.*")
    last_eval = read_tb_scalars(events)["charts/eval_return"][-1]
    assert last_eval == (result["envstep"], pytest.approx(result["eval_return_mean"], abs=0.01))
    assert final["ledger"]["written"] == final["ledger"]["trained"] + sum(
        v for k, v in final["ledger"].items() if k.startswith("dropped_")
    )


def _chromium(webdriver):
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1400,1000",
    ):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_a_league_runs_table_shows_in_status_and_in_chromium(tmp_path):
    """A serial league run (issue 41): its status.json carries the league's counts and
    strongest members, which ``ding-lite status`` prints and the dashboard draws."""
    run = tmp_path / "league_run"
    trained = ding_lite(
        "serial", "-c", "matrix_league_ppo", "-q", "--exp-dir", str(run),
        "--max-train-iter", "7", "league.snapshot_every=3", "league.exploiter_max_iters=3",
        "league.main_exploiters=1", "league.league_exploiters=1",
        timeout=120,
    )  # fmt: skip
    assert trained.returncode == 0, trained.stderr
    league = status_of(run)["league"]
    assert league["pool"] == 7 and league["players"] == 3 and league["matches"] > 0
    names = [m["name"] for m in league["top"]]
    assert len(names) == 8 and "main" in names and league["exploitability"] >= 0.0
    shown = ding_lite("status", str(run), timeout=60)
    assert shown.returncode == 0 and "league  pool 7   players 3   matches" in shown.stdout
    assert all(name in shown.stdout for name in names)
    if BROWSER_MISSING:
        if os.environ.get("DING_LITE_REQUIRE_BROWSER"):
            pytest.fail(BROWSER_MISSING)
        pytest.skip(BROWSER_MISSING)
    webdriver = pytest.importorskip("selenium.webdriver")
    with _dashboard(run, tmp_path, webdriver) as (driver, port):

        def members():
            return driver.execute_script(
                "return [...document.querySelectorAll('#league-0 tr')]"
                ".map(r => [r.dataset.member, r.dataset.kind, r.cells[4].textContent])"
            )

        assert wait_for(lambda: len(members()) == 8, 30), driver.page_source[:2000]
        assert [m for m, _, _ in members()] == names
        assert {kind for _, kind, _ in members()} <= {"player", "pool", "retired"}
        summary = driver.execute_script(
            "return document.getElementById('league-summary-0').textContent"
        )
        assert summary.startswith("pool 7, players 3, matches ") and "exploitability" in summary
    assert port_is_free(port) and not processes_with(str(run))


@contextlib.contextmanager
def _dashboard(run: Path, tmp_path: Path, webdriver):
    """``ding-lite dashboard RUN`` on a free port, its page open in headless Chromium:
    ``(driver, host:port)``; the browser and the server are stopped on the way out."""
    out = open(tmp_path / "dashboard.out", "w")  # noqa: SIM115
    server = subprocess.Popen(
        [sys.executable, "-m", "ding_lite", "dashboard", str(run), "--port", "0"],
        stdout=out,
        stderr=subprocess.STDOUT,
    )
    out.close()
    driver = None
    try:

        def address():
            found = re.search(r"at http://(\S+)/", (tmp_path / "dashboard.out").read_text())
            return found.group(1) if found else None

        assert wait_for(address, 60), (tmp_path / "dashboard.out").read_text()
        driver = _chromium(webdriver)
        driver.get(f"http://{address()}/")
        yield driver, address()
    finally:
        if driver is not None:
            driver.quit()
        server.send_signal(signal.SIGINT)
        assert server.wait(timeout=30) == 0
