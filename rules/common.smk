# Helpers and input functions. Rule files hold rules only.
import json
import os
import re
import sys
from pathlib import Path
from types import SimpleNamespace

BASE = Path(workflow.basedir)
sys.path.insert(0, str(BASE / "scripts"))
# Jobs import this workflow's own package, whatever copy of edm-ars is installed (Snakemake only
# appends the script folder to sys.path, after site-packages and their .pth entries).
os.environ.update(
    PYTHONPATH=os.pathsep.join(
        p for p in (str(BASE / "scripts"), os.environ.get("PYTHONPATH", "")) if p
    )
)

from edm_ars.data.datasets.adapters import adapter as _adapter  # noqa: E402
from edm_ars.core.errors import DataError, EdmArsError  # noqa: E402
from edm_ars.run.gates import MODES, subjects  # noqa: E402
from edm_ars.core.conventions import STACKING  # noqa: E402
from edm_ars.data.registry import load_registry  # noqa: E402
from edm_ars.analysis.stability import perturbations  # noqa: E402
from edm_ars.analysis.splits import extra_splits  # noqa: E402


def workflow_file(*parts):
    """A file of the workflow (registry, config, prompts), as a path relative to the working directory: a
    project directory that is moved or copied (`cp -a`), or reached through another mount point on a
    cluster node, keeps the same input paths, so nothing reruns."""
    return os.path.relpath(BASE.joinpath(*parts))


STAGES = ["formulate", "engineer", "analyze"]
# The data set: its registry (file or folder) and where its rows come from (registry/datasets.yaml, or
# dataset=csv path=... registry=...). Repository files are addressed from the workflow's folder, so
# `--directory` may point anywhere.
try:
    ADAPTER = _adapter(config["dataset"], config, BASE / "registry")
    REGISTRY = load_registry(ADAPTER.registry)
    if not ADAPTER.generated and not Path(ADAPTER.raw_path(config)).is_file():
        raise DataError(ADAPTER.missing_message(ADAPTER.raw_path(config), REGISTRY))
except EdmArsError as _exc:
    # a missing file or a registry that is not valid YAML: the message alone, without the Snakefile's frames
    sys.exit(f"EDM-ARS: {_exc}")
REGISTRY_FILES = [os.path.relpath(f) for f in ADAPTER.registry_files()]
DATASET_INDEX = workflow_file("registry", "datasets.yaml")
LAYOUT_FILE = ADAPTER.layout_file(REGISTRY) and os.path.relpath(
    ADAPTER.layout_file(REGISTRY)
)
BIBLIOGRAPHY = [
    workflow_file("registry", "bibliography", name)
    for name in ("references.bib", "topics.yaml")
]
PAPER_TEMPLATE = workflow_file("config", "paper_template.tex")
RUBRIC = workflow_file("config", "rubric.yaml")
FIGURE_PHASES = ["evaluate", "explain", "fairness"]
# The files of a figure directory that `snakemake --report` shows, one item per figure: its PDF (the directory
# also holds each figure's PNG rendering, for the model Critic, and Snakemake's .snakemake_timestamp).
FIGURE_PATTERNS = ["{figure}.pdf"]


wildcard_constraints:
    round=r"\d+",
    model=r"[a-z_]+",
    perturbation=r"[a-z]+_[a-z0-9]+",
    split=r"[1-9]\d*",
    gate=r"formulate|engineer|analyze|critique|write",
    branch=r"[1-9]\d*",
    paper=r"paper|branch_[1-9]\d*/paper",


# ---- candidate studies (branches) -----------------------------------------------------------
# `branches=N` runs N candidate studies of the data set side by side; every per-study path is
# output/branch_<b>/..., logs/branch_<b>/... and benchmarks/branch_<b>/... A rule (`select`) ranks the reviewed
# branches and the paper output/paper.pdf is written for the chosen one (with `papers=all`, every branch also
# gets output/branch_<b>/paper.pdf).
BRANCHES = list(range(1, int(config["branches"]) + 1))
# A screening design (config `screening`): with several branches, round 0 of every branch is a screening round
# (the screening families only; no perturbation, repeated-split or supplementary analyses), debated and reviewed;
# `select` ranks those reviews, and the chosen branch (every branch with papers=all) goes on to round 1, the full
# analysis, reviewed again and revised as usual. With one branch there is no screening.
SCREENING = len(BRANCHES) > 1 and bool(config["screening"]["enabled"])


