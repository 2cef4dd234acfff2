#!/usr/bin/python3
"""Runs the commands of the user docs (ctest: cli.doc_commands).

Usage: doc_commands.py STEPSIM SOURCE_DIR [MPIEXEC [MPIEXEC_FLAGS...]]
       doc_commands.py --list SOURCE_DIR      (prints every command block and its mark)

The convention (docs/README.md, "Commands in the docs"): every fenced block whose info string
is bash, sh, shell or console is a command block, and the line right above its opening fence
marks it:

  <!-- test -->               the block is run as written
  <!-- test: EDITS -->        the block is run with EDITS, which are `s|OLD|NEW|` substitutions
                              (applied to every command) and then arguments appended to each
                              `build/apps/stepsim run` command: `s|--fidelity cell||
                              --fidelity analytical --no-output` runs a long step in a second
  <!-- not tested: REASON --> the block is not run (a long packet run, Slurm, the build itself)

A command block without a mark is an error, so a new command cannot slip in untested without
saying why. A block of any other kind marked `<!-- output -->` quotes what the tested block
before it printed: each of its lines must be a line of that block's stdout, but for lines of
this machine's timings (`wall`, `synchronisation`), so quoted numbers follow the model. The pages' prose (outside code blocks) is checked too: no "issue N" (project
history belongs in BENCHMARKS.md), no file outside the repository (DESIGN.md, DOMAIN.md,
STYLE.md, ../shared/), and every relative Markdown link names a file that exists. In a console block only the lines starting with `$ ` are commands. The blocks of one
page run in order, as one bash script each (`set -euo pipefail`), in a scratch directory of that
page that mirrors the source tree (its top-level folders linked, `build/apps/stepsim` the build's
binary): a later block may read what an earlier one wrote. `mpirun` runs MPIEXEC with its flags;
a bare `stepsim` or `stepsim-post` fails (the docs must name build/apps/stepsim and
postproc/stepsim-post, which exist after the documented build).
"""
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SHELL_INFOS = {"bash", "sh", "shell", "console"}
MARK = re.compile(r"^<!--\s*(test|not tested|output)\s*(?::\s*(.*?))?\s*-->\s*$")
# Lines of a quoted output that hold this machine's timings, not the model's results.
TIMING = re.compile(r"\bwall\b|synchronisation")
PAGES = ["README.md", "docs/*.md", "jobs/README.md", "postproc/README.md", "workloads/README.md",
         "topologies/README.md"]


def pages(src):
    found = []
    for pattern in PAGES:
        found += sorted(src.glob(pattern))
    return found


def blocks(path):
    """Yields (line number, info, mark, args, lines) for each command block of a page."""
    lines = path.read_text(encoding="utf-8").split("\n")
    i = 0
    while i < len(lines):
        fence = re.match(r"^(```+)\s*(\S*)", lines[i])
        if not fence:
            i += 1
            continue
        start, info = i, fence.group(2).lower()
        j = i + 1
        while j < len(lines) and not lines[j].startswith(fence.group(1)):
            j += 1
        body = lines[i + 1:j]
        i = j + 1
        mark = MARK.match(lines[start - 1]) if start > 0 else None
        if info not in SHELL_INFOS:
            if mark and mark.group(1) == "output":
                yield (start + 1, "output", "output", "", body)
            continue
        yield (start + 1, info, mark.group(1) if mark else None,
               (mark.group(2) or "") if mark else "", body)


def commands(info, body):
    """The block's commands, continuation lines joined."""
    if info == "console":
        out, cont = [], False
        for line in body:
            if line.startswith("$ ") or cont:
                out.append(line[2:] if line.startswith("$ ") else line)
                cont = line.endswith("\\")
        body = out
    joined, current = [], ""
    for line in body:
        if line.endswith("\\"):
            current += line[:-1] + " "
            continue
        joined.append(current + line)
        current = ""
    if current:
        joined.append(current)
    return joined


def strip_comment(cmd):
    """cmd without a trailing `# comment` (a # after a blank, outside quotes)."""
    quote = None
    for k, c in enumerate(cmd):
        if quote:
            quote = None if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c == "#" and (k == 0 or cmd[k - 1] in " \t"):
            return cmd[:k].rstrip()
    return cmd


HISTORY = re.compile(r"\bissues? \d+\b", re.IGNORECASE)
# "NVIDIA/nccl-tests issue 198" cites a published thread, not the project's history.
GITHUB_REPO = re.compile(r"\b[\w.-]+/[\w.-]+\s+$")
OUTSIDE = re.compile(r"\b(DESIGN|DOMAIN|STYLE)\.md\b|\.\./shared/")
LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")


