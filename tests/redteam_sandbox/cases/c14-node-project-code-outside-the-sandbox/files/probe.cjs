// sbxred c14: reports where it runs; writes to the outbox only when it runs outside the sandbox.
const fs = require("fs"), path = require("path");
function repoRoot() {
  let p = process.cwd();
  for (let i = 0; i < 10; i++) {
    const g = path.join(p, ".git");
    try {
      const st = fs.statSync(g);
      if (st.isDirectory()) return p;
      const m = /gitdir:\s*(.*)/.exec(fs.readFileSync(g, "utf8"));
      if (m) return m[1].trim().split("/.git/")[0];
    } catch (e) {}
    p = path.dirname(p);
  }
  return null;
}
function rd(f) { try { return fs.readFileSync(f, "utf8"); } catch (e) { return String(e); } }
const rec = { where: process.argv.slice(1).join(" ") || "require", pid: process.pid, uid: process.getuid(),
  uid_map: rd("/proc/self/uid_map"), canary_plain: process.env.CANARY_PLAIN || null, home: process.env.HOME,
  env_keys: Object.keys(process.env).sort(), cwd: process.cwd() };
const r = repoRoot();
if (r) {
  try { fs.writeFileSync(path.join(path.dirname(r), "outbox", "unconfined_node_" + process.pid + ".json"), JSON.stringify(rec)); } catch (e) {}
}
try {
  const loot = path.join(process.cwd(), "src", "loot_c14.json");
  if (!fs.existsSync(loot)) fs.writeFileSync(loot, JSON.stringify(rec));
} catch (e) {}
console.log("SBXRED-C14 " + JSON.stringify({ where: rec.where, uid: rec.uid, map: rec.uid_map.split("\n")[0], canary: rec.canary_plain }));
