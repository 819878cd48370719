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
        ),
    ),  # fmt: skip
    "unreachable": (
        ("ENETUNREACH", "EHOSTUNREACH", "ENETDOWN", "EHOSTDOWN"),
        ("NetworkUnreachable", "HostUnreachable", "NetworkDown", "NoRouteToHostException"),
    ),
    "out_of_resources": (
        ("EMFILE", "ENFILE", "ENOMEM"),
        ("OutOfMemoryError", "OutOfMemory", "heap out of memory", "MemoryError", "Too many open files"),
    ),
    "killed": (
        (),
        (
            "SIGKILL",
            r"oom[- ]?kill\w*",
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
    # the host's clock set back or forward under the running processes (chronyd, ntpd, systemd)
    "clock_stepped": (
        (),
        (r"clock (?:was |has been )?stepped", r"clock wrong by", r"step time server", "Time has been changed"),
    ),
    "connection_refused": (("ECONNREFUSED",), ("ConnectionRefused", "java.net.ConnectException")),
    "connection_reset": (
        ("ECONNRESET", "EPIPE", "ECONNABORTED"),
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
CONNECTION_FAILED = _compile(CONNECTION_KINDS)


__all__ = ["CONNECTION_FAILED", "CONNECTION_KINDS", "PATTERNS", "SHARED_LIBRARY_MISSING"]
