"""How runtimes name an environment failure: one vocabulary per kind, read from the standards that name them.

Every runtime reports the same operating-system failures under a few standard names: the POSIX errno symbol
(`ENOSPC`) and the C library's message for it (`os.strerror`: "No space left on device"), Python's `OSError`
subclass (`ConnectionRefusedError`), Rust's `std::io::ErrorKind` (`StorageFull`), Java's `java.net` /
`java.lang` exceptions (`UnknownHostException`), Go's net package messages ("i/o timeout", "no such host") and
Node's error codes (`ENOTFOUND`). A kind's pattern is the union of its names, so a log written by a runtime no
scenario used before is read by the same rule. The errno messages come from this machine's C library.
"""

from __future__ import annotations

import errno
import os
import re
import signal

# kind -> (errno symbols, other standard names). A symbol this platform lacks is skipped.
_NAMES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "port_in_use": (
        ("EADDRINUSE",),
        ("AddrInUse", "java.net.BindException", "port is already allocated", r"port \d+ (?:is )?already in use"),
    ),
    # Elasticsearch marks every index read-only when its disk passes the flood-stage watermark
    "disk_full": (
        ("ENOSPC", "EDQUOT"),
        (
            "StorageFull",
            "QuotaExceeded",
            r"disk (?:is )?full",
            r"flood[- ]stage (?:disk )?watermark",
            "read-only-allow-delete",
        ),
    ),
    "dns": (
        (),
        (
            r"EAI_[A-Z]+",
            "ENOTFOUND",
            "Temporary failure in name resolution",
            "Name or service not known",
            "nodename nor servname provided",
            "No address associated with hostname",
            r"no such host",
            "UnknownHostException",
            "socket.gaierror",
            "getaddrinfo failed",
            "could not translate host name",
            "Could not resolve host",
            "Name does not resolve",
            "server misbehaving",
            "SERVFAIL",
        ),
    ),  # fmt: skip
    "unreachable": (
        ("ENETUNREACH", "EHOSTUNREACH", "ENETDOWN", "EHOSTDOWN"),
        ("NetworkUnreachable", "HostUnreachable", "NetworkDown", "NoRouteToHostException"),
    ),
    "out_of_resources": (
        ("EMFILE", "ENFILE", "ENOMEM"),
        (
            "OutOfMemoryError",
            "OutOfMemory",
            "heap out of memory",
            "MemoryError",
            "Too many open files",
            r"\bout of memory\b",  # Go's runtime, CUDA, the kernel
            r"failed to allocate memory",
            r"insufficient memory",
            # the process or thread limit (a cgroup's pids.max, ulimit -u)
            r"can't start new thread",
            r"unable to create (?:new )?native thread",
            r"fork: (?:retry: )?Resource temporarily unavailable",
            r"pids\.max",
        ),
    ),
    "killed": (
        (),
        (
            "SIGKILL",
            r"oom[-_ ]?kill\w*",
            r"The node was low on resource",  # a pod evicted by the kubelet
            r"\bpod (?:was )?evicted",
            "OOMKilled",
            "Out of memory: Kill",
            r"Killed process \d+",
            r"signal: killed",
            r"(?:exit(?:ed)?(?: with)?(?: code| status)?|status code) 137\b",
        ),
    ),  # fmt: skip
    "timeout": (
        ("ETIMEDOUT",),
        (
            "ESOCKETTIMEDOUT",
            "connect timeout",
            "ConnectTimeout",
            "upstream timed out",
            "TimedOut",
            "SocketTimeoutException",
            "i/o timeout",
            "context deadline exceeded",
            "timed out connecting",
            "TLS handshake timeout",
            "TimeoutError",  # Python's OSError subclass; the DOM's name for an AbortSignal.timeout() abort
            "aborted due to timeout",
        ),
    ),  # fmt: skip
    # a peer's TLS certificate past its validity (OpenSSL, Go's x509, Node, Java)
    "certificate_expired": (
        (),
        ("certificate has expired", "CERT_HAS_EXPIRED", "CertificateExpiredException", r"certificate (?:is )?expired"),
    ),
    # the host's clock set back or forward, or out of step with its peers: the step itself, a measured offset or
    # skew, a time-sync daemon that lost synchronisation, and what clients say when the clocks disagree
    "clock_stepped": (
        (),
        (
            r"clock (?:was |has been )?stepped",
            r"clock wrong by",
            r"step time server",
            "Time has been changed",
            r"clock (?:offset|skew|drift)",
            r"clock (?:moved|went|jumped|is running) backwards?",
            r"time (?:moved|went|jumped) backwards",
            r"(?:not|un)synchroni[sz]ed",
            r"certificate is not yet valid",
            "RequestTimeTooSkewed",
            r"too (?:much|large a) (?:clock )?skew",
        ),
    ),
    # a TLS handshake that failed on the peer's certificate or protocol (OpenSSL, Go's crypto/tls and x509, Java's
    # JSSE, Node, curl): a mirror, proxy or service with a certificate the runner does not trust
    "tls": (
        (),
        (
            r"certificate verify failed",
            "CERTIFICATE_VERIFY_FAILED",
            r"x509: certificate",
            "SSLHandshakeException",
            "PKIX path building failed",
            r"unable to get (?:local )?issuer certificate",
            r"self[- ]signed certificate",
            "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
            r"tls: (?:handshake failure|failed to verify|bad certificate)",
            r"SSL certificate problem",
            r"SSL routines",
            "SSLError",
        ),
    ),  # fmt: skip
    # a dependency (database, broker, object store, search cluster, sidecar) that says it cannot serve yet: starting,
    # initialising, recovering, electing a leader, loading its data, restarting; the phrases are the servers' own
    "dependency_unavailable": (
        (),
        (
            r"(?:is|was|still) (?:starting(?: up)?|initiali[sz]ing|recovering|restarting|warming up|rebalancing)",
            r"not (?:yet )?(?:ready|available|accepting connections)",
            r"leader(?:ship)? election",
            r"no leader",
            "LEADER_NOT_AVAILABLE",
            r"NOT_LEADER(?:_OR_FOLLOWER|_FOR_PARTITION)?",
            r"NotLeader(?:OrFollower|ForPartition)",
            "CLUSTERDOWN",
            "MASTERDOWN",
            r"\bTRYAGAIN\b",
            r"cluster (?:is )?(?:not (?:yet )?formed|unavailable|blocked)",
            r"master[_ ]not[_ ]discovered",
            r"state not recovered",
            r"back-?off (?:restarting|pulling)",
            r"failover in progress",
            # the container runtime under the services
            r"Cannot connect to the Docker daemon",
            r"OCI runtime (?:create|exec|start) failed",
            r"failed to create shim",
        ),
    ),  # fmt: skip
    # a test runner or CI agent that died under the run: pytest's INTERNALERROR, xdist's lost node, a worker that
    # exited unexpectedly, a CI agent shut down or out of contact
    "runner_crashed": (
        (),
        (
            r"INTERNALERROR>",
            r"node down: Not properly terminated",
            r"worker (?:process )?(?:\w+ )?(?:crashed|exited unexpectedly|terminated unexpectedly)",
            r"runner has received a shutdown signal",
            r"lost communication with the server",
        ),
    ),
    "connection_refused": (("ECONNREFUSED",), ("ConnectionRefused", "java.net.ConnectException")),
    "connection_reset": (
        ("ECONNRESET", "EPIPE", "ECONNABORTED", "ENETRESET", "ENOTCONN", "ESHUTDOWN"),
        (
            "ConnectionReset",
            "ConnectionAborted",
            "BrokenPipe",
            "socket hang up",
            "unexpected EOF",
            "upstream connect error or disconnect/reset before headers",
        ),
    ),
    # a client that found no free local address for its connection: the ephemeral ports are exhausted
    # (connect EADDRNOTAVAIL, "Cannot assign requested address")
    "address_unavailable": (("EADDRNOTAVAIL",), ("AddrNotAvailable",)),
    # gRPC's status for a transport that went away (a proxy restarted, a connection drained), in each language's
    # spelling: Python's StatusCode, Go's status string, Java's StatusRuntimeException, Node's "14 UNAVAILABLE",
    # .NET's RpcException, the C core's constant
    "rpc_unavailable": (
        (),
        (
            r"StatusCode\.UNAVAILABLE",
            r"code = Unavailable desc",
            r"StatusRuntimeException: UNAVAILABLE",
            r"\b14 UNAVAILABLE",
            r'StatusCode="Unavailable"',
            "GRPC_STATUS_UNAVAILABLE",
        ),
    ),  # fmt: skip
    # a database server that refuses connections while it starts, recovers or shuts down: PostgreSQL (SQLSTATE
    # 57P03 cannot_connect_now), MySQL (ER_SERVER_SHUTDOWN), Oracle (ORA-01033), Redis (LOADING)
    "database_starting": (
        (),
        (
            r"the database system is (?:starting up|in recovery mode|shutting down|not yet accepting connections)",
            "CannotConnectNow",
            r"\b57P03\b",
            "Server shutdown in progress",
            "ORA-01033",
            "Redis is loading the dataset in memory",
        ),
    ),  # fmt: skip
    # a process killed by SIGBUS: a memory-mapped file whose backing store ran out (a full tmpfs, a truncated file)
    "bus_error": (
        (),
        (
            "SIGBUS",
            "BUS_ADRERR",
            r"(?:terminated with|killed by) signal 7\b",
            r"signal: 7\b",
            r"\[Bus error\]",
            r"Bus error \(core dumped\)",
            "Fatal Python error: Bus error",
            r"(?:exit(?:ed)?(?: with)?(?: code| status)?|status code) 135\b",
        ),
    ),
    # a downloaded package whose bytes differ from the lockfile's hash (a truncated or corrupted fetch), as the
    # package managers say it: Bundler, Go modules, npm/yarn, pip, cargo, Maven
    "checksum_mismatch": (
        (),
        (
            "mismatched checksums",
            r"checksum mismatch",
            "EINTEGRITY",
            "Integrity check failed",
            "do not match the hashes",
            "failed to verify the checksum of",
            "Checksum validation failed",
        ),
    ),  # fmt: skip
}
# Every other errno the operating system knows is read by what it is about. The errors below are caused by the
# calling program itself: an argument, a path or name it chose, a permission it lacks, the state of its own
# descriptors, processes, locks or sockets. A rerun fails the same way, so they are no environment signal. Any
# other errno (a device, a file system, the network, a limit of the machine: EIO, EROFS, ESTALE, ENOBUFS,
# ENOLINK, EREMOTEIO, ...) reports the environment failing under a well-formed call.
_PROGRAM_ERRNOS = frozenset(
    """EPERM ENOENT ESRCH EINTR E2BIG ENOEXEC EBADF ECHILD EAGAIN EWOULDBLOCK EACCES EFAULT ENOTBLK EBUSY EEXIST
    EXDEV ENOTDIR EISDIR EINVAL ENOTTY ETXTBSY EFBIG ESPIPE EMLINK EDOM ERANGE EDEADLK EDEADLOCK ENAMETOOLONG ENOSYS
    ENOTEMPTY ELOOP ENOMSG EIDRM ENODATA ETIME EBADMSG EOVERFLOW EBADFD EILSEQ ERESTART ENOTSOCK EDESTADDRREQ
    EMSGSIZE EPROTOTYPE ENOPROTOOPT EPROTONOSUPPORT ESOCKTNOSUPPORT ENOTSUP EOPNOTSUPP EPFNOSUPPORT EAFNOSUPPORT
    EISCONN EALREADY EINPROGRESS ETOOMANYREFS ECANCELED EOWNERDEAD ENOTRECOVERABLE ENOKEY EKEYEXPIRED EKEYREVOKED
    EKEYREJECTED ENOTNAM EISNAM ENAVAIL EBADE EBADR EBADRQC EBADSLT ECHRNG EBFONT ENOSTR ENOANO""".split()
)
# Signals that reach a process from outside it (a supervisor, the kernel's resource limits, a lost terminal or
# power) end it for the environment's reasons; the faults of its own instructions (SIGSEGV, SIGFPE, SIGILL,
# SIGABRT, SIGTRAP, SIGSYS) are its code's. SIGKILL and SIGBUS have kinds of their own (killed, bus_error).
SENT_SIGNALS = frozenset({"SIGTERM", "SIGHUP", "SIGINT", "SIGQUIT", "SIGXCPU", "SIGXFSZ", "SIGPWR"})


