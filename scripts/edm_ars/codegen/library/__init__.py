"""The vetted supplementary analyses: scripts that follow edm_ars.codegen.supplementary.CONTRACT, run offline in the same
sandbox as generated code. They are data for the sandbox, never imported by the workflow."""