def screening_round(b, r):
    """Whether round r of branch b is a screening round (round 0 of each branch when the run screens)."""
    return SCREENING and int(r) == 0


def analysed_in_full(b):
    """Whether branch b goes on from its screening round to the full analysis: once the selection exists, the
    chosen branch does (every branch with papers=all), unless its screening review aborted it.
    """
    if not SCREENING:
        return True
    if not Path(SELECTION).exists() or verdict_of(b, 0) in (None, "ABORT"):
        return False
    return config["papers"] == "all" or int(b) == chosen_branch()


def selection_dependency(wildcards=None):
    """output/selection.json as an input of the jobs whose inputs depend on a branch's final round, when the run
    screens: the selection decides whether a branch goes on to its full round, so they are re-evaluated when
    `select` writes it."""
    return {"selection": SELECTION} if SCREENING else {}


def chosen_branch():
    """The selected branch as output/selection.json says now; branch 1 while there is no selection yet.

    Read as a plain file, as the reviews are (see final_round): every job that takes output/selection.json as
    input (the paper's jobs, the default target with papers=all) is re-evaluated when the checkpoint `select`
    writes it, so a provisional branch 1 is replaced by the chosen one before any of those jobs runs.
    """
    path = Path(SELECTION)
    if not path.exists():
        return 1
    with open(path) as fh:
        return int(json.load(fh)["chosen"])


SELECTION = "output/selection.json"


def paper_branch(wildcards):
    """The branch a paper (wildcard `paper`) is written for: the selected one for output/paper, else its own."""
    if wildcards.paper == "paper":
        return chosen_branch()
    return int(re.fullmatch(r"branch_(\d+)/paper", wildcards.paper).group(1))


def paper_name(b):
    return f"branch_{b}/paper"


def final_targets(wildcards=None):
    """The default target's files. With papers=all, every branch's paper, or its abort report when the Critic
    aborted it (read from the selection, which lists each branch's final verdict)."""
    per_branch = [f"output/branch_{b}/revisions.md" for b in BRANCHES]
    if config["papers"] == "all":
        # the selection is an input, so this list is made again once `select` has run
        per_branch += [SELECTION] + [
            (
                f"output/branch_{b}/abort_report.json"
                if verdict_of(b, final_round(b)) == "ABORT"
                else f"output/{paper_name(b)}.pdf"
            )
            for b in BRANCHES
        ]
    return [
        "output/paper.pdf",
        "output/costs.json",
        "output/lessons.json",
        "output/findings.json",
    ] + per_branch


def lessons_store():
    from edm_ars.formulate.lessons import default_store_path

    return config["lessons"]["store"] or str(default_store_path())


def round_artifacts(wildcards):
    """Per round of a branch: the specification, data report, results and review it used (by path)."""
    b = int(wildcards.branch)
    rounds = range(final_round(b) + 1)
    return selection_dependency() | {
        "specs": [spec_for(wildcards_for(b, r))["spec"] for r in rounds],
        "reports": [engineered_for(wildcards_for(b, r))["report"] for r in rounds],
        "results": [f"output/branch_{b}/round_{r}/results.json" for r in rounds],
        "reviews": [review_file(b, r) for r in rounds],
    }


def run_reviews(wildcards=None):
    return [review_file(b, r) for b in BRANCHES for r in range(final_round(b) + 1)]


def final_reviews(wildcards=None):
    """The review of each branch's final round (the study as it stands)."""
    return [review_file(b, final_round(b)) for b in BRANCHES]


