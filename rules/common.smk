# Helpers shared by several stages: the workflow's paths, the data set, branches and rounds, the agents' settings,
# the human gates' approvals and the revision loop. A stage's own input functions are in rules/<stage>_inputs.smk,
# included by its rule file (snakemake --lint wants rules and functions in separate files).
import json
import os
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
from edm_ars.run.gates import MODES  # noqa: E402
from edm_ars.core.conventions import STACKING  # noqa: E402
from edm_ars.data.registry import load_registry  # noqa: E402
from edm_ars.data.registry_causal import question_task as _question_task  # noqa: E402
from edm_ars.causal.spec import study_question as _study_question  # noqa: E402


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
# The kind of study (registry question `task:`, prediction or causal) is decided when the workflow is planned, from
# the question a run studies (question=, else the one the prompt matches, else the default): a causal question
# runs the causal study's rules (rules/causal.smk) instead of the prediction study's.
try:
    QUESTION = _study_question(
        REGISTRY, config["question"] or None, config["prompt"] or None
    )
except EdmArsError as _exc:
    sys.exit(f"EDM-ARS: {_exc}")
TASK = _question_task(QUESTION)
if TASK == "causal" and int(config["branches"]) != 1:
    sys.exit(
        f"EDM-ARS: question {QUESTION['id']} is a causal question, which runs one study: branches="
        f"{config['branches']} is for prediction questions (set branches=1)"
    )
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


def chosen_branch():
    """The selected branch as output/selection.json says now; branch 1 while there is no selection yet.

    Read as a plain file, as the reviews are (see final_round): every job that takes output/selection.json as
    input (the paper's jobs, the default target with papers=all) is re-evaluated when the checkpoint `select`
    writes it, so a provisional branch 1 is replaced by the chosen one before any of those jobs runs.
    """
    path = Path(SELECTION)
    if TASK == "causal" or not path.exists():
        return 1
    with open(path) as fh:
        return int(json.load(fh)["chosen"])


SELECTION = "output/selection.json"


def paper_name(b):
    return f"branch_{b}/paper"


def final_targets(wildcards=None):
    """The default target's files. With papers=all, every branch's paper, or its abort report when the Critic
    aborted it (read from the selection, which lists each branch's final verdict)."""
    if TASK == "causal":
        return ["output/paper.pdf", "output/costs.json"]
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


def final_reviews(wildcards=None):
    """The review of each branch's final round (the study as it stands)."""
    return [review_file(b, final_round(b)) for b in BRANCHES]


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
        "temperature": per_agent.get(
            "temperature"
        ),  # only models that take sampling parameters have one
        "effort": per_agent.get(
            "effort"
        ),  # output_config.effort of the current models (low | medium | high)
        "max_tokens": per_agent.get("max_tokens", 4000),
        "timeout_s": llm.get("timeout_s", 120),
        "max_retries": llm.get("max_retries", 4),
        "prompt_caching": llm.get("prompt_caching", True),
        "base_url": config.get("base_url") or None,
        "api_key_env": config.get("api_key_env") or None,
    }


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


# ---- human gates ----------------------------------------------------------------------------

GATES = MODES[config["hitl"]]


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


def levels_for(wildcards):
    """The cluster ids of every declared level for the training and test rows of the round's engineered data."""
    b = int(wildcards.branch)
    d = f"output/branch_{b}/round_{producing_round(b, 'engineer', int(wildcards.round))}/data"
    return {name: f"{d}/{name}.parquet" for name in ("train_levels", "test_levels")}


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


def wildcards_for(b, r):
    return SimpleNamespace(branch=str(b), round=str(r))
