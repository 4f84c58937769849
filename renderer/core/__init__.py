"""Leaf helpers shared by every layer: YAML, names, Kubernetes object helpers, references, globs,
file sources and schemas. They import nothing of devlane but `errors`."""
