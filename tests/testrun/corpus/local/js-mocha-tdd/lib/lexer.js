'use strict';

const TOKEN = /\s*(\$|\.\.|\.|\[|\]|\*|\d+|[A-Za-z_]\w*)/g;

// Splits a query text such as `$.store.book[0].title` into tokens.
class Lexer {
  constructor(input) {
    this._input = input;
  }

  tokens() {
    const found = this._input.match(TOKEN) || [];
    const tokens = found.map((t) => t.trim());
    if (tokens.join('') !== this._input.replace(/\s+/g, '')) {
      throw new SyntaxError(`unexpected character in ${JSON.stringify(this._input)}`);
    }
    return tokens;
  }
}

module.exports = { Lexer };
