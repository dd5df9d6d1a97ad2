"""The configuration's keys: the schema knows exactly the keys the code reads, the table of docs/configuration.md
lists exactly the schema's keys, and an unknown key (a typo on the command line, in a --configfile) stops the run
with one line.

What the static walk over the code covers (`code_paths`), without running the workflow:

- Snakefile and rules/*.smk (text): `config["a"]["b"]`, `config.get("a")` and chains of both; local names bound
  to such a chain (`llm = config.get("llm", {})`, then `llm.get("timeout_s")`); a key that is not a literal
  (`.get(agent, {})`) is the data key `*` of an open map; `lookup(dpath="a/b", within=config)`; the comprehension
  `{key: config["a"][key] for key in ("x", "y")}`.
- Rule params bound to a config section or value (`protocol=lookup(dpath="engineer", within=config)`, the
  comprehension above) and config chains passed to functions of edm_ars from the rule files
  (`perturbations(config["analysis"]["stability"])`, `ADAPTER.raw_path(config)`, imports `as` other names
  followed).
- scripts/edm_ars/**/*.py (AST): `smk.params.<name>` of such a param, names assigned from it (`cfg =
  smk.params.codegen`), and, through calls, the parameters of the functions and methods of edm_ars they are passed
  to (by position or keyword, any depth; `self.<attr>` assigned from one is followed in the class's methods);
  on all of those, `x["k"]`, `x.get("k")`, `(x.get("k") or {})` and chains of them; `Cls(**x["k"])` reads the
  fields of the dataclass Cls.
- registry/datasets.yaml: a file data set's `config_key` is read as `data.<config_key>` (edm_ars.data.datasets).

Not covered: keys built at run time other than those above, and config values passed through containers the
walk does not follow (a list, a dataclass attribute); the whole configuration given to runinfo.config_snapshot is
provenance (every key), not a read of any one key."""

from __future__ import annotations

import ast
import copy
import functools
import re
from pathlib import Path

import pytest
import yaml
from workflow import snakemake

from edm_ars.run.configcheck import closest, message, origin, schema_paths, unknown_keys, unknown_setting

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_FILE = ROOT / "config" / "config.schema.yaml"
SCHEMA = yaml.safe_load(SCHEMA_FILE.read_text())
RULE_FILES = [ROOT / "Snakefile", *sorted((ROOT / "rules").glob("*.smk"))]
PY_FILES = sorted((ROOT / "scripts" / "edm_ars").rglob("*.py"))

Key = tuple[str, ...]

# ---- the code's reads: rule files ------------------------------------------------------------------------------

_STEP = re.compile(r"""\s*(?:\[\s*(?:"(\w+)"|'(\w+)'|(\w+))\s*\]|\.get\(\s*(?:"(\w+)"|'(\w+)'|(\w+))\s*(?=[,)]))""")


def _open_maps() -> set[Key]:
    return {p[:-1] for p in schema_paths(SCHEMA) if p[-1] == "*"}


def _close(text: str, start: int) -> int:
    """The index after the parenthesis closing the call whose arguments continue at text[start:]."""
    depth = 1
    for i in range(start, len(text)):
        depth += text[i] in "([{"
        depth -= text[i] in ")]}"
        if depth == 0:
            return i + 1
    return len(text)


def _chain(text: str, start: int, base: Key) -> tuple[Key, int]:
    """The key path of a chain of ["k"] / .get("k", ...) steps from text[start:] on a value at `base`."""
    path = base
    while m := _STEP.match(text, start):
        literal = next((g for g in (m[1], m[2], m[4], m[5]) if g), None)
        if literal is None and path not in _open_maps():
            break  # a dynamic key of a closed section: read by a comprehension or loop (handled apart)
        path, start = (*path, literal or "*"), (m.end() if m.group(0).rstrip().endswith("]") else _close(text, m.end()))
    return path, start


