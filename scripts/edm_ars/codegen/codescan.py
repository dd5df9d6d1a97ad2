"""The static check of generated analysis code: the early, explainable refusal of edm_ars.codegen.sandbox.

scan() reads the source (never runs it) and names each line that imports a network, process, introspection or
download module, calls eval/exec and friends or takes them as a value (`e = exec`), reaches for dunder
attributes or, through getattr/attrgetter with a constant name, for a module or a forbidden function, calls a
library's downloader, gives a file function (open, io.FileIO, glob, pandas, numpy...) a path outside the contract
(only inputs/... and out/..., relative; a path turned into another by .replace, slicing or .format is of unknown
origin), or writes into inputs/. It is a list of rules, not a proof: the sandbox is the boundary. Standard
library only.
"""

from __future__ import annotations

import ast

#: Modules the script may not import (nor any submodule of them), each with the reason the scan gives.
#: `os` is forbidden outright (pathlib covers the contract's file access; os.environ, os.system, os.fork and
#: os.open are the escape hatches); `sys` too (sys.modules hands out any loaded module, os included).
_FORBIDDEN = {
    "network": ["socket", "ssl", "select", "selectors", "asyncio", "urllib", "urllib3", "http", "requests",
                "httpx", "aiohttp", "websocket", "websockets", "ftplib", "smtplib", "poplib", "imaplib", "nntplib",
                "telnetlib", "xmlrpc", "socketserver", "webbrowser", "paramiko", "boto3", "botocore",
                "anthropic", "openai"],
    "processes": ["subprocess", "multiprocessing", "concurrent", "threading", "_thread", "signal", "pty", "pexpect",
                  "sh", "joblib", "resource", "posix", "_posixsubprocess"],
    "the operating system": ["os", "sys", "shutil", "tempfile", "platform", "sysconfig", "fcntl", "mmap",
                             "termios", "pwd", "grp", "ctypes", "cffi", "fileinput"],
    "downloads": ["pooch", "openml", "kaggle", "gdown", "wget", "huggingface_hub", "tensorflow_datasets",
                  "torchvision", "pandas_datareader", "yfinance"],
    "code loading": ["importlib", "imp", "builtins", "runpy", "code", "codeop", "pickle", "cPickle", "dill",
                     "cloudpickle", "marshal", "shelve", "pdb", "inspect", "gc", "types", "atexit", "site"],
}
FORBIDDEN_MODULES: frozenset[str] = frozenset(name for names in _FORBIDDEN.values() for name in names)
_WHY = {name: why for why, names in _FORBIDDEN.items() for name in names}

#: builtins that run strings as code or hand out namespaces
_FORBIDDEN_CALLS = frozenset({"eval", "exec", "compile", "__import__", "globals", "locals", "vars", "breakpoint",
                              "input", "help"})
#: attribute names never allowed (frames, code objects, namespaces; links pointing out of the out folder)
_FORBIDDEN_ATTRIBUTES = frozenset({"f_globals", "f_locals", "f_builtins", "f_back", "gi_frame", "cr_frame",
                                   "tb_frame", "co_code", "symlink_to", "hardlink_to", "link_to", "eval", "exec",
                                   "read_pickle", "to_pickle", "read_sql", "read_sql_query", "read_sql_table",
                                   "to_sql", "read_clipboard", "to_clipboard"})
