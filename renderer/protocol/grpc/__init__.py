"""Generated gRPC code for the devlane plugin protocol (v1alpha1); see README.md to regenerate.

Only grpc/protobuf and these modules are imported here, so plugin servers can use them without
the rest of devlane.
"""