def rule_reads() -> tuple[set[Key], dict[str, Key], list[tuple[str, int | str, Key]]]:
    """(paths read by the rule files, params bound to config paths, (function, position or keyword, path) of
    config chains passed to functions)."""
    reads: set[Key] = set()
    params: dict[str, Key] = {}
    calls: list[tuple[str, int | str, Key]] = []
    for f in RULE_FILES:
        text = "\n".join(line.split("#", 1)[0] if not line.lstrip().startswith(("'", '"')) else line
                         for line in f.read_text().splitlines())
        renamed = {alias: name for name, alias in re.findall(r"import (\w+) as (\w+)", text)}
        imported = {name for names in re.findall(r"^\s*from edm_ars[\w.]* import ([\w, ]+)", text, re.M)
                    for name in re.findall(r"(\w+)(?: as \w+)?", names)} | set(renamed)
        roots: dict[str, Key] = {"config": ()}
        for m in re.finditer(r"(\w+)\s*=\s*\{\s*(\w+)\s*:\s*config((?:\[\s*\"\w+\"\s*\])+)\[\s*\2\s*\]\s*for\s+\2\s+in\s*"
                             r"[(\[]([^)\]]*)[)\]]", text):
            base, _ = _chain(m[3], 0, ())
            keys = re.findall(r"[\"'](\w+)[\"']", m[4])
            reads.update((*base, k) for k in keys)
            params[m[1]] = base
        for m in re.finditer(r"(\w+)\s*=\s*lookup\(\s*dpath\s*=\s*[\"']([\w/]+)[\"']\s*,\s*within\s*=\s*config\s*\)",
                             text):
            params[m[1]] = tuple(m[2].split("/"))
        for m in re.finditer(r"lookup\(\s*dpath\s*=\s*[\"']([\w/]+)[\"']\s*,\s*within\s*=\s*config\s*\)", text):
            reads.add(tuple(m[1].split("/")))
        # local names bound to a chain (in order: `llm = config.get(...)` before `per_agent = llm.get(...)`)
        for m in re.finditer(r"^\s*(\w+)\s*=\s*(\w+)\b", text, re.M):
            if m[2] in roots and m[1] != m[2]:
                path, end = _chain(text, m.end(), roots[m[2]])
                if path != roots[m[2]]:
                    roots[m[1]] = path
        for name, base in roots.items():
            for m in re.finditer(rf"(?<![\w.=])({name})\b(?!\s*=[^=])", text):
                path, end = _chain(text, m.end(), base)
                if path != base:
                    reads.add(path)
                # the chain (or the bare root) as an argument of a call: fn(..., <chain>, ...)
                call = _enclosing_call(text, m.start(), end)
                if call and (call[0] in imported or call[0].startswith(".")):
                    fn, pos = call[0].lstrip("."), call[1]
                    calls.append((renamed.get(fn, fn), pos, path))
    return reads, params, calls


def _enclosing_call(text: str, start: int, end: int) -> tuple[str, int | str] | None:
    """(function name, positional index or keyword) when text[start:end] is an argument of a call."""
    depth, i = 0, start - 1
    while i >= 0:
        c = text[i]
        if c in ")]}":
            depth += 1
        elif c in "([{":
            if depth == 0:
                if c != "(":
                    return None
                m = re.search(r"(\.?\w+)\s*$", text[:i])
                if not m or m[1] in {"lookup", "dict", "list", "str", "int", "float", "bool", "len", "range"}:
                    return None
                before = text[i + 1:start]
                kw = re.search(r"(\w+)\s*=\s*$", before)
                if kw:
                    return m[1], kw[1]
                level, commas = 0, 0
                for ch in before:
                    level += ch in "([{"
                    level -= ch in ")]}"
                    commas += ch == "," and level == 0
                after = text[end:end + 1].strip() or text[end:].lstrip()[:1]
                return (m[1], commas) if after in {",", ")"} else None
            depth -= 1
        i -= 1
    return None


# ---- the code's reads: edm_ars -----------------------------------------------------------------------------------