def selection_inputs(wildcards=None):
    """What the selection ranks: each branch's final review, specification, results and claims (with screening,
    its screening round's)."""
    finals = {b: 0 if SCREENING else final_round(b) for b in BRANCHES}
    return round_files(finals)


def finished_inputs(wildcards=None):
    """Each branch's study as it finished (its final round's files), for the findings store."""
    return round_files({b: final_round(b) for b in BRANCHES})


def round_files(finals):
    return {
        "reviews": [review_file(b, r) for b, r in finals.items()],
        "specs": [spec_for(wildcards_for(b, r))["spec"] for b, r in finals.items()],
        "results": [
            f"output/branch_{b}/round_{r}/results.json" for b, r in finals.items()
        ],
        "claims": [
            f"output/branch_{b}/round_{r}/claims.json" for b, r in finals.items()
        ],
    }


# ---- agents and their language models -------------------------------------------------------


def prompt_file(agent):
    return workflow_file("config", "prompts", f"{agent}.yaml")


def prompt_hash(agent):
    """Content hash of an agent's prompt file: editing the prompt reruns exactly that stage."""
    from edm_ars.llm.prompts import prompt_hash as file_hash

    return file_hash(prompt_file(agent))


def agent_settings(agent):
    """The model settings given to an agent's job; never a key, only the name of its variable.
    Offline, nothing about models is passed, so changing a model id reruns nothing."""
    if config["backend"] == "offline":
        return {"agent": agent, "backend": "offline"}
    llm = config.get("llm", {})
    per_agent = llm.get("agents", {}).get(agent, {})
    return {
        "agent": agent,
        "backend": config["backend"],
        "model": config.get("model") or per_agent.get("model", ""),
        "temperature": per_agent.get("temperature", 0.0),
        "max_tokens": per_agent.get("max_tokens", 4000),
        "timeout_s": llm.get("timeout_s", 120),
        "max_retries": llm.get("max_retries", 4),
        "base_url": config.get("base_url") or None,
        "api_key_env": config.get("api_key_env") or None,
    }


def ledgers(wildcards=None):
    """The LLM call ledgers of every agent job of the run (one file per job): the drafting of the candidate
    studies, every branch's rounds, and the papers written."""
    out = ["output/ledger/draft.jsonl"]
    for b in BRANCHES:
        out += branch_ledgers(b)
    # an aborted study has no paper, so it has no Writer ledger; the chosen branch aborted only if all did
    written = [b for b in BRANCHES if verdict_of(b, final_round(b)) != "ABORT"]
    if written:
        out.append("output/ledger/write/paper.jsonl")
    if config["papers"] == "all":
        out += [f"output/ledger/write/{paper_name(b)}.jsonl" for b in written]
    return out


def branch_ledgers(b):
    last = final_round(b)
    d = f"output/branch_{b}/ledger"
    formulate = [
        f"{d}/formulate/round_{r}.jsonl"
        for r in range(last + 1)
        if r == 0 or STAGES.index(rerun_from(b, r)) == 0
    ]
    per_round = [
        f"{d}/{agent}/round_{r}.jsonl"
        for r in range(last + 1)
        for agent in ("debate", "critique")
    ]
    return formulate + per_round + supplementary_ledgers(b, last)


def supplementary_ledgers(b, last):
    """The ledgers of the supplementary analyses' plans and slots, rounds 0..last (none when codegen.n is 0)."""
    n = config["codegen"]["n"]
    if not n:
        return []
    return [
        f"output/branch_{b}/ledger/supplementary/round_{r}{slot}.jsonl"
        for r in range(last + 1)
        if not screening_round(b, r)
        for slot in [""] + [f"_slot_{k}" for k in range(1, n + 1)]
    ]


def raw_data(wildcards=None):
    """The raw data file of the configured dataset (checked before any job starts)."""
    path = ADAPTER.raw_path(config)
    if not ADAPTER.generated and not Path(path).exists():
        raise DataError(ADAPTER.missing_message(path, REGISTRY))
    return path


