// @ts-check
// Which of OpenClaw's memory features memindex serves, which memory-core does, and
// which nobody does, in this setup (features.json: one table for this status, for
// `memindex doctor` and for docs/OPENCLAW.md).
import fs from "node:fs";

/**
 * @typedef {{ id: string, feature: string, servedBy: string, note?: string }} Feature
 * @type {{ features: Array<Omit<Feature, "servedBy"> & { servedBy: string | { dreaming: string, noDreaming: string } }> }}
 */
const TABLE = JSON.parse(fs.readFileSync(new URL("../features.json", import.meta.url), "utf8"));

/**
 * [{id, feature, servedBy, note?}] with servedBy resolved for the dreaming mode.
 * @param {{ dreaming: boolean }} opts
 * @returns {Feature[]}
 */
export function features({ dreaming }) {
  return TABLE.features.map((f) => {
    const by = typeof f.servedBy === "string" ? f.servedBy : f.servedBy[dreaming ? "dreaming" : "noDreaming"];
    return { id: f.id, feature: f.feature, servedBy: by, ...(f.note ? { note: f.note } : {}) };
  });
}

/**
 * The lines `openclaw memindex status` prints.
 * @param {Feature[]} list
 */
export function featureLines(list) {
  const lines = ["OpenClaw memory features:"];
  for (const who of ["memindex", "memory-core", "nobody"]) {
    const mine = list.filter((f) => f.servedBy === who);
    if (!mine.length) continue;
    lines.push(`  served by ${who}:`);
    for (const f of mine) lines.push(`    - ${f.feature}${f.note ? ` (${f.note})` : ""}`);
  }
  return lines;
}