def prose_problems(page, src):
    """The page's lines outside fenced blocks that cite project history or outside files."""
    problems, fenced = [], False
    for n, line in enumerate(page.read_text(encoding="utf-8").split("\n"), 1):
        if line.startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            continue
        where = f"{page.relative_to(src)}:{n}"
        if any(not GITHUB_REPO.search(line[:m.start()]) for m in HISTORY.finditer(line)):
            problems.append(f"{where}: an issue number in a user doc: {line.strip()[:90]}")
        if OUTSIDE.search(line):
            problems.append(f"{where}: a file outside the repository: {line.strip()[:90]}")
        for target in LINK.findall(line):
            if "://" in target or target.startswith("mailto:"):
                continue
            resolved = (page.parent / target).resolve()
            if not resolved.exists() or src not in resolved.parents and resolved != src:
                problems.append(f"{where}: link to {target}, no such file in the repository")
    return problems


SUBST = re.compile(r"s\|([^|]*)\|([^|]*)\|")


def output_problems(where, body, stdout):
    """The quoted output's lines that the block before it did not print."""
    if stdout is None:
        return [f"{where}: <!-- output --> follows no tested command block"]
    printed = set(stdout.split("\n"))
    return [f"{where}: quoted line not in the output: {q}" for q in body
            if q.strip() and q not in printed and not TIMING.search(q)]


def with_args(cmd, args):
    """cmd with a mark's edits: its s|OLD|NEW| substitutions, then the rest appended to a run."""
    if not args:
        return cmd
    cmd = strip_comment(cmd)
    for old, new in SUBST.findall(args):
        cmd = cmd.replace(old, new)
    extra = SUBST.sub("", args).strip()
    if extra and "build/apps/stepsim run" in cmd:
        cmd += " " + extra
    return cmd


PRELUDE = """set -euo pipefail
mpirun() { command "$DOC_MPIEXEC" $DOC_MPIEXEC_FLAGS "$@"; }
stepsim() { echo "doc_commands: bare 'stepsim': write build/apps/stepsim" >&2; return 127; }
stepsim-post() { echo "doc_commands: bare 'stepsim-post': write postproc/stepsim-post" >&2; return 127; }
"""


def scratch_tree(src, stepsim, work):
    for entry in src.iterdir():
        if entry.name not in ("build", ".git") and not entry.name.startswith("."):
            (work / entry.name).symlink_to(entry)
    (work / "build" / "apps").mkdir(parents=True)
    (work / "build" / "apps" / "stepsim").symlink_to(stepsim)


def main(argv):
    if len(argv) >= 3 and argv[1] == "--list":
        src = Path(argv[2]).resolve()
        for page in pages(src):
            for line, info, mark, args, body in blocks(page):
                print(f"{page.relative_to(src)}:{line}: {mark or 'UNMARKED'} {args}")
        return 0
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    stepsim, src = Path(argv[1]).resolve(), Path(argv[2]).resolve()
    env = dict(os.environ, DOC_MPIEXEC=argv[3] if len(argv) > 3 else "mpirun",
               DOC_MPIEXEC_FLAGS=" ".join(argv[4:]), PATH="/usr/bin:/bin")
    failures, ran, start = [], 0, time.monotonic()
    for page in pages(src):
        rel = page.relative_to(src)
        failures += prose_problems(page, src)
        with tempfile.TemporaryDirectory(prefix="doc_commands.") as tmp:
            work = Path(tmp)
            scratch_tree(src, stepsim, work)
            last = None  # the stdout of the page's last command block, None when not run
            for line, info, mark, args, body in blocks(page):
                where = f"{rel}:{line}"
                if mark == "output":
                    failures += output_problems(where, body, last)
                    continue
                last = None
                if mark is None:
                    failures.append(f"{where}: a ```{info} block without a mark: put "
                                    "<!-- test -->, <!-- test: ARGS --> or "
                                    "<!-- not tested: REASON --> on the line above its fence")
                    continue
                if mark == "not tested":
                    if not args:
                        failures.append(f"{where}: <!-- not tested --> needs a reason")
                    continue
                script = PRELUDE + "\n".join(with_args(c, args) for c in commands(info, body))
                t0 = time.monotonic()
                proc = subprocess.run(["bash", "-c", script], cwd=work, env=env,
                                      capture_output=True, text=True)
                ran += 1
                last = proc.stdout
                print(f"{where}: exit {proc.returncode}, {time.monotonic() - t0:.1f} s")
                if proc.returncode != 0:
                    failures.append(f"{where}: exit code {proc.returncode}\n--- script\n{script}\n"
                                    f"--- stdout (tail)\n{proc.stdout[-3000:]}\n"
                                    f"--- stderr (tail)\n{proc.stderr[-3000:]}")
    print(f"doc_commands: {ran} blocks run in {time.monotonic() - start:.1f} s")
    if ran == 0:
        failures.append("no block marked <!-- test --> was found")
    for f in failures:
        print("FAIL " + f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