class _Index:
    """Functions, methods and dataclasses of edm_ars by name."""

    def __init__(self) -> None:
        self.functions: dict[str, list[tuple[ast.FunctionDef, str | None]]] = {}
        self.classes: dict[str, list[ast.ClassDef]] = {}
        for f in PY_FILES:
            tree = ast.parse(f.read_text(), str(f))
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef):
                    self.classes.setdefault(node.name, []).append(node)
                    for item in node.body:
                        if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                            self.functions.setdefault(item.name, []).append((item, node.name))
            for node in ast.walk(tree):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and not any(
                        node is fn for fns in self.functions.values() for fn, _ in fns):
                    self.functions.setdefault(node.name, []).append((node, None))
        self.smk_functions = [fn for fns in self.functions.values() for fn, _ in fns
                              if any(a.arg == "smk" for a in fn.args.args)]

    def targets(self, name: str, where: int | str) -> list[tuple[ast.FunctionDef, str | None, str]]:
        """(function, its class, parameter) receiving argument `where` of a call of `name` (a class: its
        __init__)."""
        found = []
        candidates = list(self.functions.get(name, []))
        for cls in self.classes.get(name, []):
            candidates += [(item, cls.name) for item in cls.body
                           if isinstance(item, ast.FunctionDef) and item.name == "__init__"]
        for fn, cls in candidates:
            args = [a.arg for a in fn.args.posonlyargs + fn.args.args]
            if cls is not None and args and args[0] in {"self", "cls"}:
                args = args[1:]
            names = args + [a.arg for a in fn.args.kwonlyargs]
            if isinstance(where, str) and where in names:
                found.append((fn, cls, where))
            elif isinstance(where, int) and where < len(args):
                found.append((fn, cls, args[where]))
        return found

    def fields(self, name: str) -> list[str]:
        return [item.target.id for cls in self.classes.get(name, []) for item in cls.body
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)]


def _callee(call: ast.Call) -> str | None:
    if isinstance(call.func, ast.Name):
        return call.func.id
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    return None


def python_reads(params: dict[str, Key], calls: list[tuple[str, int | str, Key]]) -> set[Key]:
    """Repeated until the functions returning a config value (`price = self._price()`) are all known."""
    index, returns = _Index(), {}
    while True:
        reads, found = _python_pass(index, params, calls, returns)
        if found == returns:
            return reads
        returns = found


