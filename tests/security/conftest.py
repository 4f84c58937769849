"""Every test here runs with the plugin sandbox as installed and with bwrap hidden (`support.sandbox`)."""

from support.sandbox import pytest_generate_tests, sandbox  # noqa: F401