def layout_input(wildcards=None):
    """The codebook layout file, for registries that name one (dataset.layout_file)."""
    return {"layout": LAYOUT_FILE} if LAYOUT_FILE else {}


def models(b, r=0):
    """The model families of round r of branch b: the configured ones and those the reviews of earlier
    rounds added."""
    from edm_ars.review.actions import added_models

    configured = config["analysis"]["models"]
    if screening_round(b, r):
        configured = config["screening"]["models"]
    return added_models([load_review(b, q) for q in range(int(r))], configured)


def base_models(b, r=0):
    """The model families of round r other than stacking (which is built from them)."""
    return [m for m in models(b, r) if m != STACKING]


def round_models(wildcards):
    return models(wildcards.branch, wildcards.round)


def round_bases(wildcards):
    return base_models(wildcards.branch, wildcards.round)


# ---- human gates ----------------------------------------------------------------------------

GATES = MODES[config["hitl"]]


def gate_subject(wildcards):
    b, r = int(wildcards.branch), int(wildcards.round)
    files = subjects(wildcards.gate, r, b)
    named = {f"subject_{i}": f for i, f in enumerate(files)}
    if wildcards.gate == "formulate":
        named["spec"] = files[0]
    if wildcards.gate == "write":
        # the Writer's gate comes after the Critic's (when the mode has both): one stage at a time
        named |= gate_approval("critique", b, r)
    return named


def gate_approval(gate, b, r):
    """The approval a downstream job waits for, when the configured mode has this gate."""
    return (
        {f"gate_{gate}": f"output/branch_{b}/gates/round_{r}/{gate}.approved.json"}
        if gate in GATES
        else {}
    )


def human_notes(stage, b, r):
    """A rejection note for a stage, as an input: when one appears, the stage reruns with it."""
    path = Path("approvals") / f"branch_{b}" / f"round_{r}" / f"{stage}.notes.json"
    return {"human_notes": str(path)} if stage in GATES and path.exists() else {}


def formulate_extras(wildcards):
    b, r = int(wildcards.branch), int(wildcards.round)
    return previous_review_input(wildcards) | human_notes("formulate", b, r)


def engineer_extras(wildcards):
    b, r = int(wildcards.branch), int(wildcards.round)
    return (
        previous_review_input(wildcards)
        | gate_approval("formulate", b, producing_round(b, "formulate", r))
        | human_notes("engineer", b, r)
    )


def analysis_gate(wildcards):
    b = int(wildcards.branch)
    return gate_approval(
        "engineer", b, producing_round(b, "engineer", int(wildcards.round))
    )


def last_round(wildcards):
    """The last round the Critic may ask for (its `max_revisions`): the configured revisions after round 0, or
    after round 1 (the full analysis) when the run screens."""
    r = int(wildcards.round)
    return int(config["max_revisions"]) + (1 if SCREENING and r >= 1 else 0)


def critic_settings(wildcards):
    """The Critic's settings for a round; at screening, the fewest individual models it accepts is the number of
    screening families (the full round is held to the configured minimum)."""
    settings = dict(config["critic"])
    if screening_round(wildcards.branch, wildcards.round):
        singles = base_models(wildcards.branch, wildcards.round)
        settings["min_models"] = min(int(config["critic"]["min_models"]), len(singles))
    return settings


def screening_facts(wildcards=None):
    """What the screening round of a run is (for analyze, select and the paper), or None when it does not screen."""
    if not SCREENING:
        return None
    skipped = ["stability perturbations", "repeated splits"]
    if config["codegen"]["n"]:
        skipped.append("supplementary analyses")
    return {
        "models": list(config["screening"]["models"]),
        "skipped": skipped,
        "full": "all" if config["papers"] == "all" else "chosen",
    }


def round_screening(wildcards):
    """A screening round's facts for its results (without which branches go on: that is the selection's)."""
    if not screening_round(wildcards.branch, wildcards.round):
        return None
    return {k: v for k, v in screening_facts().items() if k != "full"}


def critique_gate(wildcards):
    return gate_approval("analyze", int(wildcards.branch), int(wildcards.round))


