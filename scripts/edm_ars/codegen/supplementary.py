"""Supplementary analyses written as code and run in a sandbox (edm_ars.codegen.sandbox), with self-repair.

After a round's evaluation and explanations, the Analyst may add up to `codegen.n` analyses the question and the
results call for, each with a stated purpose and the names of the numbers it will report. With a model backend the
model writes each as one Python script against CONTRACT; offline the scripts come from a small vetted library in
this package (`supplementary_library/`), chosen by rules from the results. Every script, generated or vetted, runs
the same way: a static scan, then bubblewrap with no network, read-only inputs, a private output folder, an empty
environment and CPU, memory and wall limits. A failed attempt (refused by the scan, non-zero exit, timeout, memory,
contract or schema violation) goes back to the model with its error class, trimmed stderr and the contract, up to
`codegen.attempts` attempts; each attempt's code, output and error are kept; after the last failure the analysis is
dropped with its reason, and the study goes on. No result is ever made up: the numbers of an analysis are those its
script wrote to out/result.json.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from edm_ars.codegen.outputs import read_result, remove_tree
from edm_ars.core.artifacts import atomic_write_text, validate, write_json
from edm_ars.core.causal import causal_phrases
from edm_ars.core.errors import EdmArsError, SchemaError

NAME = re.compile(r"[a-z][a-z0-9_]{1,39}")
#: standalone numbers in a meaning or caption (identifiers such as X1SES are not numbers)
_STANDALONE_NUMBER = re.compile(r"(?<![A-Za-z0-9_.])\d+(?:\.\d+)?(?![A-Za-z0-9_])")
FIGURE_SUFFIXES = (".pdf", ".png")

#: What a script may read and must write. The model is shown this text; docs/supplementary.md quotes it.
CONTRACT = """\
Contract for a supplementary analysis script (Python 3.11; numpy, pandas, pyarrow, scipy, scikit-learn, matplotlib):
- The working folder holds `inputs/` (read-only) and `out/` (empty, the only writable place). Use these relative
  paths only: no absolute paths, no `..`, no `~`.
