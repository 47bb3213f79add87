// @ts-check
// OpenClaw's own curated-entry annotation parsing, for tests/test_curated.py to
// compare indexer/sources/curated.py with: reads [{path, text}] as JSON on stdin,
// prints [{importance, triggers, projectKey, stripped}] as OpenClaw's SDK gives them.
//   node scripts/curated-parity.mjs <openclaw>/dist/plugin-sdk
import path from "node:path";
import { pathToFileURL } from "node:url";

const sdkDir = process.argv[2];
const sdk = await import(pathToFileURL(path.join(sdkDir, "memory-core-host-engine-curated.js")).href);
const indexing = await import(pathToFileURL(path.join(sdkDir, "memory-core-host-engine-indexing.js")).href);
let input = "";
for await (const chunk of process.stdin) input += chunk;
const files = /** @type {{ path: string, text: string }[]} */ (JSON.parse(input));
const out = files.map(({ path, text }) => {
  const curatedRoot = ["MEMORY.md", "memory.md", "USER.md"].includes(path);
  const meta = sdk.extractCuratedEntryRecallMetadata({
    curatedRoot,
    projectScopeEligible: path.toUpperCase() !== "USER.MD",
    sourceLines: text.split("\n"),
  });
  return { ...meta, stripped: indexing.stripMemoryAnnotationCarriers(text) };
});
process.stdout.write(JSON.stringify(out));
