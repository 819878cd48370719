'use strict';
const { Lexer } = require('../lib/lexer');

suite('lexer', function () {
  test('splits a dotted path', function () {
    assert.deepStrictEqual(new Lexer('$.store.bicycle').tokens(), ['$', '.', 'store', '.', 'bicycle']);
  });
  test('splits an index', function () {
    assert.deepStrictEqual(new Lexer('$.book[1]').tokens(), ['$', '.', 'book', '[', '1', ']']);
  });
});
