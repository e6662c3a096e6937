// Prints the gzip size of each built app and fails when the widget is over its budget.
// The build runs it last, so CI's `make check-widget` enforces the budget on every run.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";

const dist = new URL("../../server/internal/webui/dist/", import.meta.url).pathname;
const budgets = { widget: 100 * 1024, panel: 150 * 1024 };

function files(dir) {
  return readdirSync(dir).flatMap((f) => (statSync(join(dir, f)).isDirectory() ? files(join(dir, f)) : [join(dir, f)]));
}

let failed = false;
for (const [app, budget] of Object.entries(budgets)) {
  let raw = 0;
  let gz = 0;
  for (const f of files(join(dist, app))) {
    const b = readFileSync(f);
    raw += b.length;
    gz += gzipSync(b, { level: 9 }).length;
  }
  const ok = gz <= budget;
  failed ||= !ok;
  console.log(`${app}: ${(raw / 1024).toFixed(1)} KB raw, ${(gz / 1024).toFixed(1)} KB gzip (budget ${budget / 1024} KB)${ok ? "" : "  OVER BUDGET"}`);
}
process.exit(failed ? 1 : 0);