#: functions and methods whose first argument (or a keyword below) is a file path
_PATH_CALLS = frozenset({
    "open", "Path", "PurePath", "PosixPath", "PurePosixPath",
    "read_csv", "read_table", "read_fwf", "read_json", "read_parquet", "read_feather", "read_orc", "read_excel",
    "read_hdf", "read_stata", "read_sas", "read_spss", "read_html", "read_xml",
    "to_csv", "to_json", "to_parquet", "to_feather", "to_orc", "to_excel", "to_hdf", "to_stata", "to_html",
    "to_xml", "to_latex", "to_markdown", "to_string",
    "savefig", "imsave", "imread", "load", "loadtxt", "genfromtxt", "fromfile", "save", "savez",
    "savez_compressed", "savetxt", "tofile", "memmap", "ZipFile", "TarFile", "ExcelWriter", "FileHandler",
    "basicConfig", "FileIO", "open_code", "GzipFile", "BZ2File", "LZMAFile", "glob", "iglob",
})
#: calls that write to the path they are given (first argument or a _PATH_KEYWORDS keyword); open() and friends
#: only with a mode holding w, a, x or +
_WRITE_CALLS = frozenset({name for name in _PATH_CALLS if name.startswith("to_")} | {
    "savefig", "imsave", "save", "savez", "savez_compressed", "savetxt", "tofile", "ExcelWriter", "FileHandler",
    "basicConfig"})
_OPENING = frozenset({"open", "FileIO", "GzipFile", "BZ2File", "LZMAFile", "ZipFile", "TarFile"})
#: methods that write to or change the path they are called on (Path("inputs/x").write_text(...))
_WRITE_METHODS = frozenset({"write_text", "write_bytes", "mkdir", "touch", "unlink", "rmdir", "rename", "chmod",
                            "lchmod"})
#: methods of a clean value whose result is clean when every argument is (a literal without '/', '~' or '..' in a
#: part, a number, or a clean value): they keep a path under its folder or hand out manifest data. Any other
#: method (str.replace, .format, .removeprefix, .strip...) can turn a clean literal into any path.
_CLEAN_METHODS = frozenset({"with_suffix", "with_name", "with_stem", "joinpath", "as_posix", "read_text",
                            "read_bytes", "open", "items", "keys", "values", "get", "copy", "glob", "rglob",
                            "iterdir"})
#: methods that join a part onto a path: no literal part of theirs may climb, be absolute or home-relative
_JOINING = frozenset({"joinpath", "with_name", "with_stem", "with_suffix"})
#: methods of pathlib.Path that read, list or change the path they are called on: it must be clean
_PATH_METHODS = frozenset({"read_text", "read_bytes", "iterdir"} | _WRITE_METHODS)
#: calls that download data sets (sklearn.datasets.fetch_*, seaborn.load_dataset, statsmodels' get_rdataset,
#: keras' get_file, urllib's urlretrieve); any call named fetch_... counts too
_DOWNLOAD_CALLS = frozenset({"load_dataset", "get_rdataset", "get_file", "urlretrieve", "urlopen", "download",
                             "download_url", "hf_hub_download", "snapshot_download"})
#: modules of allowed packages that are downloaders as a whole
_DOWNLOAD_MODULES = frozenset({"shap.datasets"})
#: functions that start programs or load native code, refused as a constant name given to getattr & co.
_PROCESS_FUNCTIONS = frozenset({"system", "popen", "fork", "forkpty", "execv", "execve", "execl", "execle",
                                "execlp", "execvp", "execvpe", "spawnv", "spawnve", "spawnl", "posix_spawn",
                                "posix_spawnp", "kill", "killpg", "CDLL", "PyDLL", "cdll", "dlopen",
                                "load_library"})
_PATH_KEYWORDS = frozenset({"file", "fname", "filename", "path", "path_or_buf", "path_or_buffer",
                            "filepath_or_buffer", "io", "buf", "excel_writer"})
_CONTRACT_ROOTS = ("inputs", "out")
#: modules whose load/dump take an open handle, not a path (json.load(fh))
_HANDLE_MODULES = frozenset({"json", "yaml", "tomllib", "csv"})
#: forbidden modules reached as an attribute of an allowed one (pd.io.common.os.system), and numpy's door to
#: native code; a short list on purpose (a data frame may well have a column called `site` or `code`)
_MODULE_ATTRIBUTES = frozenset({"os", "sys", "subprocess", "socket", "shutil", "ctypes", "ctypeslib", "importlib",
                                "builtins", "multiprocessing", "pty", "posix", "_posixsubprocess", "_thread",
                                "urllib", "http", "requests", "pickle", "marshal"})
