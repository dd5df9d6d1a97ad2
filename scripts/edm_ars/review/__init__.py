"""Critic: the methodological review (PASS / REVISE / ABORT), its structured revision actions, the record of
revision rounds, and the claims the results support with the consistency checks between them."""
