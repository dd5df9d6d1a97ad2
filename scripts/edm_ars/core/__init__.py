"""Shared by every stage: artifacts on disk (atomic writes, JSON with schemas), errors, the names and thresholds
the stages share (conventions), data frames between rules, words with no context, the model-call ledgers and what a
killed run leaves behind. Imports nothing from the stages."""
