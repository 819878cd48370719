"""The safe reader (graphlemon/beneath.py): what a sandbox planted is never followed, on both code paths.

Every attack here is a file the test itself plants (a symlink to a canary file the test made, a link to
`/proc/self/environ`, a FIFO, a socket, a linked folder); nothing runs but the reader. Each case runs with openat2
and with the per-component fallback, as root and, in a forked child that drops to uid 65534, as a normal user.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
import threading
import time
from pathlib import Path

import pytest

from graphlemon import beneath
from graphlemon.errors import ErrorCode, GraphLemonError

CANARY = "canary-secret-8c1e2b"  # never a real secret


@pytest.fixture(params=["openat2", "per_component"])
def resolver(request, monkeypatch):
    """Both ways the reader resolves a path: openat2 (where the kernel has it) and one O_NOFOLLOW open a step."""
    if request.param == "openat2" and not beneath.openat2_available():
        pytest.skip("this kernel has no openat2")
    monkeypatch.setattr(beneath._OPENAT2, "available", request.param == "openat2")
    return request.param


@pytest.fixture
def planted():
    """A tree the way a sandbox could leave it, beside a root-only canary file outside it."""
    top = Path(tempfile.mkdtemp(prefix="graphlemon-beneath-"))
    top.chmod(0o755)
    canary_dir = top / "host"
    canary_dir.mkdir(mode=0o700)
    canary = canary_dir / "secret.txt"
    canary.write_text(CANARY)
    canary.chmod(0o600)
    tree = top / "tree"
    (tree / "src" / "pkg").mkdir(parents=True)
    (tree / "src" / "pkg" / "ok.py").write_text("X = 1\n")
    os.symlink(canary, tree / "src" / "link_to_canary")
    os.symlink("/proc/self/environ", tree / "src" / "environ")
    os.symlink(canary_dir, tree / "src" / "linked_dir")
    os.symlink("pkg/ok.py", tree / "src" / "inner_link")  # even a link that stays inside is not followed
    os.mkfifo(tree / "src" / "fifo")
    os.mknod(tree / "src" / "sock", 0o600 | stat.S_IFSOCK)  # a socket file, as a bound socket leaves (no socket opened)
    for path in [tree, *tree.rglob("*")]:
        if not path.is_symlink():
            os.chown(path, 65534, 65534) if os.geteuid() == 0 else None
    yield tree, canary
    shutil.rmtree(top, ignore_errors=True)


def _refusal(fn, kind: str):
    with pytest.raises(GraphLemonError) as err:
        fn()
    assert err.value.code == ErrorCode.SANDBOX_VIOLATION and err.value.context["kind"] == kind, err.value
    assert CANARY not in err.value.message
    return err.value


@pytest.mark.parametrize(
    "rel,kind",
    [("src/link_to_canary", "link"), ("src/environ", "link"), ("src/linked_dir/secret.txt", "link"),
     ("src/inner_link", "link"), ("src/fifo", "not_regular"), ("src/sock", "not_regular"), ("src", "not_regular"),
     ("src/../src/pkg/ok.py", "escape"), ("/etc/hostname", "escape")],
)  # fmt: skip
def test_a_planted_link_fifo_socket_or_escape_is_refused_not_followed(planted, resolver, rel, kind):
    tree, _ = planted
    started = time.monotonic()
    _refusal(lambda: beneath.read_bytes(tree, rel), kind)
    assert time.monotonic() - started < 5  # a FIFO with no writer never makes the host wait


def test_a_regular_file_reads_and_a_missing_one_is_file_not_found(planted, resolver):
    tree, _ = planted
    assert beneath.read_text(tree, "src/pkg/ok.py") == "X = 1\n"
    assert beneath.read_text(tree, tree / "src" / "pkg" / "ok.py") == "X = 1\n"  # absolute, inside the root
    with pytest.raises(FileNotFoundError):
        beneath.read_bytes(tree, "src/pkg/missing.py")
    with pytest.raises(FileNotFoundError):
        beneath.read_bytes(tree, "src/pkg/ok.py/below")


def test_size_cap_truncation_and_head_tail(planted, resolver):
    tree, _ = planted
    (tree / "big.log").write_bytes(b"a" * 1000 + b"b" * 3000)
    with pytest.raises(GraphLemonError) as err:
        beneath.read_bytes(tree, "big.log", max_bytes=100)
    assert err.value.code == ErrorCode.IO_ERROR
    assert beneath.read_bytes(tree, "big.log", max_bytes=10, truncate=True) == b"a" * 10
    cut = beneath.read_head_tail(tree, "big.log", max_bytes=400, cut=b"|")
    assert cut == b"a" * 100 + b"|" + b"b" * 300


def test_listing_and_walking_never_follow_a_link(planted, resolver):
    tree, _ = planted
    kinds = {e.name: e.kind for e in beneath.entries(tree, "src")}
    assert kinds == {"pkg": "dir", "link_to_canary": "link", "environ": "link", "linked_dir": "link",
                     "inner_link": "link", "fifo": "other", "sock": "other"}  # fmt: skip
    files, skipped = beneath.walk_files(tree)
    assert files == ["src/pkg/ok.py"]
    assert "src/linked_dir" in skipped and not any("secret" in p for p in files + skipped)
    assert beneath.kind(tree, "src/linked_dir/secret.txt") == "link"
    _refusal(lambda: beneath.entries(tree, "src/linked_dir"), "link")


def test_the_hosts_own_writes_and_removals_never_go_through_a_link(planted, resolver):
    tree, canary = planted
    _refusal(lambda: beneath.write_bytes(tree, "src/linked_dir/secret.txt", b"overwritten"), "link")
    _refusal(lambda: beneath.remove(tree, "src/linked_dir/secret.txt"), "link")
    _refusal(lambda: beneath.remove_tree(tree, "src/linked_dir/x"), "link")
    beneath.write_bytes(tree, "src/link_to_canary", b"replaced")  # a link at the path is replaced, not written through
    assert not (tree / "src" / "link_to_canary").is_symlink() and canary.read_text() == CANARY
    assert beneath.remove(tree, "src/environ") and os.path.exists("/proc/self/environ")
    assert beneath.remove_tree(tree, "src/linked_dir") and canary.read_text() == CANARY  # the link only
    beneath.write_bytes(tree, "new/deep/file.txt", b"x", mode=0o600)
    assert stat.S_IMODE((tree / "new" / "deep" / "file.txt").stat().st_mode) == 0o600
    beneath.remove(tree, "new/deep/file.txt")
    beneath.prune_empty_dirs(tree, "new/deep")
    assert not (tree / "new").exists()


def test_a_fifo_swapped_in_while_the_host_reads_is_still_refused(planted, resolver):
    """The check is made on what was opened (fstat after open), so a file replaced by a FIFO between a look and the
    read cannot make the host block."""
    tree, _ = planted
    target = tree / "src" / "pkg" / "swap.txt"
    target.write_text("first")
    assert beneath.kind(tree, "src/pkg/swap.txt") == "file"
    target.unlink()
    os.mkfifo(target)
    done = threading.Event()
    outcome: list[BaseException] = []

    def read():
        try:
            beneath.read_bytes(tree, "src/pkg/swap.txt")
        except BaseException as exc:  # noqa: BLE001 - the refusal is what the test looks for
            outcome.append(exc)
        done.set()

    threading.Thread(target=read, daemon=True).start()
    assert done.wait(5), "the reader blocked on a FIFO"
    assert isinstance(outcome[0], GraphLemonError) and outcome[0].context["kind"] == "not_regular"


@pytest.mark.system
@pytest.mark.skipif(os.geteuid() != 0, reason="dropping to another user needs root")
def test_as_a_normal_user_the_same_refusals_hold(planted, resolver):
    """A forked child that is uid/gid 65534 (no capability) reads the planted tree: the same refusals, and the
    canary (root's, mode 0600) is neither followed nor readable."""
    tree, _ = planted
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: drop, check, report one line, exit without running pytest's teardown
        code = 1
        try:
            os.setgroups([])
            os.setresgid(65534, 65534, 65534)
            os.setresuid(65534, 65534, 65534)
            results = []
            for rel in ("src/link_to_canary", "src/environ", "src/fifo", "src/linked_dir/secret.txt", "src/inner_link"):
                try:
                    beneath.read_bytes(tree, rel)
                    results.append(f"{rel}=read")
                except GraphLemonError as exc:
                    results.append(f"{rel}={exc.context.get('kind')}")
            results.append(f"ok={beneath.read_text(tree, 'src/pkg/ok.py').strip()}")
            os.write(write_fd, (" ".join(results) + f" uid={os.getuid()}").encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write_fd)
    _, status = os.waitpid(pid, 0)
    line = os.read(read_fd, 4096).decode()
    os.close(read_fd)
    assert os.waitstatus_to_exitcode(status) == 0, line
    assert line == ("src/link_to_canary=link src/environ=link src/fifo=not_regular src/linked_dir/secret.txt=link "
                    "src/inner_link=link ok=X = 1 uid=65534")  # fmt: skip
