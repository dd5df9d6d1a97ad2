"""The causal study's jobs (rules/causal.smk), one module per conda environment: agents (causal_formulate,
critique), data (causal_frame), analysis (causal_estimate) and writer (causal_recovery, causal_write). Nothing is
imported here, so an entry script loads its own job's module only."""
