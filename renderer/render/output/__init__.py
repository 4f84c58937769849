"""Output: the flow's files, written atomically."""
