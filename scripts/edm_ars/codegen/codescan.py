"""The static check of generated analysis code: the early, explainable refusal of edm_ars.codegen.sandbox.

scan() reads the source (never runs it) and names each line that imports a network, process or introspection
module, calls eval/exec and friends, reaches for dunder attributes, or gives a file function a path outside
the contract (only inputs/... and out/..., relative). It is a list of rules, not a proof: the sandbox is the
boundary. Standard library only.
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
                             "termios", "pwd", "grp", "ctypes", "cffi"],
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
    "basicConfig",
})
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
_PASS_THROUGH = frozenset({"Path", "PurePath", "PosixPath", "str", "load", "loads", "open", "sorted", "list"})


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


def _call_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


class _Scanner(ast.NodeVisitor):
    """Walks the tree once; `clean` is the set of names that only ever hold contract paths or manifest data."""

    def __init__(self, clean: set[str]):
        self.clean = clean
        self.violations: list[tuple[int, str]] = []

    def _flag(self, node: ast.AST, message: str) -> None:
        self.violations.append((getattr(node, "lineno", 0), message))

    def _module(self, node: ast.AST, dotted: str | None) -> None:
        if not dotted:
            return
        top = dotted.split(".")[0]
        if top in FORBIDDEN_MODULES:
            self._flag(node, f"import of {dotted} ({_WHY[top]}) is not allowed")
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
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id.startswith("__") and node.id not in {"__name__", "__file__"}:
            self._flag(node, f"use of {node.id} is not allowed")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr.startswith("__") and node.attr.endswith("__") and node.attr not in {"__name__", "__doc__"}:
            self._flag(node, f"access to the attribute {node.attr} is not allowed")
        elif node.attr in _FORBIDDEN_ATTRIBUTES:
            self._flag(node, f"use of .{node.attr} is not allowed")
        elif node.attr in _MODULE_ATTRIBUTES:
            self._flag(node, f"access to the module {node.attr} through an attribute is not allowed")
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
        if name in {"getattr", "setattr", "delattr", "hasattr"} and isinstance(node.func, ast.Name):
            attr = node.args[1] if len(node.args) > 1 else None
            if not (isinstance(attr, ast.Constant) and isinstance(attr.value, str) and not attr.value.startswith("_")):
                self._flag(node, f"{name}() with a computed or private attribute name is not allowed")
        handle = isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name) \
            and node.func.value.id in _HANDLE_MODULES
        if name in _PATH_CALLS and not handle:
            self._path_call(node, name)
        self.generic_visit(node)

    def _path_call(self, node: ast.Call, name: str) -> None:
        for value in list(node.args) + [kw.value for kw in node.keywords]:  # no '..', '~', '/...' in any literal
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


def _string_pieces(node: ast.expr) -> list[str]:
    """The string literals directly in a value: a constant, the constant parts of an f-string."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.JoinedStr):
        return [v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str)]
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
    if isinstance(node, ast.Subscript):
        return _is_clean(node.value, clean)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Div, ast.Add)):
        return _is_clean(node.left, clean)
    if isinstance(node, ast.Call):
        if isinstance(node.func, ast.Attribute) and _is_clean(node.func, clean):
            return True
        return _call_name(node.func) in _PASS_THROUGH and bool(node.args) and _is_clean(node.args[0], clean)
    return False


def _clean_names(tree: ast.AST) -> set[str]:
    """Names every binding of which is clean (assignments, for-loop targets, with ... as, comprehensions),
    found by iterating to a fixed point. A name bound anywhere to something else is not clean."""
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
    compile, __import__, globals, locals, vars; getattr and friends with a computed or private name; dunder
    names and attributes (the `().__class__.__subclasses__()` family); pickles; links; and file access outside
    the contract: the path given to open(), Path(), pandas read_*/to_*, savefig, np.load/save... must be a
    literal under inputs/ or out/ (no absolute path, no '~', no '..' in any literal given to such a call) or a
    value that comes from such a literal or from inputs/manifest.json (a name only ever bound to clean values;
    no data-flow analysis beyond that). The sandbox is the real boundary; this is the early, explainable refusal.
    """
    try:
        tree = ast.parse(source, filename="analysis.py")
    except SyntaxError as exc:
        return [f"line {exc.lineno}: syntax error: {exc.msg}"]
    scanner = _Scanner(_clean_names(tree))
    scanner.visit(tree)
    seen: set[tuple[int, str]] = set()
    ordered = [v for v in sorted(scanner.violations) if not (v in seen or seen.add(v))]
    return [f"line {line}: {message}" for line, message in ordered]
