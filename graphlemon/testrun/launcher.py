"""The launcher of a confined run: one POSIX `sh` that starts before bwrap and holds the run's outer limits.

In this order: the per-process limits (`ulimit`, inherited by every process of the run); as root, the move into the
run's pids cgroup before anything forks; the seccomp filter opened on FILTER_FD for bwrap (and, as root, the
sandbox's user namespace on `root_identity.USERNS_FD`, with the keeper's mount namespace entered by `nsenter`);
then bwrap in the background and, beside it, the work-tree quota's watcher: it measures the writable folders
QUOTA_START_S after the run starts and then every QUOTA_INTERVAL_S (plus 1 ms per 4 MiB they already hold: `du`'s cost grows with them;
`du`: disk blocks, hard links once, one file system) and, once they have grown past the quota, kills the run (bwrap
and the sandbox's first process, whose end ends every process of its pid namespace) and says `resource_limit` in its
output. The watcher also ends the run once GraphLemon has gone (the launcher's parent changed: GraphLemon was killed,
even by SIGKILL, so nobody waits for the run any more): bwrap's `--die-with-parent` names the launcher, which would
otherwise outlive it. The launcher ends with bwrap's exit status.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from pathlib import Path

FILTER_FD = 3  # the descriptor bwrap reads the seccomp filter from
STATUS_FD = 5  # the descriptor bwrap writes its status on (`--json-status-fd`: the sandbox's init; sandbox_end.py)
QUOTA_INTERVAL_S = 0.25
QUOTA_START_S = 0.05  # the first measurement (the baseline): what the run writes before it counts as already there
QUOTA_EXIT = 137  # the watcher's SIGKILL, as the shell reports it
RESOURCE_LIMIT = "resource_limit"  # a run a limit stopped: the machine's doing (infra), never a failing test
QUOTA_LINE = f"[graphlemon] {RESOURCE_LIMIT}: the run was stopped by the sandbox's worktree_mb limit"


def launcher(
    filter_file: Path,
    command: list[str],
    *,
    limits: Iterable[str] = (),
    group: Path | None = None,
    userns: str = "",
    quota: tuple[list[Path], int] | None = None,
    status: Path | None = None,
) -> list[str]:
    """`sh -c SCRIPT FILTER COMMAND...`: `quota` is (the writable folders, their most in MB together); `status` is
    the file opened on STATUS_FD for bwrap (a path of the host's own, never inside the sandbox)."""
    steps = list(limits)
    if group is not None:
        steps.append(f"echo $$ > {shlex.quote(str(group / 'cgroup.procs'))} || exit 125")
    opened = f"{STATUS_FD}>{shlex.quote(str(status))}" if status is not None else ""
    start = " ".join(part for part in (f'"$@" {FILTER_FD}<"$0"', userns, opened) if part)
    if quota is None:
        steps.append(f"exec {start}")
    else:
        steps += _watched(start, *quota, group)
    return ["/bin/sh", "-c", "\n".join(steps), str(filter_file), *command]


def _sweep(group: Path) -> str:
    """Kill every process left in the run's pids cgroup but the launcher (builtins only)."""
    procs = shlex.quote(str(group / "cgroup.procs"))
    return f'while read x; do [ "$x" = $$ ] || kill -KILL "$x" 2>/dev/null; done < {procs}'


def _watched(start: str, paths: list[Path], limit_mb: int, group: Path | None) -> list[str]:
    """bwrap in the background (its stdin the launcher's), the watcher beside it, the launcher waiting for bwrap.

    The watcher holds none of the run's output (a caller reading it to its end never waits for the watcher). It first
    learns the sandbox's first process (bwrap's child: the pid namespace's init, which waits for every process of
    the run); past the quota it tells the launcher (USR2) and kills bwrap and that process; when bwrap returns, the
    launcher tells the watcher (USR1) to kill that process, so whatever the run left behind (`cmd &`) ends with it;
    as root it also kills whatever is left in the run's pids cgroup but itself. Between two measurements it looks
    at the launcher's parent: once that is no longer GraphLemon, it kills bwrap and that process."""
    folders = " ".join(shlex.quote(str(p)) for p in paths)
    measure = f"du -sckx -- {folders} 2>/dev/null | {{ while read n _; do t=$n; done; echo ${{t:-0}}; }}"
    children = "/proc/$p/task/$p/children"
    learn = (  # bwrap makes it within milliseconds: a short spin of builtins, then a few sleeps (as root the
        # run's pids cgroup is swept instead: nothing to learn)
        ""
        if group is not None
        else f'n=0; while [ $n -lt 200 ] && [ -z "$i" ]; do read i _ < {children} 2>/dev/null; n=$((n+1)); done; '
        f'for d in 0.02 0.05 0.1 0.2; do [ -z "$i" ] && [ -z "$u" ] && kill -0 $p 2>/dev/null || break; sleep $d; '
        f"read i _ < {children} 2>/dev/null; done; "
    )
    over = f"[ $((k - b)) -gt {limit_mb * 1024} ] || continue; kill -USR2 $$; kill -KILL $i $p 2>/dev/null; exit 0"
    # GraphLemon gone: the launcher's parent is no longer the one it started with ($g); field 4 of its stat line
    orphaned = 'read -r _ _ _ o _ < /proc/$$/stat; [ "$o" = "$g" ] || { kill -KILL $i $p 2>/dev/null; exit 0; }'

    # the baseline, and the interval: QUOTA_INTERVAL_S plus 1 ms per 4 MiB already there (du's cost grows with it)
    pace = (  # after QUOTA_START_S: a run as short as that never pays for a measurement
        f'sleep {QUOTA_START_S} & s=$!; wait $s; [ -z "$u" ] || exit 0; b=$({measure}); '
        f"m=$(({int(QUOTA_INTERVAL_S * 1000)} + b / 4096)); t=$((m / 1000)).$(printf %03d $((m % 1000)))"
    )
    watch = (
        f"( i=; s=; u=; trap 'u=1; kill -KILL $i $s 2>/dev/null' USR1; {learn}{pace}; "
        f'while [ -z "$u" ]; do sleep $t & s=$!; wait $s; [ -z "$u" ] || break; {orphaned}; k=$({measure}); '
        f"{over}; done; kill -KILL $i 2>/dev/null ) </dev/null >/dev/null 2>&1 &"
    )
    return [
        "exec 8<&0; g=$PPID",
        f"{start} <&8 8<&- &",
        "p=$!; exec 8<&-; q=; trap 'q=1' USR2",
        watch,
        # its output is GraphLemon's pipe: once GraphLemon has gone, the shell's own `Killed` notice for bwrap would
        # end it by SIGPIPE before its sweep (set after both starts: the run keeps SIGPIPE as it was given)
        "w=$!; trap '' PIPE; wait $p; rc=$?",
        'while [ "$rc" -gt 128 ] && kill -0 $p 2>/dev/null; do wait $p; rc=$?; done',  # a wait the USR2 cut short
        "kill -USR1 $w 2>/dev/null",
        *([] if group is None else [_sweep(group)]),
        f"[ -z \"$q\" ] || printf '\\n%s\\n' {shlex.quote(QUOTA_LINE + f' ({limit_mb} MB)')} >&2",
        "exit $rc",
    ]
