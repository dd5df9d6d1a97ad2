"""`edm-ars`: chores around the workflow (status, models, validate-spec, validate-registry, init-registry, approve,
reject, lessons, verify-paper, trace, metrics)."""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from edm_ars.core.artifacts import read_json
from edm_ars.core.errors import EdmArsError
from edm_ars.data.registry import load_registry
from edm_ars.formulate.spec import validate_spec
from edm_ars.run.command import snakemake_line
from edm_ars.run.gates import MODES, approve, latest_round, pending, reject, unacted_notes

if TYPE_CHECKING:
    from edm_ars.data.floors import Floors

PACKAGE_ROOT = Path(__file__).resolve().parents[2]
#: the end of `edm-ars --help`: where the documentation is
EPILOG = """documentation: docs/README.md in the repository (one page per topic: data sets and registries,
configuration, language models, human gates, candidate studies, large data, clusters and containers, after a
crash, outputs, research-agent metrics, benchmarks); `edm-ars COMMAND --help` for a command's options."""


def find_registry(dataset: str | None, explicit: str | None) -> Path:
    """A registry file or folder: the one given, or the named data set's (registry/datasets.yaml) found here,
    in a parent folder or beside the package."""
    from edm_ars.data.datasets.adapters import INDEX, adapter

    if explicit:
        return Path(explicit)
    if not dataset:
        raise EdmArsError("name a data set (--dataset NAME, as in registry/datasets.yaml) or a registry (--registry)")
    for base in [Path.cwd(), *Path.cwd().parents, PACKAGE_ROOT]:
        if (base / "registry" / INDEX).exists():
            return adapter(dataset, {}, base / "registry").registry
    raise EdmArsError(f"no registry/{INDEX} found here, in parent folders or beside the package; pass --registry")


def cmd_validate_spec(args: argparse.Namespace) -> int:
    reg_dir = find_registry(args.dataset, args.registry)
    tier2 = read_json(args.tier2, "tier2") if args.tier2 else None
    reg = load_registry(reg_dir, tier2=tier2)
    try:
        spec = json.loads(Path(args.spec).read_text())
    except FileNotFoundError as exc:
        raise EdmArsError(f"specification not found: {args.spec}") from exc
    except json.JSONDecodeError as exc:
        raise EdmArsError(f"{args.spec}: not valid JSON ({exc})") from exc
    causal = isinstance(spec, dict) and spec.get("task") == "causal"
    if causal:
        from edm_ars.causal.spec import edited_spec_problems

        violations = edited_spec_problems(spec, reg)
    else:
        violations = validate_spec(spec, reg)
    if violations:
        print(f"{args.spec}: REJECTED ({len(violations)} violation(s))")
        for v in violations:
            print(f"  - {v}")
        return 1
    if causal:
        print(f"{args.spec}: OK (causal: {spec['treatment']['variable']} on {spec['outcome']['name']}, "
              f"{len(spec['covariates'])} covariates, {spec['design']['kind']} design)")
        return 0
    print(f"{args.spec}: OK ({len(spec['predictors'])} predictors, outcome {spec['outcome']['name']})")
    return 0


#: the workflow's own configuration (the Snakefile's `configfile:`), which each --configfile updates
CONFIG_FILE = PACKAGE_ROOT / "config" / "config.yaml"


def update_config(base: dict, extra: dict) -> dict:
    """`extra` merged into `base` as Snakemake merges a --configfile into the configuration: nested mappings key by
    key, any other value replaced (the later file wins)."""
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            update_config(base[key], value)
        else:
            base[key] = value
    return base


def _config_files(configfiles: list[str]) -> list[tuple[Path, dict]]:
    """config/config.yaml beside the package, then each --configfile, each read as a YAML mapping (empty: {}).
    EdmArsError naming the file when one cannot be read or is not a mapping of settings."""
    import yaml

    from edm_ars.core.errors import yaml_problem

    docs = []
    for path in ([CONFIG_FILE] if CONFIG_FILE.exists() else []) + [Path(f) for f in configfiles]:
        try:
            doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise EdmArsError(f"config file {path}: {exc.strerror or exc}") from exc
        except yaml.YAMLError as exc:
            raise EdmArsError(f"config file {path}: not valid YAML ({yaml_problem(exc)})") from exc
        doc = {} if doc is None else doc
        if not isinstance(doc, dict):
            raise EdmArsError(f"config file {path}: holds a {type(doc).__name__}, not a mapping of settings "
                              "(e.g. the lines `engineer:` and `  min_analytic_n: 50`)")
        docs.append((path, doc))
    return docs


