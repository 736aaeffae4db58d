// GPT-2's tokenizer as the npm package gpt-3-encoder (MIT) implements it in JavaScript: the
// independent reference attnviz's byte-level BPE is compared with (tests/gpt2_node_check.sh).
//
// usage: node tools/gpt2_reference.js GPT3_ENCODER_DIR STRINGS_JSON > gpt2_node.json
//   GPT3_ENCODER_DIR: the package's folder (node_modules/gpt-3-encoder)
//   STRINGS_JSON: tests/data/tokenizers/strings.json; the strings marked gpt2_js are encoded
// Prints [{"text": …, "ids": […]}, …] with the package's version.
const fs = require('fs');
const path = require('path');

const [dir, stringsPath] = process.argv.slice(2);
if (!dir || !stringsPath) {
  console.error('usage: node gpt2_reference.js GPT3_ENCODER_DIR STRINGS_JSON');
  process.exit(2);
}
const encoder = require(path.resolve(dir));
const version = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')).version;
const strings = JSON.parse(fs.readFileSync(stringsPath, 'utf8'));
const cases = strings.filter((s) => s.gpt2_js).map((s) => ({text: s.text, ids: encoder.encode(s.text)}));
process.stdout.write(JSON.stringify({encoder: 'gpt-3-encoder ' + version, cases: cases}, null, 1) + '\n');
