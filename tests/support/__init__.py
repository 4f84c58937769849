"""What every test layer shares: paths of the data used in place, builders of small repositories, the
real consumers (kubectl kustomize, kubernetes-validate, upstream CRDs), and `Harness`, the one way
a test makes a repository and runs devlane on it (in-process API, in-process CLI, or a real
subprocess for end-to-end tests).

Test modules import this package (pytest's `pythonpath` puts `tests/` on sys.path); they never
import each other.
"""

from . import kardinal
from .builders import SHOP_CHART, app_yaml, entry_ingress, plugin_definition, yaml_doc
from .consumers import crd_schema, kubectl_kustomize, validate_against_crd, validate_strict
from .harness import Harness, Result, git, run_cli, tree
from .paths import (
    BUILTINS,
    CRDS,
    DEMO,
    EXAMPLE,
    FIXTURES,
    KUBE_VERSION,
    QUEUE_BUILTINS,
    ROOT,
    SHARED,
    STANDIN_SOURCES,
    STANDINS,
    demo_file,
    standin_flags,
    standin_sources,
)

__all__ = [
    "BUILTINS",
    "CRDS",
    "DEMO",
    "EXAMPLE",
    "FIXTURES",
    "KUBE_VERSION",
    "QUEUE_BUILTINS",
    "ROOT",
    "SHARED",
    "SHOP_CHART",
    "STANDINS",
    "STANDIN_SOURCES",
    "Harness",
    "Result",
    "app_yaml",
    "crd_schema",
    "demo_file",
    "entry_ingress",
    "git",
    "kardinal",
    "kubectl_kustomize",
    "plugin_definition",
    "run_cli",
    "standin_flags",
    "standin_sources",
    "tree",
    "validate_against_crd",
    "validate_strict",
    "yaml_doc",
]  # fmt: skip
