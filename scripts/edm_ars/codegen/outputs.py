"""Reading what a sandboxed script left behind, defensively (edm_ars.codegen.sandbox, .supplementary).

Everything in `out/` was made by code we do not trust, so nothing here may end in an exception the job cannot
turn into a dropped analysis:
- tidy() walks `out/` without recursion, top-down, and removes (never following a link) anything but files and
  folders, any entry whose name is not printable UTF-8, and any folder nested deeper than MAX_DEPTH; each removal
  is listed with why, for a one-line reason (listing()).
- remove_tree() removes a folder of any depth, locked folders included, with no recursion and no path longer
  than one name: each folder is opened through its parent's descriptor. A rerun's cleanup uses it.
- read_result() parses `out/result.json` within limits: its size, the nesting of arrays and objects, the length
  of a number's literal, finite numbers only, and strings (keys too) that are valid UTF-8 without control
  characters. A problem is a ValueError naming the key (e.g. `numbers/0/value`), never a RecursionError or an
  overflow.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from itertools import accumulate
from pathlib import Path
from typing import Any

#: folders nested in out/ deeper than this are removed (a result needs figures/, one level)
MAX_DEPTH = 8
#: out/result.json larger than this is refused unread (12 numbers and 2 figures need a few kB)
MAX_RESULT_BYTES = 1_000_000
#: arrays and objects nested deeper than this in result.json are refused (the contract needs three levels)
MAX_JSON_DEPTH = 8
#: a number literal longer than this is refused (a double needs at most 24 characters)
MAX_NUMBER_CHARS = 40
#: how many removed entries a reason names
SHOWN = 5
#: how many characters of one name a reason shows
SHOWN_CHARS = 120

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)


def _good_name(name: str) -> bool:
    """A name a record can hold: valid UTF-8 (no surrogate-escaped byte) and printable (no control character)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return name.isprintable()


