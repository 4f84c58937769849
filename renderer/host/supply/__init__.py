"""Plugin supply: pinning git plugins (`devlane.lock`), the cache they are fetched into, and the
virtualenvs `devlane plugins prepare` builds. Only `plugins lock|fetch|prepare` write here; render
reads the lock, the cache and the virtualenvs, never the network."""
