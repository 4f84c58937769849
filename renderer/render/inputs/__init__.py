"""Inputs: the repository's files -> `Document`s (plain YAML parsed, kustomize and Helm built)."""
