"""Data sets and the DataEngineer: the registry of a data set, its adapters and generated stand-in, the NCES layout,
the Tier 2 registry, and the leakage-safe preparation (sentinel codes, split before encoding, imputation, checks)
with its sample description."""