#: attributes that lead a clean path out of the contract's folders (Path("inputs").resolve().parent / "etc")
_CLIMBING = frozenset({"parent", "parents", "anchor", "root", "drive", "home", "cwd", "expanduser", "resolve",
                       "absolute", "readlink"})
#: calls whose value is clean when their first argument is (the manifest's json, a path built from one)
_PASS_THROUGH = frozenset({"Path", "PurePath", "PosixPath", "str", "load", "loads", "open", "sorted", "list",
                           "glob", "iglob"})


def _literal_problem(text: str, *, full: bool) -> str | None:
    """Why a string literal cannot be a path under the contract (None when it can). `full`: it is the whole
    path (so it must start with inputs/ or out/); otherwise any literal given to a file function (no leading
    '/', no '~' and no '..' in any of its parts; a caption's '...' is not a part)."""
    parts = text.replace("\\", "/").split("/")
    if text.startswith("/"):
        return f"absolute path {text!r}"
    if any(part.startswith("~") for part in parts):
        return f"home-relative path {text!r}"
    if ".." in parts:
        return f"path {text!r} climbs out with '..'"
    if full and not (parts[0] in _CONTRACT_ROOTS or (parts[0] == "." and len(parts) > 1
                                                      and parts[1] in _CONTRACT_ROOTS)):
        return f"path {text!r} is outside the contract (only inputs/... and out/...)"
    return None


def _attribute_problem(name: str, *, constant: bool = False) -> str | None:
    """Why an attribute name may not be reached (None when it may): `constant` for a name given as a string to
    getattr() and friends, which may also not name a forbidden module, builtin or process function."""
    if name.startswith("__") and name.endswith("__") and name not in {"__name__", "__doc__"}:
        return f"access to the attribute {name} is not allowed"
    if constant and name.startswith("_"):
        return f"access to the private attribute {name} is not allowed"
    if name in _FORBIDDEN_ATTRIBUTES:
        return f"use of .{name} is not allowed"
    if name in _MODULE_ATTRIBUTES or (constant and name in FORBIDDEN_MODULES):
        return f"access to the module {name} through an attribute is not allowed"
    if constant and (name in _FORBIDDEN_CALLS or name in _PROCESS_FUNCTIONS):
        return f"access to {name} through an attribute is not allowed"
    return None


def _call_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


