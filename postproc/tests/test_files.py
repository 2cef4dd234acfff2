"""Files that are not finished step files: refused at once with one message and exit 2, no
traceback: a FIFO, an empty or truncated file, a file still being written, a killed rank's file
without /meta, and bit-flipped files (none may crash the reader)."""

import os
import random
import subprocess
import sys
import time

import h5py
import numpy as np

from conftest import one_error


def test_a_fifo_is_refused_without_reading_it(tmp_path, post):
    fifo = tmp_path / "step.h5"
    os.mkfifo(fifo)
    start = time.monotonic()
    one_error(post("report", fifo, timeout=20), "is a FIFO (named pipe), not a regular file")
    one_error(post("compare", fifo, fifo, timeout=20), "is a FIFO")
    csv = tmp_path / "plan.csv"
    os.mkfifo(csv)
    one_error(post("plot", csv, timeout=20), "is a FIFO")
    assert time.monotonic() - start < 20


def test_an_empty_file_is_incomplete(tmp_path, post):
    empty = tmp_path / "empty.h5"
    empty.write_bytes(b"")
    one_error(post("report", empty), "incomplete: the file is empty")


def test_a_killed_ranks_file_without_meta_is_incomplete(step, post):
    path = step()
    with h5py.File(path, "r+") as f:
        del f["meta"]
    one_error(post("report", path), "incomplete: no /meta")
    one_error(post("plot", path), "incomplete: no /meta")


def test_a_file_being_written_is_said_to_be(tmp_path, post):
    path = tmp_path / "busy.h5"
    writer = subprocess.Popen([sys.executable, "-c", (
        "import h5py, numpy as np, sys, time\n"
        "f = h5py.File(sys.argv[1], 'w'); f['ops'] = np.zeros(4); f.flush()\n"
        "print('open', flush=True); time.sleep(60)\n"), str(path)],
        stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline().strip() == "open"
        one_error(post("report", path), "is being written")
    finally:
        writer.kill()
        writer.wait()


def test_a_file_whose_writer_was_killed_is_incomplete(tmp_path, post):
    path = tmp_path / "killed.h5"
    subprocess.run([sys.executable, "-c", (
        "import h5py, numpy as np, os, sys\n"
        "f = h5py.File(sys.argv[1], 'w', libver='latest'); f['ops'] = np.zeros(4)\n"
        "f.flush(); os._exit(0)\n"), str(path)], check=True)
    one_error(post("report", path), "incomplete: its writer did not close it")


def test_a_truncated_file_is_refused(step, post):
    path = step()
    data = open(path, "rb").read()
    with open(path, "wb") as fh:
        fh.write(data[:len(data) // 2])
    rc, out, err = post("report", path)
    assert rc == 2 and len(err) == 1 and ("damaged" in err[0] or "incomplete" in err[0]), err


def test_not_hdf5(tmp_path, post):
    path = tmp_path / "text.h5"
    path.write_text("not hdf5\n")
    one_error(post("report", path), "not an HDF5 file")


def test_bit_flips_never_crash_the_reader(step, post, tmp_path):
    """Each of 24 single-bit flips (half in the first 4 KiB, where HDF5's metadata starts) is
    read (exit 0) or refused with one message (exit 2); never a traceback or a signal."""
    data = bytearray(open(step(samples=None), "rb").read())
    rng = random.Random(7)
    refused = 0
    for i in range(24):
        d = bytearray(data)
        off = rng.randrange(min(len(d), 4096)) if i % 2 == 0 else rng.randrange(len(d))
        d[off] ^= 1 << rng.randrange(8)
        path = tmp_path / f"flip{i}.h5"
        path.write_bytes(bytes(d))
        rc, out, err = post("report", path)
        assert rc in (0, 2), (off, rc, err)
        assert "Traceback" not in "".join(err) and len(err) <= 1, (off, err)
        if rc == 2:
            refused += 1
            assert "flip" in err[0]
        else:
            assert not err
    assert refused >= 1  # the superblock and object headers: some flip must be noticed


def test_a_samples_dataset_that_cannot_be_read_is_damage(step, post):
    """A /samples/ports whose type is not the schema's: one message."""
    path = step()
    with h5py.File(path, "r+") as f:
        g = f.create_group("samples")
        g.attrs["interval_ps"] = np.int64(1000)
        g["ports"] = np.zeros(3)
    one_error(post("report", path), "/samples/ports lacks column(s)")