def run_floors(configfiles: list[str]) -> Floors:
    """The floors a run with these --configfile files would apply (edm_ars.data.floors.Floors): config/config.yaml
    beside the package, updated by each file in turn. EdmArsError naming the file when one cannot be read, is not
    a YAML mapping, sets a key the workflow does not know or gives a floor a value of the wrong kind."""
    import yaml

    from edm_ars.data.floors import Floors
    from edm_ars.run.configcheck import closest, unknown_keys

    schema_file = CONFIG_FILE.with_name("config.schema.yaml")
    schema = yaml.safe_load(schema_file.read_text(encoding="utf-8")) if schema_file.exists() else {}
    config: dict = {}
    for path, doc in _config_files(configfiles):
        unknown = unknown_keys(doc, schema)
        if unknown:
            near = closest(unknown[0], schema)
            raise EdmArsError(f"config file {path}: unknown setting '{'.'.join(unknown[0])}'"
                              + (f"; did you mean '{near}'?" if near else "; see config/config.schema.yaml"))
        Floors.from_config(doc, where=f"config file {path}")
        update_config(config, doc)
    return Floors.from_config(config)


def cmd_validate_registry(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from edm_ars.data.datasets.adapters import data_problems
    from edm_ars.data.floors import floor_problems
    from edm_ars.data.raw import read_raw
    from edm_ars.data.registry_validation import validate_registry

    try:
        floors = run_floors(args.configfile or [])
    except EdmArsError as exc:
        print(f"edm-ars: {exc}", file=sys.stderr)
        return 1
    given = {"min_analytic_n": args.min_rows, "abort_below_n": args.abort_below_n}
    floors = replace(floors, **{k: v for k, v in given.items() if v is not None})
    reg = load_registry(args.registry)
    problems, warnings = validate_registry(reg), []
    if args.data:
        frame = read_raw(args.data)
        found = data_problems(frame, reg)
        stops, caps = floor_problems(frame, reg, floors) if not found else ([], [])
        problems += [f"data {args.data}: {p}" for p in found + stops]
        warnings += [f"data {args.data}: {w}" for w in caps]
    if problems:
        print(f"{args.registry}: {len(problems)} problem(s)")
        for p in problems:
            print(f"  - {p}")
    else:
        print(f"{args.registry}: OK ({reg.name}, {len(reg.tier1)} variables, {len(reg.questions)} question(s))"
              + (f"; {args.data} matches it" if args.data else ""))
    for w in warnings:
        print(f"  warning: {w}")
    if args.data:
        print(f"  checked with engineer.min_analytic_n = {floors.min_analytic_n}, critic.abort_below_n = "
              f"{floors.abort_below_n}, engineer.min_retention = {floors.min_retention}, engineer.min_clusters = "
              f"{floors.min_clusters}, critic.min_test_n = {floors.min_test_n}, engineer.test_fraction = "
              f"{floors.test_fraction}, seed = {floors.seed} (config/config.yaml"
              + "".join(f", {f}" for f in args.configfile or []) + ")")
    return 1 if problems else 0


def cmd_init_registry(args: argparse.Namespace) -> int:
    from edm_ars.data.datasets.draft import draft_registry, render_yaml
    from edm_ars.data.raw import read_raw

    draft, notes = draft_registry(read_raw(args.data), args.data, name=args.name)
    sys.stdout.write(render_yaml(draft, notes, args.data))
    return 0


def load_config(configfiles: list[str], settings: list[str] | None = None) -> dict:
    """The configuration a run with these --configfile files and --config KEY=VALUE settings would have:
    config/config.yaml beside the package, updated by each file in turn, then by each setting (its value read as
    YAML, as Snakemake reads it). EdmArsError naming the file or setting that cannot be read."""
    import yaml

    config: dict = {}
    for _, doc in _config_files(configfiles):
        update_config(config, doc)
    for item in settings or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise EdmArsError(f"--config {item!r}: expected KEY=VALUE (e.g. backend=anthropic)")
        try:
            config[key] = yaml.safe_load(value) if value else ""
        except yaml.YAMLError:
            config[key] = value
    return config


def model_preflight(config: dict) -> tuple[list[str], str | None]:
    """The preflight of a model-backed run (edm_ars.llm.models.preflight, then, with a key, the service's answer
    for each model: service_check): its warning lines and error line."""
    from edm_ars.llm.models import preflight, service_check

    found = preflight(config)
    if found.error is None:
        service = service_check(config)
        found.warnings += service.warnings
        found.error = service.error
    return found.warnings, found.error


def cmd_status(args: argparse.Namespace) -> int:
    from edm_ars.core.runstate import describe, run_state
    from edm_ars.run.status import last_review, paper_flag, round_line

    warnings, error = model_preflight(load_config(args.configfile or [], args.config or []))
    for line in [*warnings, *([error] if error else [])]:
        print(line)
    code = 1 if error else 0
    state = run_state(args.directory)
    for line in describe(state, args.directory, resume=snakemake_line(Path(args.directory))):
        print(line)
    out = Path(args.directory) / "output"
    if not out.exists():
        print(f"no outputs yet in {Path(args.directory).resolve()} (no output/ folder; the run has just started)"
              if state.running else f"no run yet in {Path(args.directory).resolve()} (no output/ folder)")
        return code
    branches = sorted((int(m.group(1)), p) for p in out.glob("branch_*")
                      if (m := re.fullmatch(r"branch_(\d+)", p.name)))
    for b, folder in branches:
        if len(branches) > 1:
            print(f"branch {b}:")
        rounds = sorted((int(m.group(1)), p) for p in folder.glob("round_*")
                        if (m := re.fullmatch(r"round_(\d+)", p.name)))
        for r, path in rounds:
            print(("  " if len(branches) > 1 else "") + round_line(r, path))
    selection, chosen = out / "selection.json", 1
    if selection.exists():
        chosen = json.loads(selection.read_text())["chosen"]
        print(f"selected: branch {chosen} (output/selection.json)")
    waiting = pending(Path(args.directory))
    if waiting:
        print("waiting for the researcher: " + ", ".join(waiting) + " (edm-ars approve <gate>)")
    for line in unacted_notes(Path(args.directory)):  # a researcher's note a stage recorded but did not act on
        print(line)
    aborted = out / f"branch_{chosen}" / "abort_report.json"
    if aborted.exists():
        print(f"ABORTED: {json.loads(aborted.read_text())['reason']}")
    elif (out / "paper.pdf").exists():
        print(f"paper: {out / 'paper.pdf'}{paper_flag(last_review(out / f'branch_{chosen}'))}")
    elif state.running:  # the running Snakemake makes it if its target needs it: a second run would stop at the lock
        print("paper: not built yet (a Snakemake run is under way here: wait for it to end)")
    else:
        print(f"paper: not built yet ({'after the unlock above, ' if state.stale_lock else ''}"
              f"run: {snakemake_line(Path(args.directory))})")
    return code


def cmd_models(args: argparse.Namespace) -> int:
    """`edm-ars models`: models.list() with the key, each listed model with the agents using it and its prices
    (config llm.prices), then any configured model the key cannot use. 1 when an agent's model is not listed."""
    import os

    from edm_ars.llm.models import agent_models, price_text, sdk_deprecated

    config = load_config(args.configfile or [], args.config or [])
    key_env = args.api_key_env or config.get("api_key_env") or "ANTHROPIC_API_KEY"
    key = os.environ.get(key_env)
    if not key:
        raise EdmArsError(f"no API key: set {key_env} (or name another variable with --api-key-env) to list the "
                          "models it can use")
    import anthropic

    base_url = args.base_url or config.get("base_url") or None
    client = anthropic.Anthropic(api_key=key, base_url=base_url, timeout=30.0, max_retries=1)
    where = base_url or os.environ.get("ANTHROPIC_BASE_URL") or "https://api.anthropic.com"
    try:
        listed = [m.id for m in client.models.list(limit=100)]
    except anthropic.APIStatusError as exc:
        raise EdmArsError(f"{where}: the service answered HTTP {exc.status_code} to models.list() "
                          f"({exc.message}); check the key in {key_env}") from None
    except anthropic.APIConnectionError as exc:
        raise EdmArsError(f"{where}: could not reach the service ({type(exc).__name__}); check base_url and the "
                          "network") from None
    users: dict[str, list[str]] = {}
    for agent, _key, model in agent_models(config):
        users.setdefault(model, []).append(agent)
    prices = (config.get("llm") or {}).get("prices") or {}
    deprecated = sdk_deprecated()

    def line(model: str, extra: str = "") -> str:
        used = f"used by {', '.join(users[model])}" if model in users else "not used"
        price = price_text(prices[model]) if model in prices else "not priced (cost null)"
        end = f"; deprecated: end of life {deprecated[model]}" if model in deprecated else ""
        return f"{model}  {used}{extra}; {price}{end}"

    print(f"models the key in {key_env} can use at {where}: {len(listed)}")
    for model in listed:
        print(line(model))
    missing = [m for m in users if m not in listed]
    for model in missing:
        print(line(model, "; not listed for this key (the service would answer 404 not_found)"))
    return 1 if missing else 0


def _gate_round(args: argparse.Namespace) -> int:
    return args.round if args.round is not None else latest_round(args.gate, Path(args.directory), args.branch)


def cmd_approve(args: argparse.Namespace) -> int:
    r = _gate_round(args)
    path = approve(args.gate, r, Path(args.directory), note=args.note, branch=args.branch)
    print(f"approved gate '{args.gate}' (round {r}): {path}\n"
          f"Continue with: {snakemake_line(Path(args.directory))}")
    return 0


def cmd_reject(args: argparse.Namespace) -> int:
    r = _gate_round(args)
    path = reject(args.gate, r, Path(args.directory), args.note, branch=args.branch)
    print(f"sent '{args.gate}' (round {r}) back with your note ({path}); the stage reruns with it.\n"
          f"Continue with: {snakemake_line(Path(args.directory))}")
    return 0


def cmd_lessons(args: argparse.Namespace) -> int:
    from datetime import UTC, datetime

    from edm_ars.formulate.lessons import cli_lessons, default_store_path

    store = Path(args.store) if args.store else default_store_path()
    print(cli_lessons(store, datetime.now(UTC), stage=args.stage, k=args.k, all_=args.all))
    return 0


def cmd_verify_paper(args: argparse.Namespace) -> int:
    from edm_ars.writer.verify import verify_paper

    given = {}
    for pair in args.artifact or []:
        name, sep, path = pair.partition("=")
        if not sep or not name or not path:
            raise EdmArsError(f"--artifact {pair!r}: expected NAME=PATH, e.g. results.json=output/branch_1/round_0/results.json")
        given[name] = path
    report = verify_paper(args.paper, given=given or None)
    print(report.summary())
    if args.json:
        Path(args.json).write_text(json.dumps(report.to_json(), indent=2) + "\n")
    return 0 if report.ok else 1


def cmd_trace(args: argparse.Namespace) -> int:
    from edm_ars.run.trace import render_all, trace

    answer = trace(args.paper, number=args.number, macro=args.macro, page=args.page, phrase=args.phrase,
                   depth=args.depth, pdf=args.pdf)
    print(json.dumps(answer, indent=2, ensure_ascii=False) if args.json else render_all(answer))
    return 0 if answer["ok"] else 1


def cmd_metrics(args: argparse.Namespace) -> int:
    from edm_ars.run.agent_metrics import NotARun, aggregate, collect
    from edm_ars.run.metrics_text import render, render_many

    try:
        runs = [collect(d) for d in args.run_dir or ["."]]
    except NotARun as exc:
        raise EdmArsError(str(exc)) from exc
    if args.json:
        out: dict = {"runs": runs}
        if len(runs) > 1:
            out["across_runs"] = aggregate(runs)
        print(json.dumps(out, indent=2))
        return 0
    print("\n\n".join(render(m) for m in runs))
    if len(runs) > 1:
        print()
        print(render_many(runs, [Path(m["run"]).name or m["run"] for m in runs]))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="edm-ars", description=__doc__, epilog=EPILOG,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("validate-spec", help="check a research specification against the registry")
    p.add_argument("spec")
    p.add_argument("--dataset", help="a data set named in registry/datasets.yaml")
    p.add_argument("--registry", help="a registry file or folder (instead of --dataset)")
    p.add_argument("--tier2", help="output/registry/tier2.json, to accept Tier 2 predictors")
    p.set_defaults(func=cmd_validate_spec)
    r = sub.add_parser("validate-registry", help="check a registry, and a data file against it")
    r.add_argument("registry", help="a registry file (REG.yaml) or folder")
    r.add_argument("--data", help="a CSV to check against the registry, column by column")
    r.add_argument("--configfile", action="append", metavar="FILE",
                   help="a YAML file of settings, as passed to snakemake --configfile (repeatable; later files win): "
                   "the floors are the run's, config/config.yaml updated by these")
    r.add_argument("--min-rows", type=int, default=None,
                   help="the floor of analytic cases (engineer.min_analytic_n; default: the configuration's)")
    r.add_argument("--abort-below-n", type=int, default=None,
                   help="the Critic's floor of analytic cases (critic.abort_below_n; default: the configuration's)")
    r.set_defaults(func=cmd_validate_registry)
    i = sub.add_parser("init-registry", help="draft a registry for a CSV (printed; edit it before a run)")
    i.add_argument("data", help="the CSV file")
    i.add_argument("--name", help="the data set's name (default: the file's stem)")
    i.set_defaults(func=cmd_init_registry)
    s = sub.add_parser("status", help="where the run in a workflow directory stands")
    s.add_argument("--directory", "-d", default=".")
    s.add_argument("--configfile", action="extend", nargs="+", metavar="FILE",
                   help="the run's config file(s) (as snakemake --configfile); its models are checked")
    s.add_argument("--config", action="extend", nargs="+", metavar="KEY=VALUE",
                   help="the run's settings (as snakemake --config, e.g. backend=anthropic model=...)")
    s.set_defaults(func=cmd_status)
    mo = sub.add_parser("models", help="the models the API key can use, which agent uses which, and their prices")
    mo.add_argument("--configfile", action="extend", nargs="+", metavar="FILE", help="the run's config file(s)")
    mo.add_argument("--config", action="extend", nargs="+", metavar="KEY=VALUE",
                    help="the run's settings (as snakemake --config, e.g. model=...)")
    mo.add_argument("--base-url", help="the API's URL (default: the config's base_url, else the SDK's)")
    mo.add_argument("--api-key-env", help="the variable holding the key (default: the config's, else "
                    "ANTHROPIC_API_KEY)")
    mo.set_defaults(func=cmd_models)
    for name, helptext in (("approve", "approve a human gate so the run continues"),
                           ("reject", "send a gated stage back with a note (its revision instruction)")):
        g = sub.add_parser(name, help=helptext)
        g.add_argument("gate", choices=MODES["step-by-step"])
        g.add_argument("--round", type=int, default=None, help="round (default: the latest with artifacts)")
        g.add_argument("--branch", type=int, default=1, help="candidate study (branch) of the run (default: 1)")
        g.add_argument("--note", required=name == "reject")
        g.add_argument("--directory", "-d", default=".")
        g.set_defaults(func=cmd_approve if name == "approve" else cmd_reject)
    ls = sub.add_parser("lessons", help="lessons from earlier runs, ranked by severity x recency")
    ls.add_argument("--store", help="the store (default: the user's data directory)")
    ls.add_argument("--stage", choices=["formulate", "engineer", "analyze", "write"],
                    help="only that stage's lessons")
    ls.add_argument("-k", type=int, default=10)
    ls.add_argument("--all", action="store_true", help="every stored lesson, expired ones too")
    ls.set_defaults(func=cmd_lessons)
    v = sub.add_parser("verify-paper", help="reconcile a paper's numbers and citations with the run's artifacts, "
                       "and check that its claims are consistent with each other and with the evidence")
    v.add_argument("paper", help="the paper's LaTeX source (output/paper/paper.tex)")
    v.add_argument("--artifact", action="append", metavar="NAME=PATH",
                   help="an artifact to check against (default: those listed in sources.json beside the paper)")
    v.add_argument("--json", help="write the full report (every number, how it matched) to this file")
    v.set_defaults(func=cmd_verify_paper)
    m = sub.add_parser("metrics", help="research-agent metrics of runs: step success and completion per stage, "
                       "cost, diversity of the candidate studies, utility, validity on generated data")
    m.add_argument("run_dir", nargs="*", help="run directories (default: the current one)")
    m.add_argument("--json", action="store_true", help="print the metrics as JSON")
    m.set_defaults(func=cmd_metrics)
    t = sub.add_parser("trace", help="where a number of the paper comes from: its macro, source, artifact field, "
                       "and the rule, inputs and script of the job that wrote it")
    t.add_argument("number", nargs="?", help="a number as printed in the paper (0.812, 23,503, 84.4%%)")
    t.add_argument("--macro", help="a number macro of the paper (PrimaryEst or \\PrimaryEst)")
    t.add_argument("--page", type=int, help="a page of the PDF (with --phrase): the numbers of the sentence that "
                   "holds the phrase are traced")
    t.add_argument("--phrase", help="words of the sentence on --page")
    t.add_argument("--paper", default="output/paper", help="the paper's folder (default: output/paper)")
    t.add_argument("--pdf", help="the PDF for --page (default: paper.pdf beside the paper's folder)")
    t.add_argument("--depth", type=int, default=1, help="levels of jobs to follow: 1 the job that wrote the "
                   "artifact, 2 also the jobs that wrote its inputs, and so on (default: 1)")
    t.add_argument("--json", action="store_true", help="print the chains as JSON")
    t.set_defaults(func=cmd_trace)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except EdmArsError as exc:
        print(f"edm-ars: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # a file given on the command line that is missing or unreadable: one line, no frames
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"edm-ars: {where}{exc.strerror or exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
