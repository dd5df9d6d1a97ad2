"""The unnumbered "Data and code availability" statement after the Limitations: the data's source and citation,
the workflow's commit, the configuration's hash and the package versions, from output/paper/provenance.json
(rule `provenance`; the shared helpers are in writer/provenance.py)."""

from __future__ import annotations

from edm_ars.core.texescape import escape_latex
from edm_ars.core.text import join_list
from edm_ars.writer.context import Ctx
from edm_ars.writer.provenance import PACKAGE_NAMES, cite, data, kind, package, quoted, source


# ---- the availability statement ------------------------------------------------------------------------------
def write(ctx: Ctx) -> str:
    """The unnumbered "Data and code availability" statement ('' without a provenance record)."""
    rec = ctx.provenance
    k = kind(ctx)
    if not rec or k is None:
        return ""
    named = source(ctx)
    if k == "package_export" and data(ctx).get("package"):
        pkg, item, joined = package(ctx)
        rows = ctx.ph("provenance.availability_package_export", package=pkg, item=item, joined=joined,
                      cite=cite(ctx))
    elif k in ("generated", "public_use_file", "restricted_use_file"):
        rows = ctx.ph(f"provenance.availability_{k}", source=named, cite=cite(ctx))
    elif k == "package_export":  # a package export the workflow did not make: still a package's copy
        rows = ctx.ph("provenance.availability_package_export_unnamed", cite=cite(ctx))
    else:  # a local file
        rows = ctx.ph("provenance.availability_local_file", cite=cite(ctx))
    wf = rec.get("workflow") or {}
    if wf.get("short"):
        modified = " " + ctx.ph("provenance.availability_modified") if wf.get("modified") else ""
        code = ctx.ph("provenance.availability_commit",
                      commit=f"\\texttt{{{quoted(ctx, 'WorkflowCommit', wf['short'], 'workflow.short')}}}",
                      modified=modified)
    else:
        code = ctx.ph("provenance.availability_no_commit")
    config = ctx.ph("provenance.availability_config",
                    config_hash=f"\\texttt{{{quoted(ctx, 'ConfigHash', rec.get('config_hash'), 'config_hash')}}}",
                    algorithm=quoted(ctx, "ConfigHashAlgorithm", rec.get("config_hash_algorithm") or "SHA-256",
                                      "config_hash_algorithm"))
    packages = []
    for name, version in (rec.get("software") or {}).items():
        shown = PACKAGE_NAMES.get(name, escape_latex(name))
        packages.append(f"{shown} {quoted(ctx, 'Version ' + name, version, 'software.' + name)}" if version
                        else ctx.ph("provenance.availability_not_installed", package=shown))
    software = ctx.ph("provenance.availability_software", packages=join_list(packages)) if packages else ""
    body = " ".join(t for t in (rows, code, config, software) if t)
    return f"\\section*{{{ctx.ph('provenance.availability_title')}}}\\label{{sec:availability}}\n{body}"
