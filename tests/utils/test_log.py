"""Reading tensorboard event files back (the plot script and tests use it)."""

from ding_lite.utils.log import build_tb_logger, read_tb_scalars


def test_scalars_written_by_tensorboardx_read_back(tmp_path):
    writer = build_tb_logger(tmp_path / "tb")
    for step in range(5):
        writer.add_scalar("charts/win_rate", step / 10, step * 100)
    writer.add_scalar("other", 7.0, 3)
    writer.add_text("note", "not a scalar", 0)
    writer.close()
    (events,) = (tmp_path / "tb").glob("events.out.tfevents.*")
    scalars = read_tb_scalars(events)
    assert set(scalars) == {"charts/win_rate", "other"}
    assert [s for s, _ in scalars["charts/win_rate"]] == [0, 100, 200, 300, 400]
    assert [round(v, 6) for _, v in scalars["charts/win_rate"]] == [0.0, 0.1, 0.2, 0.3, 0.4]
    assert scalars["other"] == [(3, 7.0)]
    # A record cut off mid-write (a run still going) is left out, not an error.
    data = events.read_bytes()
    cut = tmp_path / "cut.tfevents"
    cut.write_bytes(data[:-10])
    assert len(read_tb_scalars(cut)["other"]) <= 1
