"""The run as a whole: the configuration check before any job, cluster resources per job, human gates, the
provenance record, and the research-agent metrics of finished runs."""
