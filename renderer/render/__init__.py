"""The render pipeline: one stage per module, each a function from typed records to a frozen record.

config/load -> flow (template) -> steps (pre-render) -> model (+ plugin_defs) -> plan -> clone ->
apply_plugins (through `renderer.host`) -> routing -> emit -> steps (post-render) -> write, with
`invariants` checked between stages. See the README's architecture section.
"""
