const test = require("node:test");
require("../probe.cjs");
test("probe", () => {});
