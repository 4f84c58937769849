"""For plugin authors: `devlane plugins new` (scaffold from the templates in `templates/`) and
`devlane plugins test` (golden cases)."""
