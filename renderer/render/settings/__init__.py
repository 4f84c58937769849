"""Settings: `.devlane.yaml`, what the operator and a trusted ref allow, the isolation mode."""
