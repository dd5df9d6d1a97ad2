"""Supplementary analyses written as code: the plan and its contract, the static scan, the sandbox they run in,
and the vetted library of analyses used offline."""
