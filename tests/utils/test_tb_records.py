"""Damaged tensorboard records: the reader checks both CRCs, skips a bad event, stops at a bad
length, and keeps every point read before (issue 40, finding 8)."""

from __future__ import annotations

import math

from helpers import tb_frame, tb_records
from tensorboardX.proto import event_pb2, summary_pb2

from ding_lite.utils.log import TbWriter, read_tb_events, read_tb_events_from
from ding_lite.utils.tb_tail import TbTail


def event_file(folder, values=(1.0, 2.0, 3.0, 4.0, 5.0), tag="charts/SPS"):
    """A real event file with one scalar per step; its path."""
    writer = TbWriter(folder)
    for step, value in enumerate(values):
        writer.add_scalar(tag, value, step)
    writer.close()
    return writer.path


def scalar_records(path):
    """``(offset, length)`` of the records holding a scalar (the first is the file version)."""
    return tb_records(path)[1:]


def test_a_record_that_fails_its_checksum_is_skipped_and_the_others_kept(tmp_path):
    path = event_file(tmp_path)
    offset, length = scalar_records(path)[2]
    data = bytearray(path.read_bytes())
    data[offset + 12 + length // 2] ^= 0x40  # one bit of the third scalar's event
    path.write_bytes(bytes(data))
    got = read_tb_events_from(path, 0)
    assert [s for s, _, _ in got.scalars["charts/SPS"]] == [0, 1, 3, 4]
    assert got.offset == len(data) and not got.stopped
    (line,) = got.damaged
    assert line == f"{path}: the record at byte {offset:,} fails its checksum; skipped"


def test_an_event_that_is_no_protobuf_is_skipped_even_with_good_checksums(tmp_path):
    path = event_file(tmp_path)
    offset, length = scalar_records(path)[1]
    data = path.read_bytes()
    forged = tb_frame(b"\xff" * 12)  # well framed, but no protobuf message
    path.write_bytes(data[: offset + 16 + length] + forged + data[offset + 16 + length :])
    got = read_tb_events_from(path, 0)
    assert [v for _, v, _ in got.scalars["charts/SPS"]] == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert got.damaged == [
        f"{path}: the record at byte {offset + 16 + length:,} is not a tensorboard event; skipped"
    ]
    assert read_tb_events(path) == got.scalars


def test_an_event_without_a_finite_wall_time_is_skipped(tmp_path):
    path = event_file(tmp_path, values=(1.0,))
    value = summary_pb2.Summary.Value(tag="charts/SPS", simple_value=9.0)
    event = event_pb2.Event(wall_time=math.nan, step=7, summary=summary_pb2.Summary(value=[value]))
    with open(path, "ab") as f:
        f.write(tb_frame(event.SerializeToString()))
    got = read_tb_events_from(path, 0)
    assert got.scalars["charts/SPS"][0][:2] == (0, 1.0) and len(got.scalars["charts/SPS"]) == 1
    assert got.damaged[0].endswith("has no finite wall time; skipped")


def test_a_damaged_length_stops_the_read_there_and_keeps_what_came_before(tmp_path):
    path = event_file(tmp_path)
    offset, _ = scalar_records(path)[3]
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x01  # the fourth scalar's length: the records after it are lost
    path.write_bytes(bytes(data))
    got = read_tb_events_from(path, 0)
    assert [s for s, _, _ in got.scalars["charts/SPS"]] == [0, 1, 2]
    assert got.stopped and got.offset == offset
    assert got.damaged == [
        f"{path}: the record at byte {offset:,} has a damaged length; it and the "
        f"{len(data) - offset - 12:,} bytes after it are left out"
    ]


def test_the_tail_says_each_damage_once_and_reads_every_other_file(tmp_path):
    """The dashboard's and the W&B mirror's reader: a damaged file costs its own bad
    records only, a later poll does not repeat the warning, and the points of the files
    around it are kept (before, a DecodeError dropped the whole poll)."""
    tb = tmp_path / "tb"
    first = event_file(tb / "a_coordinator", values=(1.0, 2.0))
    damaged = event_file(tb / "b_learner0", values=(3.0, 4.0, 5.0))
    last = event_file(tb / "c_learner1", values=(6.0,), tag="losses/value_loss")
    data = bytearray(damaged.read_bytes())
    offsets = scalar_records(damaged)
    data[offsets[0][0] + 13] ^= 0xFF  # a bad event
    data[offsets[2][0]] ^= 0x01  # a bad length
    damaged.write_bytes(bytes(data))
    said = []
    tail = TbTail(tb, warn=said.append)
    points = tail.read_new()
    assert sorted(value for _, _, _, value in points) == [1.0, 2.0, 4.0, 6.0]
    assert len(said) == 2 and "fails its checksum" in said[0] and "damaged length" in said[1]
    assert all(str(damaged) in line for line in said)
    with open(first, "ab") as f:  # the files grow on; the damaged one is not read again
        f.write(read_frame(last))
    assert [value for _, _, _, value in tail.read_new()] == [6.0] and len(said) == 2
    (tb / "d_gone").mkdir()
    (tb / "d_gone" / "events.out.tfevents.1.x.1").mkdir()  # not a file: passed over
    assert tail.read_new() == [] and len(said) == 2


def read_frame(path):
    """The last record of an event file, as bytes."""
    offset, length = tb_records(path)[-1]
    return path.read_bytes()[offset : offset + 16 + length]
