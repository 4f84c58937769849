"""Built-in devlane plugins: one directory per plugin, same contract as any other plugin, used by its short name.

Built-ins run in devlane's process, so modules of this package named `_name.py` (such as `_dbseed`) are code
they share; see README.md, "The built-in catalogue".
"""
