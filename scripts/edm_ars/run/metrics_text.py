"""The research-agent metrics as text (`edm-ars metrics` without --json): one run's table per stage with its
diversity, utility and validity (render), and several runs side by side with their mean and SD (render_many).
The numbers come from edm_ars.run.agent_metrics (collect, aggregate)."""

from __future__ import annotations

from typing import Any

from edm_ars.run.agent_metrics import aggregate, flat


def _f(x: float | None, fmt: str = ".2f") -> str:
    return "n/a" if x is None else format(x, fmt)


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.0f}%"


def render(m: dict[str, Any]) -> str:
    """The five measures of one run as text: a table per stage, then diversity, utility and validity."""
    lines = [f"run: {m['run']}",
             "1-3. success, completion and cost per stage (success: finished / (finished + failed) job attempts in "
             ".snakemake/log; completion: expected outputs present; wall: jobs whose outputs stand; cpu: benchmarked "
             "jobs)",
             f"  {'stage':<10} {'success':>14} {'complete':>12} {'calls ok':>9} {'tokens in/out':>15} "
             f"{'usd':>8} {'wall s':>8} {'cpu s':>14}"]
    for name, s in m["stages"].items():
        j, c = s["jobs"], s["cost"]
        succ = f"{_pct(s['success_rate'])} {j['finished']}/{j['finished'] + j['failed']}"
        comp = f"{_pct(s['completion_rate'])} {s['done']}/{s['expected']}"
        calls = f"{s['model_calls']['ok']}/{s['model_calls']['total']}" if s["model_calls"]["total"] else "-"
        tokens = f"{c['input_tokens']}/{c['output_tokens']}" if s["model_calls"]["total"] else "-"
        usd = _f(c["cost_usd"], ".4f") if s["model_calls"]["total"] else "-"
        cpu = "n/a" if c["cpu_s"] is None else f"{c['cpu_s']:.1f} ({c['cpu_jobs']}/{c['wall_jobs']}j)"
        lines.append(f"  {name:<10} {succ:>14} {comp:>12} {calls:>9} {tokens:>15} {usd:>8} {c['wall_s']:>8.1f} "
                     f"{cpu:>14}")
    notes = []
    for name, s in m["stages"].items():
        if s["jobs"]["interrupted"]:
            notes.append(f"{name}: {s['jobs']['interrupted']} job(s) interrupted (not in the rate)")
        if s["missing"]:
            more = f" (+{len(s['missing']) - 3} more)" if len(s["missing"]) > 3 else ""
            notes.append(f"{name}: missing {', '.join(s['missing'][:3])}{more}")
    sup = m["stages"]["analyze"]["supplementary_first_attempt"]
    notes.append(f"analyze: supplementary analyses ok on the first attempt {sup['ok']}/{sup['total']}")
    notes.append(f"formulate: spec gate revisions {m['stages']['formulate']['spec_gate_revisions']}")
    lines += [f"  - {n}" for n in notes]
    d = m["diversity"]
    lines.append(f"4. diversity: {_f(d['value'], '.4f')} (mean pairwise distance of {d['n_branches']} candidate "
                 "stud" + ("y" if d["n_branches"] == 1 else "ies") + ")")
    u = m["utility"]
    if u["value"] is None:
        lines.append("5. utility: n/a (no output/selection.json with a chosen branch)")
    else:
        ci = f" [{u['ci'][0]:.4f}, {u['ci'][1]:.4f}]" if u.get("ci") else ""
        lines.append(f"5. utility: {u['metric']} {u['value']:.4f}{ci} (branch {u['branch']}, {u['model']}, held-out)")
    v = m["validity"]
    if not v["applicable"]:
        lines.append(f"6. validity: {v['note']}")
    elif v.get("predictors_planted") is None:
        lines.append(f"6. validity: n/a ({v.get('note', 'recovery.json incomplete')})")
    else:
        rec = v["disparity_recovered"]
        disp = {True: "recovered", False: "not recovered", None: "undetermined"}[rec if rec in (True, False) else None]
        disp = f"planted disparity ({v.get('group')}): {disp}" if v.get("disparity_planted") is not False \
            else "no disparity planted"
        lines.append(f"6. validity: planted strong predictors in the top {v['top_k']}: {v['predictors_recovered']}/"
                     f"{v['predictors_planted']}; {disp}")
    return "\n".join(lines)


#: the rows of the side-by-side text (every number is in the JSON): per stage success, completion, wall and CPU
#: seconds; the totals; diversity, utility, validity
TEXT_KEYS = ("success_rate", "completion_rate", "wall_s", "cpu_s")


def render_many(runs: list[dict[str, Any]], labels: list[str] | None = None) -> str:
    """Several runs: the main numbers side by side, then their mean and SD (n - 1) over the runs where defined."""
    labels = labels or [str(i + 1) for i in range(len(runs))]
    rows = [flat(m) for m in runs]
    agg = aggregate(runs)
    width = max(8, *(len(x) for x in labels))
    head = f"  {'measure':<28} " + " ".join(f"{x:>{width}}" for x in labels) + f" {'mean':>10} {'sd':>10}"
    lines = [f"across {len(runs)} runs:", head]
    for key, a in agg.items():
        stage, _, name = key.partition(".")
        if stage in _stages(runs) and name not in TEXT_KEYS:
            continue
        if a["n"] == 0:
            continue
        vals = " ".join(f"{_f(r.get(key), '.4g'):>{width}}" for r in rows)
        lines.append(f"  {key:<28} {vals} {_f(a['mean'], '.4g'):>10} {_f(a['sd'], '.4g'):>10}")
    return "\n".join(lines)


def _stages(runs: list[dict[str, Any]]) -> set[str]:
    return {name for m in runs for name in m["stages"]}
