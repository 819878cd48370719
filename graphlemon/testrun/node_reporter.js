// node:test reporter for graphlemon: one JSON line per finished test, per start, per stderr chunk.
// Loaded with `node --test --test-reporter=<this file> --test-reporter-destination=<report>`.
// CommonJS on purpose (no package.json beside it); Node 18+.
"use strict";

const util = require("node:util");

// util.inspect for every value (strings quoted): JSON would print NaN and Infinity as null and drop undefined
function value(v) {
  try {
    return util.inspect(v, { depth: 20, maxArrayLength: 10000, breakLength: Infinity });
  } catch (_) {
    return String(v);
  }
}

function error(err) {
  if (!err) return undefined;
  const cause = err.cause && typeof err.cause === "object" ? err.cause : null;
  const e = cause && (cause.message || cause.stack) ? cause : err;
  const out = {
    name: e.name,
    message: typeof e.message === "string" ? e.message : String(e.message),
    stack: typeof e.stack === "string" ? e.stack : undefined,
    code: e.code,
    failureType: err.failureType,
  };
  if ("expected" in e || "actual" in e) {
    out.expected = value(e.expected);
    out.actual = value(e.actual);
    out.operator = e.operator;
  }
  return out;
}

module.exports = async function* graphlemonReporter(source) {
  for await (const event of source) {
    const d = event.data || {};
    let record = null;
    if (event.type === "test:pass" || event.type === "test:fail") {
      const details = d.details || {};
      record = {
        event: event.type === "test:pass" ? "pass" : "fail",
        name: d.name, nesting: d.nesting, file: d.file, line: d.line, column: d.column,
        skip: d.skip === undefined ? undefined : String(d.skip === true ? "" : d.skip),
        todo: d.todo === undefined ? undefined : String(d.todo === true ? "" : d.todo),
        type: details.type, duration_ms: details.duration_ms, error: error(details.error),
      };
    } else if (event.type === "test:start") {
      record = { event: "start", name: d.name, nesting: d.nesting, file: d.file, line: d.line };
    } else if (event.type === "test:stderr" || event.type === "test:stdout") {
      record = { event: event.type.slice(5), file: d.file, message: d.message };
    }
    if (record) yield JSON.stringify(record) + "\n";
  }
};