def environment_errnos() -> dict[str, str]:
    """symbol -> kind for every errno of this platform that reports the environment; a symbol a named kind lists
    keeps that kind, every other one is `os_error`."""
    named = {sym: kind for kind, (symbols, _names) in _NAMES.items() for sym in symbols}
    return {
        name: named.get(name, "os_error")
        for name in sorted(set(errno.errorcode.values()) | set(named))
        if name not in _PROGRAM_ERRNOS
    }


def _os_error_pattern() -> re.Pattern[str]:
    """The environment errnos no named kind lists: the symbol (case kept: `EIO`, not the word "eio"), the number
    as Python and the C libraries print it (`[Errno 5]`, `errno=5`), or the C library's message for it when the
    message is specific (three words or more: "Protocol error" is also every parser's word)."""
    symbols = [s for s, kind in environment_errnos().items() if kind == "os_error" and hasattr(errno, s)]
    codes = sorted({str(getattr(errno, s)) for s in symbols}, key=len, reverse=True)
    messages = {os.strerror(getattr(errno, s)) for s in symbols}
    words = "|".join(re.escape(m) for m in sorted(messages) if len(m.split()) >= 3 and "Unknown error" not in m)
    number = rf"\[Errno ({'|'.join(codes)})\]|\berrno[ =:]+({'|'.join(codes)})\b"
    return re.compile(rf"(?<![\w-])(?:{'|'.join(sorted(symbols))})(?![\w-])|{number}|(?i:(?<!\w)(?:{words}))")


