"""The plugin wire, shared by the host (`renderer.host`) and the plugin side (`renderer.sdk`).

Standard library only (plus grpc/protobuf in `protocol.grpc`), because it runs inside plugin
processes, which may use their own virtualenv.
"""
