"""The rules' jobs: for each rule of rules/*.smk, the function of the same name that its entry scripts/<rule>.py
runs (`run(snakemake, <function>)`, edm_ars.jobs.rule_io). A job reads the rule's inputs, calls the package's stages
and writes the rule's outputs; what it computes has its home in those stages.

One module per conda env (envs/<env>.yaml), or for the analysis env a subpackage (jobs/analysis/, one module per
phase): it holds the jobs of the rules that run in that env, so its imports (tests/test_envs.py reads them,
function-level ones included) are what that env provides. The stages a job needs are imported inside it, so a
job imports only its own."""