# How a runtime reports that a process ended by a signal: by name or number ("killed by signal 15", "terminated by
# SIGTERM", Go's and Rust's "signal: terminated", Python's `<Signals.SIGXCPU: 24>`), by the C library's name for
# it followed by "(core dumped)" (the shell), or by the exit status a shell or container runtime gives it: 128 + N
# (docker's 143), a negative return code (Python's subprocess).
_DEATH_BY = re.compile(
    r"(?:killed|terminated|died|stopped|exited|ended|aborted)\s+(?:by|with|on|from|due to)?\s*"
    r"(?:fatal\s+)?signal[:\s]+(?:(\d{1,2})\b|(SIG[A-Z0-9]+)|([a-z][a-z ]+[a-z]))"
    r"|\bsignal:\s*(?:(\d{1,2})\b|(SIG[A-Z0-9]+)|([a-z][a-z ]+[a-z]))"
    r"|<Signals\.(SIG[A-Z0-9]+):\s*\d+>"
    r"|\b(?:terminated|killed)\s+by\s+(SIG[A-Z0-9]+)",
    re.IGNORECASE,
)
_EXIT_STATUS = re.compile(
    r"(?:exit(?:ed)?(?:\s+with)?(?:\s+(?:code|status))?|status\s+code|exited\s*\(|exit\s+status)\s*[:=]?\s*(-?\d{1,3})\b",
    re.IGNORECASE,
)
_CORE_DUMPED = re.compile(r"([A-Z][\w /()-]*?)\s*\(core dumped\)")
_SHELL_JOB = re.compile(r"\bline \d+:\s+\d+\s+([A-Z][a-z]+(?: [a-z]+)*)\s")  # bash: "line 12:  4121 Killed  node x.js"


