"""Files a person or an agent hands GraphLemon (playbooks, prompt files): read as UTF-8 text or refused.

Every failure is `INVALID_PARAM` naming the file and what is wrong with it (missing, a folder, unreadable,
not UTF-8), never a traceback.
"""

from __future__ import annotations

from pathlib import Path

from .errors import invalid_param


def read_text_input(path: Path | str, what: str) -> str:
    """The UTF-8 text of `path`; `what` names the file's role in the message ("playbook", "prompt file")."""
    if "\x00" in str(path) or not str(path).strip():
        raise invalid_param(f"{what} path {str(path)!r} is not a usable file name", path=str(path))
    file = Path(path)
    if not file.exists():
        raise invalid_param(f"{what} {file} does not exist", path=str(file))
    if not file.is_file():
        raise invalid_param(f"{what} {file} is not a regular file", path=str(file))
    try:
        raw = file.read_bytes()
    except PermissionError:
        raise invalid_param(f"{what} {file} cannot be read: permission denied", path=str(file)) from None
    except OSError as exc:
        raise invalid_param(f"{what} {file} cannot be read: {exc.strerror or exc}", path=str(file)) from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise invalid_param(
            f"{what} {file} is not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start}, line {line}); "
            "save it as UTF-8",
            path=str(file),
        ) from None


def existing_file(path: Path | str, what: str) -> Path:
    """`path` as an existing regular file, or INVALID_PARAM in the words every command and the console use:
    "`what` PATH does not exist" / "is a folder, not a file"."""
    file = Path(path).expanduser()
    if "\x00" in str(path) or not str(path).strip():
        raise invalid_param(f"{what} path {str(path)!r} is not a usable file name", path=str(path))
    if not file.exists():
        raise invalid_param(f"{what} {file} does not exist", path=str(file))
    if not file.is_file():
        raise invalid_param(f"{what} {file} is {'a folder' if file.is_dir() else 'not a regular file'}, not a file",
                            path=str(file))  # fmt: skip
    return file
