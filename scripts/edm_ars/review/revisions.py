"""output/revisions.md: round by round, what the Critic asked, what changed, and the effect on results."""

from __future__ import annotations

from typing import Any


def _predictors(spec: dict[str, Any]) -> set[str]:
    return {p["name"] for p in spec["predictors"]}


def _best(results: dict[str, Any]) -> tuple[str, str, float, list[float]]:
    m, primary = results["best_model"], results["primary_metric"]
    r = results["models"][m]
    return m, primary, r["metrics"][primary], r["ci"][primary]


def changes(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """What differs between two rounds' artifacts (spec, data report, results), in words."""
    out = []
    sb, sa = before["spec"], after["spec"]
    if sb is not sa:
        if sb["outcome"]["name"] != sa["outcome"]["name"]:
            out.append(f"outcome {sb['outcome']['name']} -> {sa['outcome']['name']}")
        added, dropped = _predictors(sa) - _predictors(sb), _predictors(sb) - _predictors(sa)
        if added:
            out.append("predictors added: " + ", ".join(sorted(added)))
        if dropped:
            out.append("predictors dropped: " + ", ".join(sorted(dropped)))
        if sb["research_question"] != sa["research_question"]:
            out.append("research question reworded")
    db, da = before["report"], after["report"]
    if db is not da:
        methods = [f"{v}: {db['missingness'][v]['method']} -> {m['method']}" for v, m in da["missingness"].items()
                   if v in db["missingness"] and db["missingness"][v]["method"] != m["method"]]
        out += [f"imputation {m}" for m in methods]
        if db.get("imputation_strategy") != da.get("imputation_strategy"):
            out.append(f"imputation strategy {db.get('imputation_strategy', 'by_missingness')} -> "
                       f"{da.get('imputation_strategy')}")
        if db["analytic_n"] != da["analytic_n"]:
            out.append(f"analytic n {db['analytic_n']} -> {da['analytic_n']}")
        if len(db["predictors_after"]) != len(da["predictors_after"]):
            out.append(f"encoded features {len(db['predictors_after'])} -> {len(da['predictors_after'])}")
    rb, ra = before["results"], after["results"]
    if set(rb["models"]) != set(ra["models"]):
        out.append(f"models {sorted(rb['models'])} -> {sorted(ra['models'])}")
    return out


def _screened(results: dict[str, Any]) -> str:
    sc = results["screening"]
    return f"models {', '.join(sc['models'])}; without the {', '.join(sc['skipped'])}"


def render(rounds: list[dict[str, Any]]) -> str:
    """rounds: per round {round, spec, report, results, review, reran: [stages]} (artifacts by reference)."""
    lines = ["# Revisions", ""]
    if len(rounds) == 1:
        v = rounds[0]["review"]
        if rounds[0]["results"].get("screening"):
            lines.append(f"Screened only: the Critic's verdict on the screening round 0 was {v['verdict']} "
                         f"(score {v['overall_score']}); the candidate was not chosen, so it was not analysed in "
                         f"full ({_screened(rounds[0]['results'])}).")
        else:
            lines.append(f"No revision: the Critic's verdict in round 0 was {v['verdict']} "
                         f"(score {v['overall_score']}).")
        return "\n".join(lines) + "\n"
    for prev, cur in zip(rounds, rounds[1:], strict=False):
        asked = prev["review"]
        lines += [f"## Round {cur['round']}", ""]
        if prev["results"].get("screening"):
            lines += [f"**Why**: round {prev['round']} screened this candidate study ({_screened(prev['results'])}) "
                      f"and went on to the full analysis in round {cur['round']} (the chosen study, or every study with papers=all).", ""]
        lines += [f"**Asked** (review of round {prev['round']}, verdict {asked['verdict']}, score "
                  f"{asked['overall_score']}; re-run from {asked['rerun_from']}):", ""]
        for issue in asked["issues"]:
            if issue["target_stage"] in ("formulate", "engineer", "analyze"):
                lines.append(f"- [{issue['severity']}] {issue['description']} -> {issue.get('recommendation', '')}")
        for a in asked.get("revision_actions") or []:
            lines.append(f"- action: {a['action']}" + (f" {a['value']}" if a.get("value") is not None else "")
                         + f" ({a['stage']}; {a.get('reason') or a.get('issue')})")
        lines += ["", f"**Re-ran**: {', '.join(cur['reran'])}; earlier artifacts reused by path.", "",
                  "**Changed**:", ""]
        lines += [f"- {c}" for c in changes(prev, cur)] or ["- nothing in the specification, the data "
                                                           "preparation or the model set"]
        (mb, metric, vb, cib), (ma, _, va, cia) = _best(prev["results"]), _best(cur["results"])
        lines += ["", f"**Effect**: best model {mb} {metric.upper()} {vb:.3f} [{cib[0]:.3f}, {cib[1]:.3f}] -> "
                  f"{ma} {va:.3f} [{cia[0]:.3f}, {cia[1]:.3f}] ({va - vb:+.3f}); verdict of round {cur['round']}: "
                  f"{cur['review']['verdict']}" + (" (UNVERIFIED)" if cur["review"].get("unverified")
                                                  and cur["review"]["verdict"] != "UNVERIFIED" else ""), ""]
    return "\n".join(lines) + "\n"