- Inputs: `inputs/context.json` (task, outcome, primary metric, selected model, top predictors with their columns
  and the name to call each by, seed, this analysis's name and purpose); Parquet files, read each with
  `pd.read_parquet("inputs/<name>.parquet")` (add `columns=[...]` to read only some): `inputs/train_X.parquet`,
  `inputs/train_y.parquet`, `inputs/test_X.parquet`, `inputs/test_y.parquet` (prepared, encoded predictors and the
  outcome; one column), `inputs/test_predictions.parquet` (one column of held-out predictions per model, named by
  model); `inputs/manifest.json` (the list of inputs).
- Output: write `out/result.json`, an object {"numbers": [{"name": ..., "value": ..., "meaning": ...}, ...],
  "figures": [{"file": "figures/<name>.pdf", "caption": ...}]}. `name`: lower case letters, digits and
  underscores; `value`: a finite number; `meaning`: one line saying what the number is, with no digits standing
  alone (write numbers only as values). 1 to 12 numbers. Figures are optional: PDF or PNG files under
  `out/figures/`, each listed with a one-line caption.
- Nothing else: no network, no subprocesses, no environment variables, no other files, no eval/exec. Use the
  seed in context.json for anything random. Describe associations and predictive accuracy, never causes.
- On a condition that makes the analysis impossible, stop with `raise SystemExit("<reason>")`.
"""


@dataclass(frozen=True)
class LibraryAnalysis:
    name: str
    script: str
    purpose: str
    reports: tuple[str, ...]
    applies: Callable[[dict[str, Any]], str | None]  # context -> None when it applies, else why not


def _needs_single_top(k: int) -> Callable[[dict[str, Any]], str | None]:
    def check(context: dict[str, Any]) -> str | None:
        single = [t for t in context.get("top_features", []) if len(t.get("columns", [])) == 1]
        if k == 1 and not (context.get("top_features") and len(context["top_features"][0]["columns"]) == 1):
            return "the top predictor is not a single numeric column"
        if len(single) < k:
            return f"fewer than {k} of the top predictors are single numeric columns"
        return None
    return check


def _drop_applies(context: dict[str, Any]) -> str | None:
    if not context.get("top_features"):
        return "no SHAP ranking of predictors"
    if context.get("n_predictor_columns", 0) <= len(context["top_features"][0]["columns"]):
        return "the top predictor is the only predictor"
    return None


LIBRARY: dict[str, LibraryAnalysis] = {a.name: a for a in (
    LibraryAnalysis("drop_top_predictor", "drop_top_predictor.py",
                    "How much does a plain model's held-out accuracy depend on the predictor the SHAP ranking puts "
                    "first? (a sensitivity analysis)",
                    ("score_with_top", "score_without_top", "score_drop"), _drop_applies),
    LibraryAnalysis("interaction_top_two", "interaction_top_two.py",
                    "Does the association of the top predictor with the outcome differ with the level of the "
                    "second? (a product term, tested by likelihood ratio)",
                    ("product_coefficient", "lr_statistic", "lr_p_value", "score_gain"), _needs_single_top(2)),
    LibraryAnalysis("prediction_profile_top", "prediction_profile_top.py",
                    "How do the selected model's held-out predictions and the observed outcome vary across the "
                    "range of the top predictor?",
                    ("predicted_lowest_quintile", "predicted_highest_quintile", "observed_lowest_quintile",
                     "observed_highest_quintile", "spearman_rho"), _needs_single_top(1)),
)}


class ContractError(EdmArsError):
    """A script's output breaks the contract (a missing or invalid result.json, an unlisted file)."""


# ---- the context an analysis sees ----------------------------------------------------------------------------


def _name(feature: str, label: str | None) -> str:
    """How a script's meanings name a predictor: its label, or its column name when the label holds a number (a
    meaning may not)."""
    return feature if not label or _STANDALONE_NUMBER.search(label) else label


def analysis_context(spec: dict[str, Any], report: dict[str, Any], evaluation: dict[str, Any],
                     explain: dict[str, Any], seed: int, n_columns: int) -> dict[str, Any]:
    """What every script may know besides the data (inputs/context.json, less the analysis's own entry)."""
    task = report.get("task") or spec.get("task")
    return {
        "task": task,
        "outcome": spec["outcome"]["name"],
        "outcome_label": spec["outcome"].get("label") or spec["outcome"]["name"],
        "primary_metric": "auc" if task == "binary_classification" else "r2",
        "selected_model": evaluation.get("best_model"),
        "models": sorted((evaluation.get("models") or {}).keys()),
        "top_features": [{"feature": t["feature"], "label": t.get("label") or t["feature"],
                          "name": _name(t["feature"], t.get("label")), "columns": list(t.get("columns") or [t["feature"]])}
                         for t in (explain.get("top_features") or [])[:5]],
        "n_predictor_columns": int(n_columns),
        "seed": int(seed),
    }


# ---- choosing the analyses -----------------------------------------------------------------------------------


def _entry(name: str, purpose: str, reports: list[str], source: str, requested_by: str,
           code: str | None = None, library: str | None = None) -> dict[str, Any]:
    entry = {"name": name, "purpose": purpose, "reports": list(reports), "source": source,
             "requested_by": requested_by}
    if library:
        entry["library"] = library
    if code is not None:
        entry["code"] = code
    return entry


def offline_plan(context: dict[str, Any], n: int, requested: list[str] | None = None) -> dict[str, Any]:
    """Up to `n` vetted analyses, by rule: those a review asked for first, then the library's order, each only when
    it applies to these results (the skipped ones with why)."""
    chosen: list[dict[str, Any]] = []
    skipped: list[dict[str, str]] = []
    order = [r for r in (requested or []) if r in LIBRARY] + [a for a in LIBRARY if a not in (requested or [])]
    skipped += [{"name": r, "reason": "a review asked for this analysis, which the offline backend cannot write (only "
                                      "the vetted library's analyses run offline)"}
                for r in (requested or []) if r not in LIBRARY]
    for name in order:
        lib = LIBRARY[name]
        why = lib.applies(context)
        if why:
            skipped.append({"name": name, "reason": why})
            continue
        if len(chosen) < n:
            by = "critic" if name in (requested or []) else "analyst"
            chosen.append(_entry(name, lib.purpose, list(lib.reports), "library", by, library=name))
    return {"analyses": chosen, "skipped": skipped, "backend": "offline"}


def library_code(name: str) -> str:
    return resources.files("edm_ars.codegen.library").joinpath(LIBRARY[name].script).read_text("utf-8")


def _json_block(text: str) -> Any:
    """The first JSON object in a model's answer (fenced or bare)."""
    fenced = re.search(r"```(?:json)?\s*(\{.*?\})\s*```", text, re.S)
    candidate = fenced.group(1) if fenced else text[text.find("{"):text.rfind("}") + 1]
    return json.loads(candidate)


def _code_block(text: str) -> str | None:
    """The Python code of a model's answer: a ```python fence, else None."""
    fenced = re.search(r"```(?:python|py)\s*\n(.*?)```", text, re.S)
    return fenced.group(1).strip() + "\n" if fenced else None


def model_plan(ask: Callable[[str, str], str], prompt: dict[str, str], context: dict[str, Any],
               results_summary: str, n: int, requested: list[str] | None = None) -> dict[str, Any]:
    """Up to `n` analyses proposed by the model, each with its code. `ask(tag, user_text)` returns the model's
    answer. A proposal that is malformed (no name, purpose, reported names or code; a duplicate name) is left out
    with its reason; the model is asked once, and nothing is invented when it proposes nothing usable."""
    user = prompt["propose"].format(n=n, contract=CONTRACT, context=json.dumps(context, indent=1),
                                    results=results_summary,
                                    requested="; ".join(requested or []) or "none")
    answer = ask("propose", user)
    rejected: list[dict[str, str]] = []
    chosen: list[dict[str, Any]] = []
    try:
        proposals = _json_block(answer).get("analyses", [])
    except (json.JSONDecodeError, AttributeError, ValueError) as exc:
        return {"analyses": [], "skipped": [{"name": "(proposal)", "reason": f"no JSON in the answer ({exc})"}],
                "backend": "model"}
    for raw in proposals if isinstance(proposals, list) else []:
        name = str((raw or {}).get("name", "")).strip().lower() if isinstance(raw, dict) else ""
        problem = None
        if not NAME.fullmatch(name) or name == "plan":
            problem = "its name must be lower case letters, digits and underscores (2-40)"
        elif any(c["name"] == name for c in chosen):
            problem = "a duplicate name"
        elif not str(raw.get("purpose") or "").strip():
            problem = "no purpose"
        elif not isinstance(raw.get("reports"), list) or not raw["reports"] or \
                not all(isinstance(r, str) and NAME.fullmatch(r) for r in raw["reports"]):
            problem = "`reports` must list the names of the numbers it will report"
        elif not str(raw.get("code") or "").strip():
            problem = "no code"
        if problem:
            rejected.append({"name": name or "(unnamed)", "reason": problem})
            continue
        if len(chosen) < n:
            by = "critic" if any(r.lower() in str(raw["purpose"]).lower() or r == name
                                 for r in (requested or [])) else "analyst"
            chosen.append(_entry(name, " ".join(str(raw["purpose"]).split()), raw["reports"], "generated", by,
                                 code=str(raw["code"])))
    return {"analyses": chosen, "skipped": rejected, "backend": "model"}


def repair_prompt(prompt: dict[str, str], entry: dict[str, Any], code: str, failure: dict[str, str]) -> str:
    """What the model is told of a failed attempt: the error class, the reason, the end of stderr, its code and the
    contract."""
    return prompt["repair"].format(name=entry["name"], purpose=entry["purpose"], reports=", ".join(entry["reports"]),
                                   contract=CONTRACT, code=code, status=failure["status"],
                                   reason=failure["reason"], stderr=failure.get("stderr", "")[-3000:],
                                   attempt=failure.get("attempt", "?"), attempts=failure.get("attempts", "?"))


def model_repair(ask: Callable[[str, str], str], prompt: dict[str, str],
                 entry: dict[str, Any]) -> Callable[[str, dict[str, str]], str | None]:
    """The repair step of run_analysis with a model: the failure goes back to the model, whose answer's ```python
    block is the next attempt (None when the answer holds no code: the analysis is then dropped)."""
    def repair(code: str, failure: dict[str, str]) -> str | None:
        return _code_block(ask(f"repair-{entry['name']}", repair_prompt(prompt, entry, code, failure)))
    return repair


# ---- checking what a script wrote ----------------------------------------------------------------------------


def _causal(text: str) -> bool:
    """Causal wording the paper's lint would flag in a Results sentence (edm_ars.core.causal)."""
    return bool(causal_phrases(text))


def check_output(out: Path, entry: dict[str, Any]) -> dict[str, Any]:
    """out/result.json validated against the schema and the contract; ContractError names what is wrong."""
    result_file = out / "result.json"
    if result_file.is_symlink() or not result_file.is_file():
        raise ContractError("the script wrote no out/result.json")
    try:
        result = read_result(result_file)
    except (OSError, ValueError) as exc:
        raise ContractError(str(exc)) from None
    try:
        validate(result, "supplementary_result", where="out/result.json")
    except SchemaError as exc:
        raise ContractError(str(exc)) from None
    names = [n["name"] for n in result["numbers"]]
    problems = []
    if len(set(names)) != len(names):
        problems.append("number names repeat")
    for item in result["numbers"]:
        if not math.isfinite(item["value"]):
            problems.append(f"the value of {item['name']} is not a finite number")
        if _causal(item["meaning"]):
            problems.append(f"the meaning of {item['name']} uses causal wording ({item['meaning']!r}); describe "
                            "associations and predictive accuracy")
        if _STANDALONE_NUMBER.search(item["meaning"]):
            problems.append(f"the meaning of {item['name']} holds a number ({item['meaning']!r}); numbers go in values")
    for fig in result.get("figures", []):
        if _STANDALONE_NUMBER.search(fig["caption"]):
            problems.append(f"the caption of {fig['file']} holds a number")
    listed = {"result.json"} | {f["file"] for f in result.get("figures", [])}
    for path in sorted(p for p in out.rglob("*") if p.is_file()):
        rel = path.relative_to(out).as_posix()
        if rel not in listed:
            problems.append(f"out/{rel} is not part of the contract (only result.json and listed figures)")
    for fig in result.get("figures", []):
        if not fig["file"].startswith("figures/") or not fig["file"].endswith(FIGURE_SUFFIXES) or \
                ".." in fig["file"]:
            problems.append(f"figure {fig['file']!r} must be a PDF or PNG file under figures/")
        elif not (out / fig["file"]).is_file():
            problems.append(f"figure {fig['file']} is listed but was not written")
    missing = [r for r in entry["reports"] if r not in names]
    if missing:
        problems.append(f"the purpose announced {', '.join(missing)}, which result.json does not report")
    if problems:
        raise ContractError("; ".join(problems))
    return result


# ---- running one analysis with self-repair -------------------------------------------------------------------


def run_analysis(entry: dict[str, Any], inputs: dict[str, Path], folder: Path, *, limits: Any, mode: str,
                 attempts: int, repair: Callable[[str, dict[str, str]], str | None] | None,
                 runner: Callable[..., Any] | None = None, scratch: Path | None = None) -> dict[str, Any]:
    """Run `entry` with `inputs` (name -> file, bound read-only as inputs/<name>) in `folder` (attempt_<k>/ with
    analysis.py, out/, stdout.txt, stderr.txt and outcome.json per attempt),
    repairing through `repair(code, failure) -> new code` (None offline or when the model gives no code). Returns
    the record: status "ok" with the result, or "dropped" with the last failure's reason.

    With `scratch` (a folder outside the job's declared outputs), each attempt's out/ is written there and moved
    into attempt_<k>/ only once the sandbox has tidied it: a job killed mid-attempt then leaves its untidied out/
    (any depth, locked folders) where Snakemake's removal of the outputs never meets it, and the next run removes
    it. Leftovers of earlier runs, in `folder` or `scratch`, are removed whatever their depth or mode."""
    from edm_ars.codegen.sandbox import run_sandboxed

    runner = runner or run_sandboxed
    folder.mkdir(parents=True, exist_ok=True)
    for old in sorted(folder.glob("attempt_*")):  # a rerun starts from its first attempt, whatever was left
        remove_tree(old)
    if scratch is not None:
        remove_tree(scratch)
    code = entry.get("code") if entry["source"] == "generated" else library_code(entry["library"])
    history: list[dict[str, Any]] = []
    result = None
    for k in range(1, attempts + 1):
        where = folder / f"attempt_{k}"
        where.mkdir()
        script = where / "analysis.py"
        atomic_write_text(script, code)
        out = where / "out"
        written = out if scratch is None else scratch / f"attempt_{k}" / "out"
        run = runner(script, inputs, written, limits=limits, mode=mode)
        if written != out and written.is_dir():  # tidied by the runner: no link, no deep or locked folder
            written.rename(out)
        atomic_write_text(where / "stdout.txt", run.stdout)
        atomic_write_text(where / "stderr.txt", run.stderr)
        failure = None
        if run.status != "ok":
            failure = {"status": run.status, "reason": run.reason, "stderr": run.stderr}
        else:
            try:
                result = check_output(out, entry)
            except ContractError as exc:
                failure = {"status": "contract", "reason": str(exc), "stderr": run.stderr}
        if failure is not None:
            failure |= {"attempt": str(k), "attempts": str(attempts)}
        outcome = {"attempt": k, "status": "ok" if failure is None else failure["status"],
                   "reason": "" if failure is None else failure["reason"],
                   "script": script.as_posix()}
        write_json(where / "outcome.json", outcome)
        history.append(outcome)
        if failure is None:
            break
        result = None
        new = repair(code, failure) if (repair is not None and k < attempts) else None
        if not new:
            break
        code = new
    if scratch is not None:
        remove_tree(scratch)
    record = {key: entry[key] for key in ("name", "purpose", "reports", "source", "requested_by")}
    if entry.get("library"):
        record["library"] = entry["library"]
    record |= {"sandbox": mode, "attempts": history, "script": history[-1]["script"]}
    if result is None:
        last = history[-1]
        record |= {"status": "dropped",
                   "reason": f"attempt {last['attempt']} of {attempts}: {last['status']}: {last['reason']}"}
    else:
        record |= {"status": "ok", "reason": "",
                   "numbers": {n["name"]: {"value": n["value"], "meaning": n["meaning"]} for n in result["numbers"]},
                   "figures": [{"file": (Path(history[-1]["script"]).parent / "out" / f["file"]).as_posix(),
                                "caption": f["caption"]} for f in result.get("figures", [])]}
    return record


def summary(plan: dict[str, Any], records: list[dict[str, Any]], mode: str) -> dict[str, Any]:
    """results.json `supplementary`: every planned analysis's record by name, and what was skipped and why."""
    return {"sandbox": mode, "backend": plan.get("backend", "offline"), "max_attempts": plan["attempts"],
            "n_planned": len(plan.get("analyses", [])),
            "n_ok": sum(1 for r in records if r["status"] == "ok"),
            "analyses": {r["name"]: r for r in records},
            "skipped": plan.get("skipped", [])}
