"""The plugin host: resolving, pinning and preparing plugins, choosing implementations, and calling
them through one wire (`renderer.protocol`) whatever the runtime. It knows invocations, sources
and manifests; never the model or the plan."""
