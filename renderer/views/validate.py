"""Validation gate (`render --validate strict`): every rendered object against the schemas its cluster runs.

Core kinds use the `kubernetes-validate` package (offline JSON schemas per Kubernetes version, strict:
unknown fields are errors). Custom resources use the `openAPIV3Schema` of a CustomResourceDefinition
found in the repository or in `--crds DIR`, so users check against the CRD versions their clusters
actually run. A custom resource with no CRD available is reported as unchecked, never as passed.

The CLI reads `DEFAULT_KUBE_VERSION` while it builds its parser (`devlane --help` too), so this module
imports what validating needs only when it validates.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import Problem, UsageError, Where

if TYPE_CHECKING:
    from ..api import RenderResult
    from ..render.inputs.document import Document

DEFAULT_KUBE_VERSION = "1.31"


@dataclass
class Report:
    checked: int = 0
    problems: list[Problem] = field(default_factory=list)
    unchecked: list[str] = field(default_factory=list)  # Kind/name of custom resources with no CRD


def crd_schemas(documents: list[Document], crd_dirs: list[Path]) -> dict[tuple[str, str], dict]:
    """(apiVersion, kind) -> openAPIV3Schema, from the repository's CRDs and then `--crds` (which win)."""
    from ..core.files import read_user_file
    from ..core.yamlio import parse_documents

    objects = [d.obj for d in documents]
    for directory in crd_dirs:
        if not Path(directory).is_dir():
            raise UsageError(Problem(f"--crds {directory}: not a directory",
                                     hint="point --crds at a directory of CustomResourceDefinition YAML files"))
        for f in sorted(Path(directory).rglob("*.y*ml")):
            objects += [o for o in parse_documents(read_user_file(f), str(f)) if isinstance(o, dict)]
    out = {}
    for obj in objects:
        if obj.get("kind") != "CustomResourceDefinition":
            continue
        spec = obj.get("spec") or {}
        for version in spec.get("versions") or []:
            schema = (version.get("schema") or {}).get("openAPIV3Schema")
            if schema:
                out[(f"{spec.get('group')}/{version.get('name')}", (spec.get("names") or {}).get("kind"))] = schema
    return out


def _path(parts) -> str:
    text = ""
    for p in parts:
        text += f"[{p}]" if isinstance(p, int) else (f".{p}" if text else str(p))
    return text or "(top level)"


def install_hint() -> str:
    """The exact command that installs the [validate] extra into the interpreter running devlane, whether devlane
    came from PyPI or from a checkout (`pip install -e .`): its requirement as devlane's own metadata states it."""
    import shlex
    import sys
    from importlib.metadata import PackageNotFoundError, requires

    try:
        wanted = [r.split(";")[0].strip() for r in requires("devlane") or [] if "extra == \"validate\"" in r]
    except PackageNotFoundError:
        wanted = []
    return f"{shlex.quote(sys.executable)} -m pip install {shlex.quote(wanted[0] if wanted else 'kubernetes-validate')}"


def validate_objects(files: dict[str, dict], kube_version: str, crds: dict[tuple[str, str], dict]) -> Report:
    """`files`: rendered file name -> object. Every error names the file, the object and the field path."""
    try:
        import kubernetes_validate
        from kubernetes_validate.utils import VersionNotSupportedError
    except ImportError:
        raise UsageError(Problem("--validate strict needs the kubernetes-validate package (devlane's [validate] "
                                 "extra), which is not installed", hint=install_hint())) from None
    import jsonschema

    report = Report()
    for name, obj in sorted(files.items()):
        meta = obj.get("metadata") or {}
        label = f"{obj.get('kind')}/{meta.get('name')}"
        where = Where(file=name, object=label)
        try:
            kubernetes_validate.validate(obj, kube_version, strict=True)
        except kubernetes_validate.SchemaNotFoundError:
            schema = crds.get((obj.get("apiVersion"), obj.get("kind")))
            if schema is None:
                report.unchecked.append(label)
                continue
            errors = jsonschema.Draft7Validator(schema).iter_errors(obj)
            for err in sorted(errors, key=lambda e: list(map(str, e.path))):
                report.problems.append(Problem(f"{_path(err.absolute_path)}: {err.message}", where,
                                               "fix the object (or the plugin that made it); checked against its CRD",
                                               code="invalid-object"))
        except kubernetes_validate.ValidationError as err:
            report.problems.append(Problem(f"{_path(err.absolute_path)}: {err.message}", where,
                                           f"fix the object (or the plugin that made it); checked against Kubernetes "
                                           f"{kube_version} (strict)", code="invalid-object"))
        except VersionNotSupportedError:
            raise UsageError(Problem(f"--kube-version {kube_version} is not known to kubernetes-validate",
                                     hint="use a version such as 1.31")) from None
        report.checked += 1
    return report


def validate(result: RenderResult, kube_version: str, crd_dirs: list[Path]) -> Report:
    """Every object of a render, against Kubernetes `kube_version` and the CRDs of the repository and `crd_dirs`."""
    import yaml

    files = {f"flows/{f.flow_id}/{name}": yaml.load(text, Loader=yaml.CSafeLoader)
             for f in [*result.flows, *([result.mesh] if result.mesh else [])] for name, text in f.files.items()}
    return validate_objects(files, kube_version, crd_schemas(result.loaded.documents, crd_dirs))