class _Scanner(ast.NodeVisitor):
    """Walks the tree once; `clean` is the set of names that only ever hold contract paths or manifest data."""

    def __init__(self, clean: set[str], bindings: dict[str, list[ast.expr]]):
        self.clean = clean
        self.bindings = bindings
        self.called: set[int] = set()  # ids of Name nodes called directly (flagged as calls, not as aliases)
        self.violations: list[tuple[int, str]] = []

    def _flag(self, node: ast.AST, message: str) -> None:
        self.violations.append((getattr(node, "lineno", 0), message))

    def _module(self, node: ast.AST, dotted: str | None) -> None:
        if not dotted:
            return
        top = dotted.split(".")[0]
        if top in FORBIDDEN_MODULES:
            self._flag(node, f"import of {dotted} ({_WHY[top]}) is not allowed")
        elif any(dotted == m or dotted.startswith(m + ".") for m in _DOWNLOAD_MODULES):
            self._flag(node, f"import of {dotted} (downloads) is not allowed")
        elif any(part in _MODULE_ATTRIBUTES for part in dotted.split(".")[1:]):
            self._flag(node, f"import of {dotted} is not allowed")
        elif top.startswith("_"):
            self._flag(node, f"import of {dotted} (a private module) is not allowed")

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._module(node, alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            self._flag(node, "relative imports are not allowed (the script is a single file)")
        self._module(node, node.module)
        for alias in node.names:  # `from concurrent import futures` is caught above; this catches `from x import os`
            if alias.name in FORBIDDEN_MODULES:
                self._flag(node, f"import of {alias.name} ({_WHY[alias.name]}) is not allowed")
            elif alias.name in _MODULE_ATTRIBUTES:
                self._flag(node, f"import of {alias.name} from {node.module} is not allowed")
            elif f"{node.module}.{alias.name}" in _DOWNLOAD_MODULES or _is_download(alias.name):
                self._flag(node, f"import of {alias.name} from {node.module} (downloads) is not allowed")
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id.startswith("__") and node.id not in {"__name__", "__file__"}:
            self._flag(node, f"use of {node.id} is not allowed")
        elif node.id in _FORBIDDEN_CALLS and isinstance(node.ctx, ast.Load) and node.id not in self.bindings \
                and id(node) not in self.called:  # `e = exec`, `run(eval)`: the builtin itself, not a call
            self._flag(node, f"use of {node.id} (as a value) is not allowed")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        problem = _attribute_problem(node.attr)
        if problem:
            self._flag(node, problem)
        elif node.attr == "datasets" and _dotted(node) in _DOWNLOAD_MODULES:
            self._flag(node, f"use of {_dotted(node)} (downloads) is not allowed")
        self.generic_visit(node)

    def visit_keyword(self, node: ast.keyword) -> None:
        if node.arg == "allow_pickle" and not (isinstance(node.value, ast.Constant) and node.value.value is False):
            self._flag(node.value, "allow_pickle (loading pickles runs code) is not allowed")
        self.generic_visit(node)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        if isinstance(node.op, (ast.Div, ast.Add)):  # Path("out") / "x.png", "out/" + name
            for side in (node.left, node.right):
                if isinstance(side, ast.Constant) and isinstance(side.value, str):
                    problem = _literal_problem(side.value, full=False)
                    if problem:
                        self._flag(side, f"{problem} is not allowed")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        name = _call_name(node.func)
        if isinstance(node.func, ast.Name) and name in _FORBIDDEN_CALLS:
            self._flag(node, f"call of {name}() is not allowed")
            self.called.add(id(node.func))
        if name in {"getattr", "setattr", "delattr", "hasattr"} and isinstance(node.func, ast.Name):
            attr = node.args[1] if len(node.args) > 1 else None
            if not (isinstance(attr, ast.Constant) and isinstance(attr.value, str) and not attr.value.startswith("_")):
                self._flag(node, f"{name}() with a computed or private attribute name is not allowed")
            else:  # getattr(pd.io.common, "os"), getattr(obj, "system"), getattr(b, "exec")
                problem = _attribute_problem(attr.value, constant=True)
                if problem:
                    self._flag(node, f"{problem} (given to {name}())")
        if name in {"attrgetter", "methodcaller"}:
            names = node.args if name == "attrgetter" else node.args[:1]
            if not names or not all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in names):
                self._flag(node, f"{name}() with a computed attribute name is not allowed")
            for piece in (p for a in names if isinstance(a, ast.Constant) and isinstance(a.value, str)
                          for p in a.value.split(".")):
                problem = _attribute_problem(piece, constant=True)
                if problem:
                    self._flag(node, f"{problem} (given to {name}())")
        if name is not None and _is_download(name):
            self._flag(node, f"call of {name}() (it downloads data) is not allowed: use only the inputs")
        module_call = isinstance(node.func, ast.Name) or (
            isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name)
            and any(v is _IMPORTED for v in self.bindings.get(node.func.value.id, [_IMPORTED])))
        # glob.glob(...), io.FileIO(...), not p.glob(...)
        handle = isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name) \
            and node.func.value.id in _HANDLE_MODULES
        if name in _JOINING and isinstance(node.func, ast.Attribute):
            for value in list(node.args) + [kw.value for kw in node.keywords]:
                for piece in _string_pieces(value):
                    problem = _literal_problem(piece, full=False)
                    if problem:
                        self._flag(node, f"{problem} given to .{name}() is not allowed")
        if name in _PATH_METHODS and isinstance(node.func, ast.Attribute) and not self._is_clean(node.func.value):
            self._flag(node, f"the path .{name}() is called on is neither a literal under inputs/ or out/ nor a "
                             "value read from inputs/manifest.json")
        if name in {"glob", "rglob"} and not module_call:
            self._glob_method(node, name)
        elif name in _PATH_CALLS and not handle:
            self._path_call(node, name)
        self._writes(node, name)
        self.generic_visit(node)

    def _glob_method(self, node: ast.Call, name: str) -> None:
        """Path(...).glob(pattern): the folder must be clean, the pattern relative without '..' or '~'."""
        assert isinstance(node.func, ast.Attribute)
        if not self._is_clean(node.func.value):
            self._flag(node, f"the folder given to .{name}() is neither a literal under inputs/ or out/ nor a value "
                             "read from inputs/manifest.json")
        for value in list(node.args) + [kw.value for kw in node.keywords]:
            for piece in _string_pieces(value):
                problem = _literal_problem(piece, full=False)
                if problem:
                    self._flag(node, f"{problem} given to .{name}() is not allowed")
            if not _string_pieces(value):
                self._flag(node, f"the pattern given to .{name}() must be a literal")

    def _writes(self, node: ast.Call, name: str | None) -> None:
        """A write whose target is under inputs/ (a literal, or a value from one or from the manifest)."""
        target: ast.expr | None = None
        if name in _WRITE_CALLS or name in _OPENING:
            target = node.args[0] if node.args else next(
                (kw.value for kw in node.keywords if kw.arg in _PATH_KEYWORDS), None)
            if name in _OPENING and not _writing_mode(node, 1):
                target = None
        if isinstance(node.func, ast.Attribute) and (name in _WRITE_METHODS or (name == "open"
                                                                                and _writing_mode(node, 0))):
            target = node.func.value
        if target is not None and _root(target, self.bindings, set()) == "inputs":
            self._flag(node, f"writing into inputs/ with {name}() is not allowed (the inputs are read-only: "
                             "write under out/)")

    def _path_call(self, node: ast.Call, name: str) -> None:
        values = list(node.args) + [kw.value for kw in node.keywords]
        if node.args:  # the path argument down to its leaves: Path("out").joinpath("..", "x")
            pieces = {id(v) for n in ast.walk(node.args[0]) if isinstance(n, ast.JoinedStr) for v in n.values}
            values += [n for n in ast.walk(node.args[0])
                       if n is not node.args[0] and isinstance(n, ast.expr) and id(n) not in pieces]
        for value in values:  # no '..', '~', '/...' in any literal
            for piece in _string_pieces(value):
                problem = _literal_problem(piece, full=False)
                if problem:
                    self._flag(node, f"{problem} given to {name}() is not allowed")
        target = node.args[0] if node.args else next(
            (kw.value for kw in node.keywords if kw.arg in _PATH_KEYWORDS), None)
        if target is None or self._is_clean(target):
            return
        if isinstance(target, ast.Constant) and isinstance(target.value, str):
            problem = _literal_problem(target.value, full=True)
            self._flag(node, f"{problem} given to {name}() is not allowed")
        else:
            self._flag(node, f"the path given to {name}() is neither a literal under inputs/ or out/ nor a value "
                             "read from inputs/manifest.json")

    def _is_clean(self, node: ast.expr) -> bool:
        return _is_clean(node, self.clean)


