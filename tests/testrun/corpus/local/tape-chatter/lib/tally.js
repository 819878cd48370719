'use strict';

// Counts of marks in a text; `clean` drops non-characters (U+FFFE, U+FFFF) and trims each line.
function countHashes(text) {
  return (text.match(/#/g) || []).length;
}

function clean(text) {
  return text
    .split('\n')
    .map((line) => line.replace(/[\uFFFE\uFFFF]/g, '').trim())
    .join('\n');
}

function words(text) {
  return clean(text).split(/\s+/).filter(Boolean);
}

module.exports = { countHashes, clean, words };
