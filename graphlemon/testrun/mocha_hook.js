// mocha event recorder for graphlemon, preloaded with NODE_OPTIONS=--require <this file>.
// Whatever runs mocha (npm scripts, nyc, `npm run` chains, .mocharc, any reporter), every mocha
// Runner started in a process that inherits NODE_OPTIONS appends one JSON line per passed,
// failed (tests and hooks) and pending test, and one per run end, to GRAPHLEMON_MOCHA_EVENTS.
// The project's own arguments and reporter are untouched. Inert in any other node process.
// CommonJS on purpose; Node 12+; mocha 6-11 (lib/runner.js is CommonJS there).
"use strict";

const out = process.env.GRAPHLEMON_MOCHA_EVENTS;
const MAX_VALUE = 1024 * 1024;

if (out) {
  const Module = require("module");
  const fs = require("fs");
  const util = require("util");
  const MOCHA_LIB = /[\\/]mocha[\\/]lib[\\/]/;
  const RUNNER = /(?:^|[\\/])runner(?:\.js)?$/;
  const originalLoad = Module._load;

  const write = (record) => {
    try {
      fs.appendFileSync(out, JSON.stringify(record) + "\n");
    } catch (_) {
      // the report is best effort: the run itself must not fail because of it
    }
  };

  const text = (value) => {
    if (value === undefined) return undefined;
    let shown = typeof value === "string" ? value : undefined;
    if (shown === undefined) {
      try {
        shown = util.inspect(value, { depth: 6, maxArrayLength: 10000, breakLength: Infinity });
      } catch (_) {
        shown = String(value);
      }
    }
    return shown.length > MAX_VALUE ? shown.slice(0, MAX_VALUE) : shown;
  };

  const errorOf = (err) => {
    if (!err || typeof err !== "object") return { message: String(err) };
    const record = {
      name: typeof err.name === "string" ? err.name : undefined,
      message: typeof err.message === "string" ? err.message : String(err.message),
      stack: typeof err.stack === "string" ? err.stack : undefined,
      code: typeof err.code === "string" ? err.code : undefined,
    };
    if ("expected" in err || "actual" in err) {
      record.expected = text(err.expected);
      record.actual = text(err.actual);
      record.showDiff = err.showDiff !== false;
    }
    return record;
  };

  const testOf = (event, test) => {
    let file = test && test.file;
    for (let p = test && test.parent; !file && p; p = p.parent) file = p.file;
    return {
      event,
      type: test && test.type,
      title: test && test.title,
      fullTitle: test && typeof test.fullTitle === "function" ? test.fullTitle() : test && test.title,
      file: file || null,
      pid: process.pid,
    };
  };

  const attach = (runner) => {
    if (!runner || runner.__graphlemonRecorded || typeof runner.on !== "function") return;
    runner.__graphlemonRecorded = true;
    runner.on("pass", (test) => write(testOf("pass", test)));
    runner.on("pending", (test) => write(testOf("pending", test)));
    runner.on("fail", (test, err) => write(Object.assign(testOf("fail", test), { err: errorOf(err) })));
    runner.once("end", () => write({ event: "end", stats: runner.stats || null, pid: process.pid }));
  };

  Module._load = function load(request, parent) {
    const exported = originalLoad.apply(this, arguments);
    if (
      parent &&
      typeof parent.filename === "string" &&
      MOCHA_LIB.test(parent.filename) &&
      RUNNER.test(request) &&
      typeof exported === "function" &&
      exported.prototype &&
      typeof exported.prototype.run === "function" &&
      !exported.prototype.run.__graphlemon
    ) {
      const run = exported.prototype.run;
      const wrapped = function () {
        attach(this);
        return run.apply(this, arguments);
      };
      wrapped.__graphlemon = true;
      exported.prototype.run = wrapped;
    }
    return exported;
  };
}
