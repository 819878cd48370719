require("./probe.cjs");
module.exports = {};