def _python_pass(index: _Index, params: dict[str, Key], calls: list[tuple[str, int | str, Key]],
                 returns: dict[str, Key]) -> tuple[set[Key], dict[str, Key]]:
    opened, found = _open_maps(), dict(returns)
    reads: set[Key] = set()
    seen: set[tuple[int, tuple[tuple[str, Key], ...]]] = set()
    work: list[tuple[ast.FunctionDef, str | None, dict[str, Key]]] = []

    def push(fn: ast.FunctionDef, cls: str | None, env: dict[str, Key]) -> None:
        mark = (id(fn), tuple(sorted(env.items())))
        if mark not in seen:
            seen.add(mark)
            work.append((fn, cls, env))

    for name, where, path in calls:
        for fn, cls, param in index.targets(name, where):
            push(fn, cls, {param: path})
    for fn in index.smk_functions:
        push(fn, None, {})

    while work:
        fn, cls, env = work.pop()
        env = dict(env)

        def resolve(node: ast.AST, record: bool = True, env: dict[str, Key] = env) -> Key | None:
            if isinstance(node, ast.Name):
                return env.get(node.id)
            if isinstance(node, ast.Attribute):
                if isinstance(node.value, ast.Name):
                    if node.value.id == "self":
                        return env.get(f"self.{node.attr}")
                if (isinstance(node.value, ast.Attribute) and node.value.attr == "params"
                        and isinstance(node.value.value, ast.Name) and node.value.value.id == "smk"):
                    return params.get(node.attr)
                return None
            if isinstance(node, ast.BoolOp):
                return resolve(node.values[0], record)
            if isinstance(node, ast.Call) and _callee(node) in returns and not (
                    isinstance(node.func, ast.Attribute) and node.func.attr == "get"):
                return returns[_callee(node)]
            key: ast.AST | None = None
            base: ast.AST | None = None
            if isinstance(node, ast.Subscript):
                base, key = node.value, node.slice
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
                  and node.args):
                base, key = node.func.value, node.args[0]
            if base is None:
                return None
            parent = resolve(base, record)
            if parent is None:
                return None
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                path = (*parent, key.value)
            elif parent in opened:
                path = (*parent, "*")
            else:
                return None
            if record:
                reads.add(path)
            return path

        for node in ast.walk(fn):
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                path = resolve(node.value, record=False)
                target = node.targets[0]
                if path is not None and isinstance(target, ast.Name):
                    env[target.id] = path
                elif (path is not None and isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                      and target.value.id == "self" and cls is not None):
                    for other, owner in (x for fns in index.functions.values() for x in fns):
                        if owner == cls:
                            push(other, cls, {f"self.{target.attr}": path})
        for node in ast.walk(fn):
            if isinstance(node, ast.Return) and node.value is not None:
                path = resolve(node.value, record=False)
                if path is not None:
                    found[fn.name] = path
            if isinstance(node, ast.Subscript | ast.Call):
                resolve(node)
            if isinstance(node, ast.Call) and (name := _callee(node)):
                for i, arg in enumerate(node.args):
                    path = resolve(arg, record=False)
                    if path is not None:
                        for target, owner, param in index.targets(name, i):
                            push(target, owner, {param: path})
                for kw in node.keywords:
                    path = resolve(kw.value, record=False)
                    if path is None:
                        continue
                    if kw.arg is None:  # Cls(**x["k"]): the dataclass's fields are read
                        reads.update((*path, f) for f in index.fields(name))
                    else:
                        for target, owner, param in index.targets(name, kw.arg):
                            push(target, owner, {param: path})
    return reads, found


def dataset_reads() -> set[Key]:
    index = yaml.safe_load((ROOT / "registry" / "datasets.yaml").read_text())
    return {("data", entry["source"]["config_key"]) for entry in index.values()
            if isinstance(entry, dict) and (entry.get("source") or {}).get("config_key")}


@functools.cache
def _code_paths() -> frozenset[Key]:
    reads, params, calls = rule_reads()
    return frozenset(reads | python_reads(params, calls) | dataset_reads())


def code_paths() -> set[Key]:
    """Every configuration key path the rules and the code read (walked once per process: the files do not change
    during a test session)."""
    return set(_code_paths())


# ---- tests -------------------------------------------------------------------------------------------------------

def _dotted(paths) -> list[str]:
    return sorted(".".join(p) for p in paths)


def compare(schema: dict, code: set[Key]) -> tuple[list[str], list[str]]:
    """(keys the code reads that the schema lacks, schema settings no code reads)."""
    known = set(schema_paths(schema))
    unknown = _dotted(p for p in code if p not in known)
    leaves = [p for p in known if not any(q[:len(p)] == p and q != p for q in known)]
    dead = _dotted(p for p in leaves if p not in code and not any(c[:len(p)] == p for c in code))
    return unknown, dead


def test_the_schema_knows_exactly_the_keys_the_code_reads():
    """Either side's extras fail: a key the code reads that the schema lacks (it would be refused), and a
    setting no code reads (a dead setting: the user sets it and nothing changes)."""
    unknown, dead = compare(SCHEMA, code_paths())
    assert not unknown, f"read by the code, not in config/config.schema.yaml: {unknown}"
    assert not dead, f"in config/config.schema.yaml, read by no code: {dead}"


