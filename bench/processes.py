"""The processes of one `chaintape up` session, read from /proc: each one's role (by its command
line, or its nearest ancestor's), CPU seconds and memory."""

import os
from dataclasses import dataclass
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")

Roles = tuple[tuple[str, tuple[str, ...]], ...]


@dataclass(frozen=True)
class Process:
    """One process: its parent, role, CPU seconds, resident and proportional set sizes."""

    pid: int
    parent: int
    role: str
    cpu_s: float
    rss_bytes: int
    pss_bytes: int


def role_of(command: str, roles: Roles) -> str | None:
    """What a process is, by its command line (None: ask its parent)."""
    return next((role for role, marks in roles if any(m in command for m in marks)), None)


def _pss(entry: Path) -> int:
    """The process's proportional set size (shared pages split among their users), in bytes."""
    try:
        for line in (entry / "smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def session_processes(session: int, roles: Roles, own: str = "this bench",
                      memory: bool = False) -> dict[int, Process]:
    """Every process of a session (and this process's children, as `own`). A process whose
    command line does not say (a server's or a run's worker processes) has its nearest
    ancestor's role. With `memory`, each one's proportional set size is read too (slower)."""
    seen: dict[int, tuple[int, str | None, float, int, Path]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, IndexError):
            continue
        pid, parent, sid = int(entry.name), int(fields[1]), int(fields[3])
        mine = pid == os.getpid() or parent == os.getpid()
        if sid == session or mine:
            seen[pid] = (parent, own if mine else role_of(command, roles),
                         (int(fields[11]) + int(fields[12])) / TICK, int(fields[21]) * PAGE,
                         entry)

    def role(pid: int) -> str:
        parent, named = seen[pid][:2]
        return named or (role(parent) if parent in seen else "other")

    return {pid: Process(pid, parent, role(pid), cpu, rss, _pss(entry) if memory else 0)
            for pid, (parent, _, cpu, rss, entry) in seen.items()}
