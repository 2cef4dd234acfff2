"""Opening the files stepsim-post reads: a regular file only (a FIFO or a device would block or
never end), and an HDF5 file that cannot be opened said to be incomplete, still being written
or damaged, in one message."""

import os
import stat

from .errors import UserError

# HDF5's signature: at offset 0, or after a user block of 512, 1024, 2048, ... bytes.
HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
# What a stepsim step file holds besides /meta: a file with these but no /meta is one whose
# writer stopped before it finished (a killed rank), not some other HDF5 file.
STEP_OBJECTS = ("ops", "collectives", "flows", "links", "memory", "jobs", "nodes", "ports")


def _kind(mode):
    for test, what in ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device")):
        if test(mode):
            return what
    return "not a regular file"


def regular_file(path, what="file"):
    """Raises UserError unless `path` is an existing regular file (symbolic links followed);
    never opens it, so a FIFO is refused at once instead of blocking the reader."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise UserError(f"{path}: no such file")
    except OSError as e:
        raise UserError(f"{path}: cannot read ({e.strerror})")
    if stat.S_ISDIR(st.st_mode):
        raise UserError(f"{path}: is a directory, not {'an HDF5 file' if what == 'h5' else 'a file'}")
    if not stat.S_ISREG(st.st_mode):
        raise UserError(f"{path}: is {_kind(st.st_mode)}, not a regular file: stepsim-post reads "
                        f"files only")
    return st


def _has_signature(path, size):
    try:
        with open(path, "rb") as fh:
            offset = 0
            while offset + 8 <= size:
                fh.seek(offset)
                if fh.read(8) == HDF5_SIGNATURE:
                    return True
                offset = 512 if offset == 0 else offset * 2
    except OSError as e:
        raise UserError(f"{path}: cannot read ({e.strerror})")
    return False


def open_h5(path):
    """The h5py.File of a step file, opened for reading; a UserError that says why not."""
    try:
        import h5py
    except ImportError:
        raise UserError("h5py is missing: set STEPSIM_PYTHON to a Python that has it "
                        "(Debian: apt-get install python3-h5py)")
    st = regular_file(path, "h5")
    if st.st_size == 0:
        raise UserError(f"{path}: incomplete: the file is empty (0 bytes; its run has not "
                        f"written it yet, or stopped before it did)")
    if not _has_signature(path, st.st_size):
        raise UserError(f"{path}: not an HDF5 file (no HDF5 signature)")
    try:
        return h5py.File(path, "r")
    except BlockingIOError:
        raise UserError(f"{path}: is being written (another process holds it open for "
                        f"writing): read it when its run has finished")
    except (OSError, RuntimeError, ValueError) as e:
        text = str(e)
        if "unable to lock file" in text:
            raise UserError(f"{path}: is being written (another process holds it open for "
                            f"writing): read it when its run has finished")
        if "already open for write" in text or "consistency flags" in text:
            raise UserError(f"{path}: incomplete: its writer did not close it (the run is "
                            f"still writing it, or was killed)")
        if "truncated" in text:
            raise UserError(f"{path}: incomplete: the file is truncated ({_first_line(text)})")
        raise UserError(f"{path}: damaged: HDF5 cannot open it ({_first_line(text)})")


def _first_line(text):
    return text.splitlines()[0].strip() if text else "no reason given"


def damaged(path, where, error):
    """The UserError of an object that HDF5 could not read (a bit flip, a torn write)."""
    return UserError(f"{path}: damaged: {where} cannot be read ({_first_line(str(error))})")
