"""The run's home on the http data plane: the coordinator keeps the checkpoints and
tensorboard files a learner sends (RunHome), and a learner on another host sends them and
fetches them back to resume (HomeLink), over a real server on 127.0.0.1."""

from __future__ import annotations

import logging
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import TOKEN

from ding_lite.coordinator.home import RunHome, home_checkpoints
from ding_lite.interaction import HttpServer, RemoteError, make_app
from ding_lite.interaction.files import FilePlane
from ding_lite.worker.learner.comm.home import HomeLink

pytestmark = pytest.mark.timeout(30)
LOGGER = logging.getLogger("test_home")


class Home:
    """A master-like server with only the run's home on it."""

    def __init__(self, run_dir: Path, keep: int = 2) -> None:
        app = make_app("home", TOKEN)
        self.server = HttpServer(app, name="home")
        self.files = FilePlane(app, self.server, TOKEN)
        self.ckpt = run_dir / "ckpt"
        RunHome(self.files, self.ckpt, keep, 1 << 20, LOGGER)
        self.server.start()
        self.peer = FilePlane(app, self.server, TOKEN, self.server.address).home((2.0, 5.0))

    def close(self) -> None:
        self.peer.close()
        self.server.stop()


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Home]:
    served = Home(tmp_path / "home" / "run")
    yield served
    served.close()
    assert not list(tmp_path.rglob("*.tmp")), "a temp file was left"


def checkpoint(path: Path, text: str = "weights") -> Path:
    """A file shaped like torch.save's (a zip archive)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("data.pkl", text)
    return path


def test_checkpoints_sent_home_are_kept_rotated_and_served(home: Home, tmp_path: Path):
    learner = tmp_path / "learner" / "ckpt"
    for n in (5, 10, 15):
        home.peer.put(f"/run/ckpt/ckpt_iter{n:08d}.pt", checkpoint(learner / f"it{n}.pt"))
    home.peer.put("/run/ckpt/best.pt", checkpoint(learner / "best.pt", "best"))
    # keep=2: the newest two periodic ones, and best.pt beside them
    assert home_checkpoints(home.ckpt) == [
        "ckpt_iter00000015.pt",
        "ckpt_iter00000010.pt",
        "best.pt",
    ]
    fetched = tmp_path / "other" / "ckpt_iter00000015.pt"
    home.peer.get("/run/ckpt/ckpt_iter00000015.pt", fetched, 1 << 20)
    assert fetched.read_bytes() == (home.ckpt / "ckpt_iter00000015.pt").read_bytes()


@pytest.mark.parametrize(
    "route",
    ["/run/ckpt/notes.txt", "/run/ckpt/ckpt_iter5.pt.bak", "/run/ckpt/..", "/run/tb/../x"],
)
def test_a_name_that_is_not_a_checkpoint_is_refused(home: Home, tmp_path: Path, route: str):
    with pytest.raises(RemoteError) as refused:
        home.peer.put(route, checkpoint(tmp_path / "c.pt"))
    assert refused.value.status in (400, 404)
    assert not home.ckpt.exists() or list(home.ckpt.iterdir()) == []


def test_a_file_that_is_not_a_torch_archive_is_refused(home: Home, tmp_path: Path):
    bogus = tmp_path / "c.pt"
    bogus.write_bytes(b"not a zip archive" * 10)
    with pytest.raises(RemoteError) as refused:
        home.peer.put("/run/ckpt/ckpt_iter00000005.pt", bogus)
    assert refused.value.status == 400 and "torch.save" in refused.value.message
    assert list(home.ckpt.iterdir()) == []


def test_a_learner_sends_what_changed_and_a_resuming_one_fetches_it(home: Home, tmp_path: Path):
    exp = tmp_path / "learner"
    tb = exp / "tb" / "learner-a"
    tb.mkdir(parents=True)
    (tb / "events.out.tfevents.1.host").write_bytes(b"event records")
    checkpoint(exp / "ckpt" / "ckpt_iter00000005.pt")
    checkpoint(exp / "ckpt" / "ckpt_iter00000010.pt")
    link = HomeLink(home.peer, exp / "ckpt", 1 << 20, LOGGER, tb)
    link.send_new()
    # Only the newest periodic checkpoint goes (with the tensorboard file).
    assert home_checkpoints(home.ckpt) == ["ckpt_iter00000010.pt"]
    tb_home = home.ckpt.parent / "tb" / "learner-a" / "events.out.tfevents.1.host"
    assert tb_home.read_bytes() == b"event records"
    (home.ckpt / "ckpt_iter00000010.pt").unlink()
    link.send_new()  # unchanged since sent: not sent again
    assert home_checkpoints(home.ckpt) == []

    spare = tmp_path / "spare" / "ckpt"
    HomeLink(home.peer, spare, 1 << 20, LOGGER).fetch(["ckpt_iter00000010.pt", "best.pt"])
    assert not spare.exists() or list(spare.iterdir()) == []  # neither is at home: skipped
    home.peer.put("/run/ckpt/ckpt_iter00000010.pt", exp / "ckpt" / "ckpt_iter00000010.pt")
    HomeLink(home.peer, spare, 1 << 20, LOGGER).fetch(["ckpt_iter00000010.pt"])
    assert [p.name for p in spare.iterdir()] == ["ckpt_iter00000010.pt"]
    with pytest.raises(ValueError, match="checkpoint names"):
        link.fetch(["../../etc/passwd"])
