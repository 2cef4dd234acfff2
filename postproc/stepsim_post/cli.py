"""The `stepsim-post` command line."""

import argparse
import os
import signal
import sys

from . import __doc__ as DOC
from .compare import cmd_compare
from .export import cmd_export
from .plots import PLOT_KINDS, cmd_plot
from .report import cmd_report
from .schema import TIERS, UserError


def positive_int(text):
    try:
        v = int(text)
    except ValueError:
        v = 0
    if v < 1:
        raise argparse.ArgumentTypeError(f"'{text}' is not a positive integer")
    return v


def main(argv):
    p = argparse.ArgumentParser(prog="stepsim-post", description=DOC.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("report", help="summary of one step")
    r.add_argument("file")
    r.add_argument("--markdown", action="store_true")
    r.set_defaults(run=cmd_report)
    pl = sub.add_parser("plot", help="PNG plots of one step")
    pl.add_argument("file")
    pl.add_argument("kinds", nargs="*", metavar="KIND",
                    help=f"plots to draw (default: every plot the file has data for): "
                         f"{', '.join(PLOT_KINDS)}")
    pl.add_argument("-o", "--output", default=".", help="directory for the PNG files")
    pl.add_argument("--collective", type=int, metavar="ID",
                    help="flow_gantt: the /collectives id (default: the longest network "
                         "collective with flow times)")
    pl.add_argument("--tier", metavar="TIER[,TIER]",
                    help=f"link_util, queue_depth, pfc_pause: only ports of these tiers "
                         f"({', '.join(TIERS)})")
    pl.add_argument("--top", type=positive_int, default=8, metavar="K",
                    help="queue_depth: the K ports with the largest queue (default 8)")
    pl.add_argument("--max-ports", type=positive_int, default=128, metavar="N",
                    help="link_util, pfc_pause: at most N rows, the busiest (default 128)")
    pl.add_argument("--max-flows", type=positive_int, default=200, metavar="N",
                    help="flow_gantt: at most N bars, the flows that end last (default 200)")
    pl.set_defaults(run=cmd_plot)
    c = sub.add_parser("compare", help="steps side by side, with ratios to the first")
    c.add_argument("files", nargs="+", metavar="FILE",
                   help="step files (.h5), or sweep tables (.csv: one variant per row)")
    c.add_argument("--markdown", action="store_true")
    c.add_argument("--csv", action="store_true", help="the table as CSV on stdout")
    c.set_defaults(run=cmd_compare)
    e = sub.add_parser("export", help="the tables as CSV files (collectives, flows, samples, "
                                      "memory)")
    e.add_argument("file")
    e.add_argument("--csv", required=True, metavar="DIR",
                   help="directory for STEM_collectives.csv, _flows.csv, _samples.csv, "
                        "_memory.csv")
    e.set_defaults(run=cmd_export)
    try:
        # plot's KINDs may follow its options (plot FILE -o DIR link_util): argparse leaves
        # them over, and they join the kinds.
        args, extra = p.parse_known_args(argv)
        if args.command != "plot" and extra:
            p.error(f"unrecognized arguments: {' '.join(extra)}")
        if any(x.startswith("-") for x in extra):
            pl.error(f"unrecognized arguments: {' '.join(x for x in extra if x.startswith('-'))}")
        if extra:
            args.kinds = list(args.kinds) + extra
    except SystemExit as e:
        return 0 if e.code == 0 else 2
    return guarded(args)


# Signals that mean HDF5 crashed on a damaged file (its metadata carries no checksums in the
# file format stepsim writes, so a flipped bit can send the library astray).
CRASHES = {signal.SIGSEGV: "SIGSEGV", signal.SIGBUS: "SIGBUS", signal.SIGABRT: "SIGABRT",
           signal.SIGFPE: "SIGFPE", signal.SIGILL: "SIGILL"}


def guarded(args):
    """Runs the command in a child process: a crash inside HDF5 on a damaged file becomes one
    message and exit 2, not a core dump."""
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        pid = os.fork()
    except OSError:
        return run(args)
    if pid == 0:
        code = 2
        try:
            code = run(args)
        finally:
            os._exit(code)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # the child handles Ctrl-C
    try:
        _, status = os.waitpid(pid, 0)
    finally:
        signal.signal(signal.SIGINT, previous)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig in CRASHES:
            files = [f for f in [getattr(args, "file", None)] + getattr(args, "files", [])
                     if f]
            print(f"stepsim-post: error: {', '.join(files)}: damaged: HDF5 crashed reading it "
                  f"({CRASHES[sig]}); the file is corrupt or was cut short", file=sys.stderr)
            return 2
        return 128 + sig
    return os.WEXITSTATUS(status)


def run(args):
    """The command's exit code: 0, or 2 after one message on stderr."""
    try:
        code = args.run(args)
        sys.stdout.flush()
        return code
    except UserError as e:
        print(f"stepsim-post: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader went away (| head): no traceback; what is left unwritten goes nowhere.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print("stepsim-post: interrupted", file=sys.stderr)
        return 130
