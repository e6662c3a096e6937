// Compiles every src/*.sol with the pinned solc-js (see package.json) and
// writes build/<Name>.abi (pretty JSON) and build/<Name>.bin (hex, no 0x) for
// each contract. Output is deterministic: sources are read in sorted order,
// keyed by a stable relative path, and no timestamps or absolute paths are
// involved, so re-running on unchanged sources yields byte-identical files.
//
// Usage: node compile.mjs   (run from any directory)

import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import solc from "solc";

// evmVersion must be supported by go-ethereum's simulated backend (which
// activates every fork up to the latest); "cancun" keeps the bytecode usable
// on any current L1/L2 dev chain as well.
const EVM_VERSION = "cancun";
const OPTIMIZER_RUNS = 200;

const here = dirname(fileURLToPath(import.meta.url));
const srcDir = join(here, "src");
const buildDir = join(here, "build");

const files = readdirSync(srcDir)
  .filter((f) => f.endsWith(".sol"))
  .sort();
if (files.length === 0) {
  console.error(`no .sol files in ${srcDir}`);
  process.exit(1);
}

const sources = {};
for (const f of files) {
  sources[`src/${f}`] = { content: readFileSync(join(srcDir, f), "utf8") };
}

const input = {
  language: "Solidity",
  sources,
  settings: {
    optimizer: { enabled: true, runs: OPTIMIZER_RUNS },
    evmVersion: EVM_VERSION,
    outputSelection: {
      "*": { "*": ["abi", "evm.bytecode.object"] },
    },
  },
};

// Imports are not supported on purpose: the contracts are self-contained.
const findImports = (path) => ({ error: `imports are not supported: ${path}` });

const output = JSON.parse(solc.compile(JSON.stringify(input), { import: findImports }));

let failed = false;
for (const e of output.errors ?? []) {
  const msg = e.formattedMessage ?? e.message;
  if (e.severity === "error") {
    failed = true;
    console.error(msg);
  } else {
    console.warn(msg);
  }
}
if (failed) {
  process.exit(1);
}

rmSync(buildDir, { recursive: true, force: true });
mkdirSync(buildDir, { recursive: true });

const seen = new Set();
for (const file of Object.keys(output.contracts ?? {}).sort()) {
  for (const name of Object.keys(output.contracts[file]).sort()) {
    if (seen.has(name)) {
      console.error(`duplicate contract name ${name} (in ${file})`);
      process.exit(1);
    }
    seen.add(name);
    const c = output.contracts[file][name];
    const bin = c.evm.bytecode.object;
    if (!bin) {
      continue; // interfaces / abstract contracts have no bytecode
    }
    writeFileSync(join(buildDir, `${name}.abi`), JSON.stringify(c.abi, null, 2) + "\n");
    // No trailing newline: abigen embeds the .bin contents verbatim.
    writeFileSync(join(buildDir, `${name}.bin`), bin);
    console.log(`compiled ${name} (${bin.length / 2} bytes) with solc ${solc.version()}`);
  }
}