def test_the_comparison_fails_on_either_side_extras():
    schema = copy.deepcopy(SCHEMA)
    del schema["properties"]["analysis"]["properties"]["shap"]["properties"]["timeout_s"]
    schema["properties"]["engineer"]["properties"]["imputation_seed"] = {"type": "integer"}
    schema["properties"]["unused"] = {"type": "string"}
    assert compare(schema, code_paths()) == (["analysis.shap.timeout_s"], ["engineer.imputation_seed", "unused"])


def test_the_walk_sees_each_kind_of_read():
    """The walk itself: one key of each kind of read it claims to cover."""
    code = code_paths()
    for path in [("dataset",), ("local_agents",), ("analysis", "leakage_auc"),  # config[...], the comprehension
                 ("llm", "timeout_s"), ("llm", "agents", "*", "model"),  # a local name, an open map's data key
                 ("engineer", "structural_above"),  # params -> a function of edm_ars (engineer.protocol)
                 ("codegen", "limits", "cpu_s"),  # Limits(**cfg["limits"])
                 ("llm", "prices", "*", "input_per_mtok"),  # keyword argument -> self.prices -> a method
                 ("analysis", "stability", "seeds"),  # a chain passed from a rule file (perturbations)
                 ("registry",), ("data", "hsls09_csv")]:  # ADAPTER.raw_path(config), registry/datasets.yaml
        assert path in code, path


def test_every_section_a_user_sets_is_closed():
    """additionalProperties: false on every object with named keys, so a key added to the schema later (another
    branch) stays closed; open maps (keys that are data) close their values."""
    def walk(node, path):
        if not isinstance(node, dict):
            return
        if node.get("properties"):
            assert node.get("additionalProperties") is False, ".".join(path) or "(top level)"
            for key, sub in node["properties"].items():
                walk(sub, (*path, key))
        if isinstance(node.get("additionalProperties"), dict):
            walk(node["additionalProperties"], (*path, "*"))

    walk(SCHEMA, ())
    assert {("llm", "agents", "*"), ("llm", "prices", "*")} <= set(schema_paths(SCHEMA))


def docs_keys() -> set[str]:
    """The keys in the configuration table of docs/configuration.md (first column: `a`, `b.c`, `d.*`)."""
    text = (ROOT / "docs" / "configuration.md").read_text()
    table = text.split("\n| key | default | meaning |\n", 1)[1].split("\n\n", 1)[0]
    keys = set()
    for line in table.splitlines():
        if line.startswith("| `"):
            keys.update(re.findall(r"`([\w.*]+)`", line.split("|")[1]))
    return keys


def test_the_docs_table_lists_exactly_the_schema_keys():
    """Each schema key is in the table, by itself or under a `section.*` row; each row names a schema key."""
    schema = [".".join(p) for p in schema_paths(SCHEMA)]
    rows = docs_keys()
    covered = set()
    for row in rows:
        if row.endswith(".*"):
            hits = [k for k in schema if k.startswith(row[:-1])]
        else:
            hits = [k for k in schema if k == row or k.startswith(f"{row}.*")]
        assert hits, f"docs/configuration.md: row `{row}` is not a key of config/config.schema.yaml"
        covered.update(hits)
    sections = {k for k in schema if any(o.startswith(f"{k}.") for o in schema)}
    missing = sorted(k for k in schema if k not in covered and k not in sections)
    assert not missing, f"schema keys missing from the configuration table of docs/configuration.md: {missing}"


def test_the_default_and_test_configurations_are_known():
    for f in (ROOT / "config" / "config.yaml", ROOT / "tests" / "workflow_config.yaml"):
        assert unknown_keys(yaml.safe_load(f.read_text()), SCHEMA) == [], f


