const test = require("node:test");
const assert = require("node:assert");
const { add, mul } = require("../../src/core.js");
test("ac1 add", () => { assert.strictEqual(add(2, 3), 5); });
test("ac2 mul", () => { assert.strictEqual(mul(2, 3), 6); });
