const test = require("node:test");
const assert = require("node:assert");
const { add, mul } = require("../../src/core.js");
test("add-then-mul", () => { assert.strictEqual(mul(add(1, 2), 3), 9); });
