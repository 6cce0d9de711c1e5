"""Run a command and measure what a person waits for and what the machine pays: wall time and
the peak memory of the whole process tree.

A tool that indexes in worker processes holds memory in each of them, so the peak of the
command's own process says too little. While the command runs, /proc is polled every 20 ms:
the command's descendants are found by parent pid and their proportional set sizes (PSS, from
`smaps_rollup`) summed; the largest sum is the tree's peak. PSS splits a page shared by several
processes among them, so forked workers are not charged again for the parent's pages, as a
sum of resident set sizes would do (that sum is the fallback where PSS cannot be read).
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

PAGE = os.sysconf("SC_PAGE_SIZE")
POLL_SECONDS = 0.02


@dataclass(frozen=True)
class Measured:
    seconds: float
    peak_mb: float
    returncode: int
    stdout: str
    stderr: str


def _parents() -> dict[int, int]:
    """pid -> parent pid of every process now alive."""
    parents: dict[int, int] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue  # it exited while we looked
        # the command name is in parentheses and may hold spaces: split after the last ")"
        fields = stat[stat.rindex(")") + 2 :].split()
        parents[int(entry.name)] = int(fields[1])
    return parents


def _pss(pid: int) -> int:
    """Bytes `pid` holds, shared pages divided among their sharers; 0 once it has exited."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE
    except (OSError, IndexError, ValueError):
        return 0


def tree_pss(root: int) -> int:
    """Bytes held by `root` and all its descendants."""
    parents = _parents()
    children: dict[int, list[int]] = {}
    for pid, parent in parents.items():
        children.setdefault(parent, []).append(pid)
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        todo.extend(children.get(pid, ()))
        total += _pss(pid)
    return total


def run(
    argv: Sequence[str], *, env: Mapping[str, str], cwd: Path, timeout: float = 3600
) -> Measured:
    """Run `argv` to completion; its output is captured through files so a full pipe never
    stalls it while we poll."""
    out_path, err_path = cwd / ".measured.out", cwd / ".measured.err"
    with out_path.open("wb") as out, err_path.open("wb") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, env=dict(env), cwd=cwd, stdout=out, stderr=err)
        peak = 0
        while True:
            pid, status = os.waitpid(proc.pid, os.WNOHANG)
            if pid:
                break
            peak = max(peak, tree_pss(proc.pid))
            if time.perf_counter() - start > timeout:
                proc.kill()
            time.sleep(POLL_SECONDS)
        seconds = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    stdout = out_path.read_text(errors="replace")
    stderr = err_path.read_text(errors="replace")
    out_path.unlink()
    err_path.unlink()
    return Measured(seconds, peak / 1e6, proc.returncode, stdout, stderr)
