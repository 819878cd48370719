'use strict';
// loaded by the project's own `--require`: the tests use these globals
global.assert = require('assert');
global.STORE = { store: { book: [{ title: 'Sayings' }, { title: 'Sword' }], bicycle: { color: 'red' } } };
