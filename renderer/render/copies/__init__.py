"""Copies: the plan -> the dev copies (workloads, Services, what they read), per isolation mode."""
