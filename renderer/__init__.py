"""devlane: render per-pull-request dev lanes from Kardinal-annotated manifests, offline."""

__version__ = "0.1.0"
