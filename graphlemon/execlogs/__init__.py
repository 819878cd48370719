"""Execution logs (REQ-13): one raw log per work_node_execution, as a file and as ledger records.

* `records`: where a log's file is and the fold of its `execution_log_file` events (open, closed, purged,
  purge_failed).
* `write`: the file, line-buffered and redacted, and its records over the ledger; `NodeLogs.on_transition` is the
  node tracker's one seam, `write_line` every other component's.
* `read`: byte ranges cut at line ends, the last lines, following a log until it closes; never a whole file.
* `retention`: the retention setting, and purging the logs older than it (`graphlemon gc --retention`, the flow).

What a node's log looks like to the CLI and the console (the node and its log together) is `nodes.log_view`.
`GRAPHLEMON_EXEC_LOGS=off` turns the node logs off (benchmarks compare the loop with and without them).
"""

from .read import PAGE_MAX_BYTES, LogChunk, follow, line_start, read_range, tail_lines
from .records import (
    CLOSING,
    LOG_NAME,
    LOGS_DIR,
    ExecLog,
    enabled,
    file_stats,
    file_stats_size,
    fold,
    log_path,
    purged_notice,
)
from .write import LINE_MAX_CHARS, NodeLog, NodeLogs, log_test_run, write_line, writer

__all__ = [
    "CLOSING", "LINE_MAX_CHARS", "LOGS_DIR", "LOG_NAME", "PAGE_MAX_BYTES", "ExecLog", "LogChunk", "NodeLog",
    "NodeLogs", "enabled", "file_stats", "file_stats_size", "fold", "follow", "line_start", "log_path",
    "log_test_run", "purged_notice", "read_range", "tail_lines", "write_line", "writer",
]  # fmt: skip