def _is_download(name: str) -> bool:
    return name.startswith("fetch_") or name in _DOWNLOAD_CALLS


def _dotted(node: ast.expr) -> str:
    """shap.datasets for the attribute chain shap.datasets ('' when it does not end in a name)."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return ".".join([node.id, *reversed(parts)]) if isinstance(node, ast.Name) else ""


def _writing_mode(node: ast.Call, position: int) -> bool:
    """Whether open()'s mode (argument `position` or mode=) writes; a computed mode counts as writing."""
    mode = node.args[position] if len(node.args) > position else next(
        (kw.value for kw in node.keywords if kw.arg == "mode"), None)
    if mode is None:
        return False
    if isinstance(mode, ast.Constant) and isinstance(mode.value, str):
        return any(c in mode.value for c in "wax+")
    return True


def _root(node: ast.expr, bindings: dict[str, list[ast.expr]], seen: set[str]) -> str | None:
    """The contract folder a path value starts in ("inputs", "out" or None when unknown): a literal's first
    part, followed through names, attributes, indexing, '/' and '+', and calls on or of a path (the manifest,
    read from inputs/, hands out paths under inputs/). A name bound under both folders has no root (the loop
    variable reused for inputs and out; the sandbox keeps inputs/ read-only whatever the scan says)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        parts = [p for p in node.value.replace("\\", "/").split("/") if p not in {"", "."}]
        return parts[0] if parts and parts[0] in _CONTRACT_ROOTS else None
    if isinstance(node, ast.JoinedStr):
        first = node.values[0] if node.values else None
        return _root(first, bindings, seen) if isinstance(first, ast.Constant) else None
    if isinstance(node, ast.Name):
        if node.id in seen:
            return None
        roots = {_root(v, bindings, seen | {node.id}) for v in bindings.get(node.id, [])}
        known = roots - {None}
        return known.pop() if len(known) == 1 else None
    if isinstance(node, (ast.Attribute, ast.Subscript)):
        return _root(node.value, bindings, seen)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Div, ast.Add)):
        return _root(node.left, bindings, seen)
    if isinstance(node, ast.Call):
        if isinstance(node.func, ast.Attribute) and node.func.attr in _CLEAN_METHODS:
            return _root(node.func.value, bindings, seen)
        if _call_name(node.func) in _PASS_THROUGH and node.args:
            return _root(node.args[0], bindings, seen)
    return None


def _string_pieces(node: ast.expr) -> list[str]:
    """The string literals directly in a value: a constant, the constant parts of an f-string."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.JoinedStr):  # after the start, a leading '/' only separates: f"out/{a}/{b}.png"
        return [v.value.lstrip("/") if i else v.value for i, v in enumerate(node.values)
                if isinstance(v, ast.Constant) and isinstance(v.value, str)]
    return []