def _good_text(text: str) -> bool:
    """A string a record can hold: valid UTF-8 (no lone surrogate) and no control character (tab, newline, ...)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return not _CONTROL.search(text)


def shown(text: str, file_name: bool = True) -> str:
    """`text` as one printable line of UTF-8, control characters escaped; a byte of a file name that is not UTF-8
    shown as that byte (\\xff), a lone surrogate of a JSON string as itself (\\udcff)."""
    try:
        raw = text.encode("utf-8", "surrogateescape" if file_name else "strict")
    except UnicodeEncodeError:
        raw = text.encode("utf-8", "backslashreplace")
    text = "".join(c if c.isprintable() else ascii(c)[1:-1] for c in raw.decode("utf-8", "backslashreplace"))
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + "..."


def listing(removed: list[str]) -> str:
    """The removed entries for a one-line reason: the first SHOWN, then how many more."""
    more = len(removed) - SHOWN
    return ", ".join(removed[:SHOWN]) + (f" and {more} more" if more > 0 else "")


# ---- removing ------------------------------------------------------------------------------------------------


def _unlock_at(dir_fd: int, name: str) -> None:
    """Give the owner rwx on the folder `name` in dir_fd (a script may leave a folder locked, mode 000)."""
    mode = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
    if stat.S_ISDIR(mode) and mode & 0o700 != 0o700:
        os.chmod(name, stat.S_IMODE(mode) | 0o700, dir_fd=dir_fd)


def remove_tree(path: Path) -> None:
    """Remove `path`: a file or link (never followed), or a folder with everything in it, at any depth and locked
    or not. No recursion and no long paths: it descends by opening each folder through its parent's descriptor
    and climbs back through '..', holding two descriptors at most. A missing path is no error."""
    path = Path(path)
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(mode):
        path.unlink()
        return
    top = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    fd = -1
    try:
        _unlock_at(top, path.name)
        fd = os.open(path.name, _DIR_FLAGS, dir_fd=top)
        names = [path.name]  # the folders from path down to the one fd holds
        while names:
            with os.scandir(fd) as it:
                entries = [(e.name, e.is_dir(follow_symlinks=False)) for e in it]
            sub = next((name for name, is_dir in entries if is_dir), None)
            for name, is_dir in entries:
                if not is_dir:
                    os.unlink(name, dir_fd=fd)
            if sub is not None:  # descend into the first folder left
                _unlock_at(fd, sub)
                child = os.open(sub, _DIR_FLAGS, dir_fd=fd)
                os.close(fd)
                fd = child
                names.append(sub)
                continue
            done = names.pop()  # fd is empty: climb and remove it
            if names:
                parent = os.open("..", _DIR_FLAGS, dir_fd=fd)
                os.close(fd)
                fd = parent
                os.rmdir(done, dir_fd=fd)
            else:
                os.close(fd)
                fd = -1
                os.rmdir(done, dir_fd=top)
    finally:
        if fd >= 0:
            os.close(fd)
        os.close(top)


def empty_folder(folder: Path) -> None:
    """Remove everything in `folder` (remove_tree on each entry), keeping the folder."""
    _unlock(folder)
    for name in sorted(os.listdir(folder)):
        remove_tree(Path(folder, name))


def _unlock(folder: Path) -> None:
    mode = folder.lstat().st_mode
    if mode & 0o700 != 0o700:
        os.chmod(folder, stat.S_IMODE(mode) | 0o700)


# ---- tidying out/ after a run --------------------------------------------------------------------------------


def tidy(out_dir: Path, owner: int | None) -> tuple[int, list[str]]:
    """Total bytes of the out folder's regular files, and what was removed, each as `<path> (<why>)`, sorted.

    Removes links, fifos, sockets and devices, entries whose name is not printable UTF-8, and folders nested
    deeper than MAX_DEPTH (whole, with remove_tree); hands everything kept back to `owner` when given, strips
    setuid/setgid/sticky bits and unlocks folders the script locked (mode 000), never following a link. The walk
    is an explicit stack, top-down, a folder unlocked before it is read."""
    total, removed = 0, []
    out_dir = Path(out_dir)
    _unlock(out_dir)
    stack = [(out_dir, 1)]  # a folder and the depth of its entries
    while stack:
        folder, depth = stack.pop()
        with os.scandir(folder) as it:
            entries = sorted((e.name for e in it), reverse=True)
        for name in entries:
            path = folder / name
            mode = path.lstat().st_mode
            rel = path.relative_to(out_dir).as_posix()
            why = None
            if not _good_name(name):
                why = "a name that is not printable UTF-8"
            elif stat.S_ISLNK(mode):
                why = "a link"
            elif not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                why = "neither a file nor a folder"
            elif stat.S_ISDIR(mode) and depth > MAX_DEPTH:
                why = f"folders nested deeper than {MAX_DEPTH}"
            if why:
                removed.append(f"{shown(rel)} ({why})")
                remove_tree(path)
                continue
            if owner is not None:
                os.chown(path, owner, os.getegid(), follow_symlinks=False)
            if mode & (stat.S_ISUID | stat.S_ISGID | stat.S_ISVTX):
                os.chmod(path, stat.S_IMODE(mode) & 0o777)
            if stat.S_ISDIR(mode):
                _unlock(path)
                stack.append((path, depth + 1))
            else:
                total += path.lstat().st_size
    if owner is not None:
        os.chown(out_dir, owner, os.getegid(), follow_symlinks=False)
    return total, sorted(removed)


# ---- reading out/result.json ---------------------------------------------------------------------------------


class _Refused:
    """A literal the parser met and refused; the walk after parsing names where it was."""

    def __init__(self, why: str) -> None:
        self.why = why


def _parse_int(text: str) -> int | _Refused:
    if len(text) > MAX_NUMBER_CHARS:
        return _Refused(f"a number written with {len(text)} characters (at most {MAX_NUMBER_CHARS})")
    return int(text)


def _parse_float(text: str) -> float | _Refused:
    if len(text) > MAX_NUMBER_CHARS:
        return _Refused(f"a number written with {len(text)} characters (at most {MAX_NUMBER_CHARS})")
    value = float(text)
    return value if math.isfinite(value) else _Refused(f"{text} is out of the range of a finite number")


def _parse_constant(text: str) -> _Refused:
    return _Refused(f"{text} is not a finite number")


def _nesting(text: str) -> int:
    """How deep arrays and objects nest in JSON text (strings skipped), counted without parsing."""
    skeleton = _JSON_STRING.sub("", text)
    return max(accumulate(1 if c in "[{" else -1 for c in skeleton if c in "[]{}"), default=0)


def _check_values(obj: Any) -> None:
    """Every refused literal and every string (key or value) that is not printable UTF-8, named by its key."""
    stack: list[tuple[str, Any]] = [("", obj)]
    while stack:
        where, value = stack.pop()
        if isinstance(value, _Refused):
            raise ValueError(f"{where or '(root)'}: {value.why}")
        if isinstance(value, str) and not _good_text(value):
            raise ValueError(f"{where or '(root)'}: a string that is not UTF-8 or holds a control character "
                             f"('{shown(value, file_name=False)}')")
        if isinstance(value, dict):
            for key, item in value.items():
                if not _good_text(key):
                    raise ValueError(f"{where or '(root)'}: a key that is not UTF-8 or holds a control character "
                                     f"('{shown(key, file_name=False)}')")
                stack.append((f"{where}/{key}" if where else key, item))
        elif isinstance(value, list):
            stack += [(f"{where}/{i}" if where else str(i), item) for i, item in enumerate(value)]


def read_result(path: Path, where: str = "out/result.json") -> Any:
    """The JSON value of `path` (called `where` in messages), read within the limits above; ValueError names the
    problem, and the key where there is one."""
    path = Path(path)
    size = path.lstat().st_size
    if size > MAX_RESULT_BYTES:
        raise ValueError(f"{where} holds {size} bytes, over the {MAX_RESULT_BYTES} a result may take")
    raw = path.read_bytes()[:MAX_RESULT_BYTES + 1]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{where} is not UTF-8 text (byte {raw[exc.start]:#04x} at offset {exc.start})") from None
    depth = _nesting(text)
    if depth > MAX_JSON_DEPTH:
        raise ValueError(f"{where} nests arrays and objects {depth} deep, over {MAX_JSON_DEPTH} (a result needs three)")
    try:
        obj = json.loads(text, parse_int=_parse_int, parse_float=_parse_float, parse_constant=_parse_constant)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{where} is not valid JSON ({exc})") from None
    except (RecursionError, ValueError) as exc:  # a guard only: the nesting and the literals are checked above
        raise ValueError(f"{where} cannot be read as JSON ({type(exc).__name__})") from None
    try:
        _check_values(obj)
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None
    return obj
