"""EDM-ARS: automated educational data mining research as a Snakemake workflow."""

__version__ = "0.1.0"