def _is_clean(node: ast.expr, clean: set[str]) -> bool:
    """A value that can only be a contract path or manifest data: a literal under inputs/ or out/, an f-string
    starting with one, a name that only ever holds clean values, something indexed or called on a clean value
    (manifest["x"]["path"], p.with_suffix(".png")), or a clean value joined with '/' or '+' to anything."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and _literal_problem(node.value, full=True) is None
    if isinstance(node, ast.JoinedStr):
        first = node.values[0] if node.values else None
        return isinstance(first, ast.Constant) and isinstance(first.value, str) and "/" in first.value \
            and first.value.split("/")[0] in _CONTRACT_ROOTS \
            and all(_literal_problem(piece, full=False) is None for piece in _string_pieces(node))
    if isinstance(node, ast.Name):
        return node.id in clean
    if isinstance(node, ast.Attribute):
        return node.attr not in _CLIMBING and _is_clean(node.value, clean)
    if isinstance(node, ast.Subscript):  # manifest["x"], not "out/etc/passwd"[3:]
        return not isinstance(node.slice, ast.Slice) and _is_clean(node.value, clean)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Div, ast.Add)):
        return _is_clean(node.left, clean)
    if isinstance(node, ast.Call):
        if isinstance(node.func, ast.Attribute) and node.func.attr in _CLEAN_METHODS \
                and _is_clean(node.func, clean):  # p.with_suffix(".png"), not "out/x".replace("out/x", "/etc")
            return all(_harmless_argument(a, clean) for a in list(node.args) + [k.value for k in node.keywords])
        return _call_name(node.func) in _PASS_THROUGH and bool(node.args) and _is_clean(node.args[0], clean)
    return False


def _harmless_argument(node: ast.expr, clean: set[str]) -> bool:
    """An argument that cannot steer a clean path elsewhere: a number, a literal without '/', '~' or '..' at the
    start of a part, or a clean value."""
    if isinstance(node, ast.Constant):
        return not isinstance(node.value, str) or _literal_problem(node.value, full=False) is None
    return _is_clean(node, clean)


#: the value an import binds its name to (never clean; marks a module, so glob.glob(...) is not a method call)
_IMPORTED = ast.Constant(value=None)


def _bindings(tree: ast.AST) -> dict[str, list[ast.expr]]:
    """Every value each name is bound to (assignments, for-loop targets, with ... as, comprehensions; a
    parameter, an import, a function or class name to a None that is never clean)."""
    bindings: dict[str, list[ast.expr]] = {}

    def bind(target: ast.expr, value: ast.expr) -> None:
        if isinstance(target, ast.Name):
            bindings.setdefault(target.id, []).append(value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                bind(element, value)  # `for name, entry in manifest.items()`: each part of a clean value
        elif isinstance(target, ast.Starred):
            bind(target.value, value)

    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                bind(target, node.value)
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr)) and node.value is not None:
            bind(node.target, node.value)
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            bind(node.target, node.iter)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                if item.optional_vars is not None:
                    bind(item.optional_vars, item.context_expr)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            args = node.args
            for arg in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
                if arg is not None:  # a parameter can hold anything
                    bindings.setdefault(arg.arg, []).append(ast.Constant(value=None))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bindings.setdefault(node.name, []).append(ast.Constant(value=None))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                bindings.setdefault(alias.asname or alias.name.split(".")[0], []).append(_IMPORTED)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bindings.setdefault(node.name, []).append(ast.Constant(value=None))
    return bindings


def _clean_names(bindings: dict[str, list[ast.expr]]) -> set[str]:
    """Names every binding of which is clean, found by iterating to a fixed point. A name bound anywhere to
    something else is not clean."""
    clean: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, values in bindings.items():
            if name not in clean and all(_is_clean(v, clean) for v in values):
                clean.add(name)
                changed = True
    return clean


def scan(source: str) -> list[str]:
    """Static check before anything runs: the violations as one-line messages naming the line
    ('line 3: import of socket (network) is not allowed'); [] when clean.

    Rejects imports of FORBIDDEN_MODULES (and their submodules, and private `_modules`); calls of eval, exec,
    compile, __import__, globals, locals, vars, and those builtins as values (an alias); getattr and friends
    (attrgetter, methodcaller) with a computed or private name, or a constant one naming a module, a forbidden
    builtin or a process function; dunder names and attributes (the `().__class__.__subclasses__()` family);
    pickles; links; downloaders (fetch_*, load_dataset, get_rdataset, shap.datasets, pooch...); and file access
    outside the contract: the path given to open(), io.FileIO, Path(), glob, pandas read_*/to_*, savefig,
    np.load/save... must be a literal under inputs/ or out/ (no absolute path, no '~', no '..' in any literal in
    it, nor in a part given to joinpath or a pattern given to Path.glob) or a value that comes from such a
    literal or from inputs/manifest.json (a name only ever bound to clean values, through indexing and a few
    path-keeping methods; no data-flow analysis beyond that); a write (to_*, savefig, np.save, open(..., "w"),
    write_text, mkdir...) whose path starts under inputs/ is refused. The sandbox is the real boundary; this is
    the early, explainable refusal.
    """
    try:
        tree = ast.parse(source, filename="analysis.py")
    except SyntaxError as exc:
        return [f"line {exc.lineno}: syntax error: {exc.msg}"]
    bindings = _bindings(tree)
    scanner = _Scanner(_clean_names(bindings), bindings)
    scanner.visit(tree)
    seen: set[tuple[int, str]] = set()
    ordered = [v for v in sorted(scanner.violations) if not (v in seen or seen.add(v))]
    return [f"line {line}: {message}" for line, message in ordered]
