"""Model: the documents -> Kardinal's topology, and the passes over the whole repository."""
