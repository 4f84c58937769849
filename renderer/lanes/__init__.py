"""Where lanes live beyond one job: the lanes branch of the repository's remote."""