def test_unknown_keys_are_found_at_every_level_and_named_with_the_closest_one(tmp_path):
    config = {"datset": "star", "analysis": {"bootstrapp": 3, "shap": {"max_sample": 5}},
              "llm": {"agents": {"my-agent": {"model": "m", "temperature": 0, "max_tokens": 1, "temp": 1}},
                      "prices": {"some/model:id": {"input_per_mtok": 1, "output_per_mtok": 2}}}}
    assert unknown_keys(config, SCHEMA) == [("datset",), ("analysis", "bootstrapp"),
                                             ("analysis", "shap", "max_sample"),
                                             ("llm", "agents", "my-agent", "temp")]
    assert closest(("datset",), SCHEMA) == "dataset"
    assert closest(("analysis", "shap", "max_sample"), SCHEMA) == "analysis.shap.max_samples"
    assert closest(("n_bootstrap",), SCHEMA) == "analysis.n_bootstrap"  # a nested key set at the top level
    assert closest(("zzzqq",), SCHEMA) is None
    assert message(("zzzqq",), SCHEMA, "from x") == (
        "EDM-ARS: unknown setting 'zzzqq' (from x); see config/config.schema.yaml for the known settings")
    extra = tmp_path / "extra.yaml"
    extra.write_text("analysis:\n  bootstrapp: 3\n")
    later = tmp_path / "later.yaml"
    later.write_text("seed: 1\n")
    assert origin(("datset",), {"datset": "star"}, [extra], argv=["snakemake", "--config", "datset=star"]) == (
        "from --config on the command line")
    assert origin(("datset",), {"datset": "star"}, [], argv=["snakemake"]) == "from --config in a profile"
    assert origin(("analysis", "bootstrapp"), {}, [extra, later], argv=[]).endswith(str(extra))
    assert unknown_setting({"seed": 1, "analysis": {"cv_folds": 3}}, SCHEMA_FILE) is None


def _the_line(result, key: str) -> str:
    """The one line of stderr naming the key (Snakemake's own lines, such as the profile it uses, name none)."""
    assert result.returncode != 0
    assert "Traceback" not in result.stderr and 'File "' not in result.stderr, result.stderr
    lines = [x for x in result.stderr.splitlines() if key in x or x.startswith("EDM-ARS")]
    assert len(lines) == 1, result.stderr
    return lines[0]


@pytest.mark.workflow
def test_a_typo_on_the_command_line_stops_a_dry_run_with_one_line(tmp_path):
    result = snakemake(tmp_path, "-n", "output/paper.pdf", config={"datset": "star"})
    line = _the_line(result, "datset")
    assert line == ("EDM-ARS: unknown setting 'datset' (from --config on the command line); "
                    "did you mean 'dataset'?"), line
    assert not (tmp_path / "output").exists()


@pytest.mark.workflow
def test_an_unknown_nested_key_in_a_configfile_names_the_file(tmp_path):
    result = snakemake(tmp_path, "-n", "output/paper.pdf", overrides="analysis:\n  shap:\n    max_sample: 10\n")
    line = _the_line(result, "max_sample")
    assert line == ("EDM-ARS: unknown setting 'analysis.shap.max_sample' (from config file overrides.yaml); "
                    "did you mean 'analysis.shap.max_samples'?"), line


@pytest.mark.workflow
def test_a_valid_configfile_still_passes(tmp_path):
    result = snakemake(tmp_path, "-n", "output/paper.pdf", "--quiet", "rules",
                       overrides="analysis:\n  shap:\n    max_samples: 10\nllm:\n  prices:\n"
                                 "    my/model: {input_per_mtok: 1, output_per_mtok: 2}\n",
                       config={"seed": "7"})
    assert result.returncode == 0, result.stderr[-3000:]
    assert "unknown setting" not in result.stderr


@pytest.mark.workflow
def test_a_typo_in_a_profile_is_attributed_to_the_profile(tmp_path):
    profile = tmp_path / "profile"
    profile.mkdir()
    (profile / "config.yaml").write_text("config:\n  - seeed=3\n")
    result = snakemake(tmp_path, "-n", "output/paper.pdf", "--profile", str(profile))
    line = _the_line(result, "seeed")
    assert line == "EDM-ARS: unknown setting 'seeed' (from --config in a profile); did you mean 'seed'?", line
