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

  // both strings: kept as they are ("text"); otherwise both printed by util.inspect ("inspect"), strings quoted,
  // so a string is never taken for the value it spells
  const text = (value, raw) => {
    let shown;
    if (raw) {
      shown = value;
    } else {
      try {
        shown = util.inspect(value, { depth: 20, maxArrayLength: 10000, maxStringLength: MAX_VALUE, breakLength: Infinity });
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
      const values = err.__graphlemonValues || { expected: err.expected, actual: err.actual };
      const raw = typeof values.expected === "string" && typeof values.actual === "string";
      record.expected = text(values.expected, raw);
      record.actual = text(values.actual, raw);
      record.valueFormat = raw ? "text" : "inspect";
      record.showDiff = err.showDiff !== false;
    }
    return record;
  };

  // the values as the assertion made them: a reporter's fail listener (mocha's Base) turns objects into its
  // diff form in place, so they are taken by a listener that runs before any reporter's
  const keepValues = (test, err) => {
    if (err && typeof err === "object" && ("expected" in err || "actual" in err) && !err.__graphlemonValues) {
      try {
        Object.defineProperty(err, "__graphlemonValues", {
          value: { expected: err.expected, actual: err.actual }, enumerable: false, configurable: true,
        });
      } catch (_) {
        // a frozen error: its values are read as they are later
      }
    }
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
    if (typeof runner.prependListener === "function") runner.prependListener("fail", keepValues);
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
