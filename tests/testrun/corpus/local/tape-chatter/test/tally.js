'use strict';
const test = require('tape');
const { countHashes, clean, words } = require('../lib/tally');

test('hashes', (t) => {
  t.equal(countHashes('a # b ## c'), 3, 'counts every # in the text');
  t.equal(countHashes('none'), 0, 'no marks');
  t.end();
});

test('clean', (t) => {
  t.equal(clean('ab\uFFFFcd'), 'abcd', 'drops U+FFFF');
  t.equal(clean('  x  \n y '), 'x\ny', 'trims lines');
  t.end();
});

test('words', (t) => {
  t.deepEqual(words(' one\uFFFF two '), ['one', 'two'], 'splits cleaned text');
  t.end();
});