def write_gates(wildcards):
    b = paper_branch(wildcards)
    r = final_round(b)
    return (
        gate_approval("critique", b, r)
        | gate_approval("write", b, r)
        | human_notes("write", b, r)
    )


# ---- the revision loop --------------------------------------------------------------------


def review_path(b, r):
    """The review of round r of branch b; asking for it makes the engine run the checkpoint first."""
    return checkpoints.critique.get(branch=b, round=r).output.review


def load_review(b, r):
    with open(review_path(b, r)) as fh:
        return json.load(fh)


def review_file(b, r):
    return f"output/branch_{b}/round_{r}/review_report.json"


def verdict_of(b, r):
    """The verdict of round r's review as the file stands now, or None while it does not exist."""
    path = Path(review_file(b, r))
    if not path.exists():
        return None
    with open(path) as fh:
        return json.load(fh)["verdict"]


def rerun_from(b, r):
    """The stage from which round r re-runs (round 0 runs everything)."""
    if r == 0:
        return STAGES[0]
    if SCREENING and r == 1:
        # the full analysis after screening: the analysis stage, or earlier when the screening review asked
        asked = load_review(b, 0)["rerun_from"] or "analyze"
        return min(asked, "analyze", key=STAGES.index)
    return load_review(b, r - 1)["rerun_from"]


def producing_round(b, stage, r):
    """The latest round <= r of branch b in which `stage` was re-run: its outputs serve round r."""
    for q in range(r, 0, -1):
        if STAGES.index(rerun_from(b, q)) <= STAGES.index(stage):
            return q
    return 0


def previous_review_input(wildcards):
    """Round r > 0 re-runs because of review r-1: the revised stage reads its instructions and the
    revision actions of every earlier review, which accumulate (after the researcher approved
    review r-1, when the mode gates the Critic)."""
    b, r = int(wildcards.branch), int(wildcards.round)
    if r == 0:
        return {}
    return {"earlier_reviews": [review_path(b, q) for q in range(r)]} | gate_approval(
        "critique", b, r - 1
    )


def spec_for(wildcards):
    b = int(wildcards.branch)
    r = producing_round(b, "formulate", int(wildcards.round))
    return {
        "spec": f"output/branch_{b}/round_{r}/research_spec.json",
        "literature": f"output/branch_{b}/round_{r}/literature_context.json",
    }


def engineered_for(wildcards):
    b = int(wildcards.branch)
    r = producing_round(b, "engineer", int(wildcards.round))
    d = f"output/branch_{b}/round_{r}/data"
    return {
        name: f"{d}/{name}.parquet"
        for name in (
            "train_X",
            "train_y",
            "train_groups",
            "test_X",
            "test_y",
            "test_protected",
            "test_groups",
        )
    } | {"report": f"{d}/data_report.json"}


def training_for(wildcards):
    files = engineered_for(wildcards)
    return {k: files[k] for k in ("train_X", "train_y", "train_groups", "report")}


def abort_review(wildcards):
    b = int(wildcards.branch)
    return review_file(b, final_round(b))


def model_round(b, m, r):
    """The round whose fit of family `m` serves round r of branch b. A revision round refits a family only
    when its data changed (the engineer stage re-ran in that round) or the round adds it, and stacking also
    when its base models changed; otherwise the earlier fit is reused by path, as stages are.
    """
    r = int(r)
    if not data_unchanged(b, r) or m not in models(b, r - 1):
        return r
    if m == STACKING and base_fits(b, r) != base_fits(b, r - 1):
        return r
    return model_round(b, m, r - 1)


def base_fits(b, r):
    """The base families of round r and the rounds whose fits serve them."""
    return {m: model_round(b, m, r) for m in base_models(b, r)}


def model_file(b, m, r, kind):
    """A fitted model's file (`joblib`, `json` or `oof.parquet`) as round r of branch b uses it."""
    return f"output/branch_{b}/round_{model_round(b, m, r)}/models/{m}.{kind}"


