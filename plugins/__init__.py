"""Built-in devlane plugins: one directory per plugin, same contract as any other plugin."""
