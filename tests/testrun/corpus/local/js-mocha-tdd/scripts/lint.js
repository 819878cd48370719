'use strict';
// the project's lint step after its tests: every source file must be strict mode
const fs = require('fs');
const path = require('path');
const dir = path.join(__dirname, '..', 'lib');
for (const name of fs.readdirSync(dir)) {
  if (!fs.readFileSync(path.join(dir, name), 'utf8').startsWith("'use strict';")) {
    console.error(`lint: ${name} is not strict`);
    process.exit(1);
  }
}
console.log('lint: ok');
