'use strict';
const { parse, query } = require('../lib/query');

suite('query', function () {
  test('parses a path', function () {
    assert.deepStrictEqual(parse('$.store.book[0].title'), ['store', 'book', 0, 'title']);
  });
  test('reads a nested value', function () {
    assert.strictEqual(query(STORE, '$.store.bicycle.color'), 'red');
  });
  test('reads an array item', function () {
    assert.strictEqual(query(STORE, '$.store.book[1].title'), 'Sword');
  });
  test('rejects a query without $', function () {
    assert.throws(() => parse('store.book'), /starts with \$/);
  });
});
