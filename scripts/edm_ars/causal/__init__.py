"""The causal study: specification, analytic frame, estimation, review and paper."""
