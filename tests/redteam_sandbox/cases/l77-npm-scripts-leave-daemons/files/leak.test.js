// leakred payload l77: a node:test file that leaves a detached child
const { test } = require('node:test');
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
test('leaves a detached sleep', () => {
  const env = { ...process.env, LKMARK: 'LKMARK-l77' };
  const c = spawn('sleep', ['923'], { detached: true, stdio: 'ignore', env });
  c.unref();
  const d = spawn(process.execPath, ['-e', 'setTimeout(()=>{}, 924000)', 'LKMARK-l77-node'], { detached: true, stdio: 'ignore', env });
  d.unref();
  fs.writeFileSync(path.join(__dirname, 'ran_l77.txt'), 'started ' + c.pid + ' ' + d.pid);
});
