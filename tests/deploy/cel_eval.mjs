// Evaluates x-kubernetes-validations rules with a CEL implementation (@bufbuild/cel), for
// tests/deploy/crd_cel_test.cpp. No API server is at hand to compile the CRDs' rules, so
// this is the next best check: each rule parses and gives the expected answer on objects
// typed the way the API server types them.
//
//   node cel_eval.mjs NODE_MODULES_DIR CASES.json
//
// CASES.json: [{"rule": "...", "schema": {...}, "self": ...}, ...]; `schema` is the
// openAPIV3Schema node the rule sits on. Prints [{"value": true|false|null, "error": null|"..."}].
//
// Values are converted as the API server converts them for CEL: `type: integer` to int
// (BigInt here; a JS number would be a CEL double), `type: number` to double, strings with
// `format: date-time` to google.protobuf.Timestamp, objects to maps (has() tests presence
// either way), and lists element by element. Not modelled: the type checker (the API server
// compiles each rule against the schema's types before accepting the CRD) and the cost
// estimator; the rules are kept simple enough that neither is in doubt.
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import path from "node:path";

const [modules, input] = process.argv.slice(2);
const require = createRequire(path.join(path.resolve(modules), "noop.js"));
const cel = require("@bufbuild/cel");

function untyped(v) {
  if (Array.isArray(v)) return v.map(untyped);
  if (v !== null && typeof v === "object") {
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, untyped(x)]));
  }
  if (typeof v === "number" && Number.isInteger(v)) return BigInt(v);
  return v;
}

function convert(v, s) {
  if (v === null || v === undefined) return null;
  if (!s || s["x-kubernetes-preserve-unknown-fields"] && !s.properties && !s.type) return untyped(v);
  switch (s.type) {
    case "integer":
      return typeof v === "number" ? BigInt(v) : v;
    case "number":
      return typeof v === "number" ? v : v;
    case "string":
      if (s.format === "date-time" || s.format === "datetime") return cel.run("timestamp(s)", { s: v });
      return v;
    case "array":
      return Array.isArray(v) ? v.map((x) => convert(x, s.items)) : v;
    case "object": {
      if (typeof v !== "object" || Array.isArray(v)) return v;
      const out = {};
      for (const [k, x] of Object.entries(v)) {
        const child = s.properties && s.properties[k] ? s.properties[k]
                    : typeof s.additionalProperties === "object" ? s.additionalProperties : undefined;
        out[k] = child ? convert(x, child) : untyped(x);
      }
      return out;
    }
    default:
      if (s["x-kubernetes-int-or-string"]) return untyped(v);
      return untyped(v);
  }
}

const cases = JSON.parse(readFileSync(input, "utf8"));
const results = cases.map((c) => {
  try {
    const value = cel.run(c.rule, { self: convert(c.self, c.schema) });
    return typeof value === "boolean" ? { value, error: null } : { value: null, error: "not a bool: " + String(value) };
  } catch (e) {
    return { value: null, error: String(e && e.message ? e.message : e) };
  }
});
process.stdout.write(JSON.stringify(results));