def _signal_named(token: str) -> signal.Signals | None:
    token = token.strip()
    if token.isdigit():
        try:
            return signal.Signals(int(token))
        except ValueError:
            return None
    if token.upper().startswith("SIG"):
        return signal.Signals.__members__.get(token.upper())
    for sig in signal.Signals:
        if (signal.strsignal(sig) or "").lower() == token.lower():
            return sig
    return None


def signal_death(text: str) -> signal.Signals | None:
    """The signal a process in `text` ended by, if the text reports such a death."""
    for m in _DEATH_BY.finditer(text):
        token = next((g for g in m.groups() if g), "")
        for part in (token, *token.split()):
            sig = _signal_named(part)
            if sig is not None:
                return sig
    for m in _EXIT_STATUS.finditer(text):
        code = int(m.group(1))
        number = -code if code < 0 else code - 128 if 128 < code < 128 + 65 else None
        sig = _signal_named(str(number)) if number else None
        if sig is not None:
            return sig
    m = (_CORE_DUMPED.search(text) if "(core dumped)" in text else None) or _SHELL_JOB.search(text)
    return _signal_named(m.group(1)) if m else None


# The dynamic loader's words for a system library the machine lacks (ld.so, dlopen): an install problem.
SHARED_LIBRARY_MISSING = r"error while loading shared libraries|cannot open shared object file"
# What a failed connection to another process looks like, whatever the runtime (backing services).
CONNECTION_KINDS = ("timeout", "connection_refused", "connection_reset", "unreachable")


def _spellings(kind: str) -> list[str]:
    symbols, names = _NAMES[kind]
    out = list(names)
    for symbol in symbols:
        code = getattr(errno, symbol, None)
        out.append(rf"\b{symbol}\b")
        if code is not None:
            message = os.strerror(code)
            if not message.startswith("Unknown error"):
                out.append(re.escape(message))
    return out


def _compile(kinds: tuple[str, ...] | list[str]) -> re.Pattern[str]:
    parts = [s if s.startswith(r"\b") else rf"(?<!\w){s}" for k in kinds for s in _spellings(k)]
    return re.compile("|".join(parts), re.IGNORECASE)


PATTERNS: dict[str, re.Pattern[str]] = {kind: _compile([kind]) for kind in _NAMES}
PATTERNS["os_error"] = _os_error_pattern()
CONNECTION_FAILED = _compile(CONNECTION_KINDS)


__all__ = [
    "CONNECTION_FAILED",
    "CONNECTION_KINDS",
    "PATTERNS",
    "SENT_SIGNALS",
    "SHARED_LIBRARY_MISSING",
    "environment_errnos",
    "signal_death",
]
