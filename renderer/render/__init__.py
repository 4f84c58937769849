"""The render pipeline: one package per stage, in pipeline order (the import-linter contract `pipeline` in
pyproject.toml keeps a stage from importing a later one):

settings (`.devlane.yaml`, trust, isolation mode, each stage's settings) -> inputs (files -> documents) ->
model (topology and the whole-repository index) -> stored (the early cutoff: the model kept for the next
render) -> plan (which services get a dev version) -> copies (the dev copies, per isolation mode) ->
plugins (calls through `renderer.host`, held to the output policy) -> routing (entries and mesh rules) ->
checks (invariants and the routing proof, from the objects) -> output (files, written atomically).

`renderer/api.py` runs them in that order; see the README's architecture section.
"""