def fitted_models(wildcards):
    b, r = int(wildcards.branch), wildcards.round
    listed = models(b, r)
    return {m: model_file(b, m, r, "joblib") for m in listed} | {
        f"{m}_meta": model_file(b, m, r, "json") for m in listed
    }


def baseline_fits(wildcards):
    """The baselines round r uses: fitted in the round whose prepared data serve it (they depend on nothing else),
    so a revision round that keeps the data reuses them by path."""
    b = int(wildcards.branch)
    r = producing_round(b, "engineer", int(wildcards.round))
    return {
        "baselines": f"output/branch_{b}/round_{r}/models/baselines.joblib",
        "baselines_meta": f"output/branch_{b}/round_{r}/models/baselines.json",
    }


def stacking_inputs(wildcards):
    b, r = int(wildcards.branch), wildcards.round
    bases = base_models(b, r)
    return (
        training_for(wildcards)
        | {f"{m}_oof": model_file(b, m, r, "oof.parquet") for m in bases}
        | {f"{m}_meta": model_file(b, m, r, "json") for m in bases}
    )


def data_unchanged(b, r):
    """Whether round r > 0 uses the same prepared data as round r-1 (its engineer stage did not re-run)."""
    r = int(r)
    return r > 0 and producing_round(int(b), "engineer", r) < r


def earlier_round(**files):
    """An input function: the previous round's `files` (paths with {prev} for that round, and the job's
    wildcards), when the round's data are those of the previous round; else nothing. Jobs that take them
    keep each result computed there from the same inputs (edm_ars.core.reuse) instead of computing it again.
    """

    def inputs(wildcards):
        r = int(wildcards.round)
        if not data_unchanged(wildcards.branch, r):
            return {}
        return {
            k: v.format(prev=r - 1, **dict(wildcards.items())) for k, v in files.items()
        }

    return inputs


def stability_summary(wildcards):
    """stability.json for the analyze job (none in a screening round)."""
    if screening_round(wildcards.branch, wildcards.round):
        return {}
    d = f"output/branch_{wildcards.branch}/round_{wildcards.round}"
    return {"stability": f"{d}/analysis/stability.json"}


def stability_runs(wildcards):
    names = perturbations(config["analysis"]["stability"])
    d = f"output/branch_{wildcards.branch}/round_{wildcards.round}"
    return [f"{d}/analysis/stability/{p}.json" for p in names]


def split_runs(wildcards):
    """The repeated grouped splits of a round (split 0 is the main split: no job)."""
    d = f"output/branch_{wildcards.branch}/round_{wildcards.round}"
    return [
        f"{d}/analysis/splits/split_{k}.json"
        for k in extra_splits(config["analysis"]["repeated_splits"])
    ]


def split_fits(wildcards):
    """The tuned configurations (models/<m>.json) a split job refits: every single family of the round."""
    b, r = int(wildcards.branch), wildcards.round
    return {f"{m}_meta": model_file(b, m, r, "json") for m in base_models(b, r)}


def supplementary_records(wildcards):
    """The round's supplementary analyses for the analyze job: the plan and one record per slot (none when
    codegen.n is 0)."""
    n = config["codegen"]["n"]
    if not n or screening_round(wildcards.branch, wildcards.round):
        return {}
    d = f"output/branch_{wildcards.branch}/round_{wildcards.round}"
    return {
        "supplementary_plan": f"{d}/analysis/supplementary_plan.json",
        "supplementary": [f"{d}/supplementary/slot_{k}.json" for k in range(1, n + 1)],
    }


def split_summary(wildcards):
    """splits.json for the analyze job, when the study is repeated over more than one split."""
    if not extra_splits(config["analysis"]["repeated_splits"]) or screening_round(
        wildcards.branch, wildcards.round
    ):
        return {}
    d = f"output/branch_{wildcards.branch}/round_{wildcards.round}"
    return {"splits": f"{d}/analysis/splits.json"}


