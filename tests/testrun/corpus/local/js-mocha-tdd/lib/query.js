'use strict';

const { Lexer } = require('./lexer');

function parse(text) {
  const source = String(text);
  const tokens = new Lexer(source).tokens();
  if (tokens[0] !== '$') throw new SyntaxError('a query starts with $');
  const path = [];
  for (let i = 1; i < tokens.length; i++) {
    const t = tokens[i];
    if (t === '.' || t === '[' || t === ']') continue;
    path.push(/^\d+$/.test(t) ? Number(t) : t);
  }
  return path;
}

function query(obj, text) {
  return parse(text).reduce((value, key) => (value == null ? undefined : value[key]), obj);
}

module.exports = { parse, query };
