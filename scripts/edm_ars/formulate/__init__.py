"""ProblemFormulator: the research specification and its gate against the registry, the model-written
specification, literature retrieval and the curated bibliography, candidate studies (branches), and lessons and
findings from earlier runs."""