def final_round(b):
    """The round of branch b the paper is written from: the first whose review is PASS or ABORT (REVISE with no
    rounds left is PASS), or the first without a review yet, which is final until its review says
    otherwise. With screening, round 0 (the screening round) is final for a branch that does not go on to the
    full analysis; one that does counts from round 1.

    The reviews are read as plain files, not through the checkpoint: every job that takes them as
    input is re-evaluated when the critique that writes one finishes, and its input set then changes
    (round r's artifacts instead of round r-1's), so the engine schedules the new round whatever the
    target. Read through `checkpoints.critique.get`, a redone review that asks for a new round left
    the paper's jobs waiting for a checkpoint that nothing scheduled (with output/paper.pdf as the
    target, Snakemake 9 then rebuilt the PDF from the old paper).
    """
    if SCREENING and not analysed_in_full(b):
        return 0
    r = 1 if SCREENING else 0
    while verdict_of(b, r) == "REVISE":
        r += 1
    return r


def paper_inputs(wildcards):
    b = paper_branch(wildcards)
    r = final_round(b)
    common = {"selection": "output/selection.json", "drafts": "output/branches.json"}
    if verdict_of(b, r) == "ABORT":
        return common | {
            "review": review_file(b, r),
            "abort": f"output/branch_{b}/abort_report.json",
        }
    spec = spec_for(wildcards_for(b, r))
    data = engineered_for(wildcards_for(b, r))
    d = f"output/branch_{b}/round_{r}"
    return common | {
        "spec": spec["spec"],
        "literature": spec["literature"],
        "report": data["report"],
        "sample": str(Path(data["report"]).with_name("sample.json")),
        "results": f"{d}/results.json",
        "claims": f"{d}/claims.json",
        "figures": [f"{d}/figures/{phase}" for phase in FIGURE_PHASES],
        "review": review_file(b, r),
        "template": PAPER_TEMPLATE,
    }


def provenance_inputs(wildcards):
    """What the Writer states about the data and the run (output/<paper>/provenance.json),
    and for generated rows the recovery check against the truth (output/<paper>/recovery.json).
    """
    out = {"provenance": f"output/{wildcards.paper}/provenance.json"}
    b = paper_branch(wildcards)
    if ADAPTER.kind == "synthetic" and verdict_of(b, final_round(b)) != "ABORT":
        out["recovery"] = f"output/{wildcards.paper}/recovery.json"
    return out


def recovery_inputs(wildcards):
    """The truth of the generated data and the final round's specification and results; the round's
    review too, so that the engine re-evaluates these inputs when a redone review adds a round.
    """
    b = paper_branch(wildcards)
    r = final_round(b)
    return {
        "selection": SELECTION,
        "dgp": "output/data/dgp.json",
        "spec": spec_for(wildcards_for(b, r))["spec"],
        "results": f"output/branch_{b}/round_{r}/results.json",
        "review": review_file(b, r),
    }


def generated_truth(wildcards=None):
    """The data-generating process, for the Critic's provenance check, when the workflow generates the rows."""
    return {"dgp": "output/data/dgp.json"} if ADAPTER.kind == "synthetic" else {}


def run_config():
    """The run's configuration without any key that could hold a secret (edm_ars.run.runinfo): its hash is printed in
    the paper, so a change of any setting rewrites the availability statement."""
    from edm_ars.run.runinfo import config_snapshot

    return config_snapshot(config)


def final_round_name(wildcards):
    """The report's subcategory of a paper (or abort report): the branch and round it was written from."""
    b = (
        paper_branch(wildcards)
        if hasattr(wildcards, "paper")
        else int(wildcards.branch)
    )
    return f"branch {b}, round {final_round(b)}"


def final_round_labels(artifact):
    def labels(wildcards):
        b = (
            paper_branch(wildcards)
            if hasattr(wildcards, "paper")
            else int(wildcards.branch)
        )
        return {"artifact": artifact, "branch": str(b), "round": str(final_round(b))}

    return labels


def wildcards_for(b, r):
    return SimpleNamespace(branch=str(b), round=str(r))
