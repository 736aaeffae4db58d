// tokenizer.json files shaped as Llama 3's and Qwen2's (a Split pre-tokenizer with their public
// patterns, then ByteLevel without its own regex), and small ones for every Split behaviour, each
// run by Hugging Face's own Rust tokenizers through its Node binding (the npm package
// `tokenizers`): the independent reference attnviz's tokenizer.json reader is compared with
// (tests/hf_tokenizers_node_check.sh; the committed output is tests/data/tokenizers/split/).
//
// usage: node tools/hf_tokenizers_reference.js TOKENIZERS_DIR STRINGS_JSON OUT_DIR
//   TOKENIZERS_DIR: the package's folder (node_modules/tokenizers)
//   STRINGS_JSON: tests/data/tokenizers/strings.json (the strings below are added to them)
// Writes OUT_DIR/NAME.tokenizer.json for each tokenizer and OUT_DIR/cases.json:
// {"reference": "tokenizers 0.23.2", "tokenizers": {NAME: [{"text": …, "ids": […]}, …]}}.
//
// Each vocabulary is the 256 byte-level characters plus merges learned here from the strings
// themselves (plain BPE: the most frequent pair of the pieces the package's own pre-tokenizer
// cuts, ties to the smallest pair), so that the merges act on these strings.
const fs = require('fs');
const path = require('path');

const [dir, stringsPath, outDir] = process.argv.slice(2);
if (!dir || !stringsPath || !outDir) {
  console.error('usage: node hf_tokenizers_reference.js TOKENIZERS_DIR STRINGS_JSON OUT_DIR');
  process.exit(2);
}
const hf = require(path.resolve(dir));
const version = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')).version;

// The patterns as the models' tokenizer.json files hold them (Meta's Llama 3 and Qwen2's).
const LLAMA3 =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const QWEN2 =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

const extra = [
  "I'M HERE, WE'LL SEE, THEY'RE OUT, IT'S 'S 'T",
  "She'S he'Ll we'Ve you'D",
  '1234567890 12 123 1234 12345',
  '3.14159265358979 and 2,718,281,828',
  'line one\r\nline two\r\n\r\nline four',
  'tabs\t\tand\t spaces    mixed \t\n end',
  '          ten spaces then text',
  'text then ten spaces          ',
  '\n\n\nthree newlines first',
  'a\n \n b',
  '   \n   ',
  '数字１２３ and ٣٤٥ and ⅫⅪ',
  '🤗🤗🤗 emoji 👩‍👩‍👧‍👦 family',
  'caf\u00e9 cafe\u0301 e\u0301\u0301',
  '<|begin_of_text|>Hello<|end_of_text|>',
  'before <|begin_of_text|> after',
  '<|im_start|>user\nhi<|im_end|>',
  'x<|endoftext|>y <|endoftext|> z',
  '...!!!???   ,,,',
  '$100.00 (approx.) — “quoted” ‘single’',
  'a-b_c.d/e\\f|g',
];

// What attnviz refuses as a sentence (only whitespace, control characters) is no case.
const typeable = (s) => !/^[ \t\r\n]*$/.test(s) && !/[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]/.test(s);
const strings = JSON.parse(fs.readFileSync(stringsPath, 'utf8'))
  .map((s) => s.text)
  .concat(extra)
  .filter(typeable);

// GPT-2's byte → character table (bytes_to_unicode): the vocabulary's first 256 tokens.
function byteChars() {
  const out = [];
  let extraCp = 0;
  for (let b = 0; b < 256; ++b) {
    const printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || b >= 0xae;
    out.push(String.fromCodePoint(printable ? b : 256 + extraCp++));
  }
  return out;
}

const split = (pattern, behavior, invert) => ({
  type: 'Split',
  pattern: {Regex: pattern},
  behavior: behavior,
  invert: invert,
});
const byteLevel = {type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: false};

// name → [pre_tokenizer, added tokens, template's first token or null]
const specs = {
  llama3: [{type: 'Sequence', pretokenizers: [split(LLAMA3, 'Isolated', false), byteLevel]},
    ['<|begin_of_text|>', '<|end_of_text|>'], '<|begin_of_text|>'],
  qwen2: [{type: 'Sequence', pretokenizers: [split(QWEN2, 'Isolated', false), byteLevel]},
    ['<|endoftext|>', '<|im_start|>', '<|im_end|>'], null],
  removed: [{type: 'Sequence', pretokenizers: [split('\\s+', 'Removed', false), byteLevel]}, [], null],
  merged_with_previous:
    [{type: 'Sequence', pretokenizers: [split('[.,!?;:]+|\\s', 'MergedWithPrevious', false), byteLevel]}, [], null],
  merged_with_next:
    [{type: 'Sequence', pretokenizers: [split('\\s+|\\p{P}', 'MergedWithNext', false), byteLevel]}, [], null],
  contiguous: [{type: 'Sequence', pretokenizers: [split('\\p{N}|\\s', 'Contiguous', false), byteLevel]}, [], null],
  inverted: [{type: 'Sequence', pretokenizers: [split('\\p{L}+|\\p{N}', 'Isolated', true), byteLevel]}, [], null],
  inverted_removed:
    [{type: 'Sequence', pretokenizers: [split('\\p{L}+', 'Removed', true), byteLevel]}, [], null],
  string_pattern: [{type: 'Sequence', pretokenizers: [
    {type: 'Split', pattern: {String: '. '}, behavior: 'MergedWithPrevious', invert: false}, byteLevel]}, [], null],
  empty_matches: [{type: 'Sequence', pretokenizers: [split('(?=\\p{Lu})|\\b', 'Isolated', false), byteLevel]}, [], null],
};

function tokenizerJson(spec, vocab, merges) {
  const [pre, added, first] = spec;
  const addedTokens = added.map((content, i) => ({
    id: Object.keys(vocab).length + i, content: content, single_word: false, lstrip: false,
    rstrip: false, normalized: false, special: true,
  }));
  const post = first === null ?
    {type: 'ByteLevel', add_prefix_space: true, trim_offsets: false, use_regex: true} :
    {type: 'Sequence', processors: [
      {type: 'ByteLevel', add_prefix_space: true, trim_offsets: false, use_regex: true},
      {type: 'TemplateProcessing', single: [{SpecialToken: {id: first, type_id: 0}}, {Sequence: {id: 'A', type_id: 0}}],
        pair: [{SpecialToken: {id: first, type_id: 0}}, {Sequence: {id: 'A', type_id: 0}},
          {SpecialToken: {id: first, type_id: 1}}, {Sequence: {id: 'B', type_id: 1}}],
        special_tokens: {[first]: {id: first, ids: [addedTokens[0].id], tokens: [first]}}}]};
  return {
    version: '1.0', truncation: null, padding: null, added_tokens: addedTokens, normalizer: null,
    pre_tokenizer: pre, post_processor: post,
    decoder: {type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true},
    model: {type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: null,
      end_of_word_suffix: null, fuse_unk: false, byte_fallback: false, ignore_merges: false,
      vocab: vocab, merges: merges},
  };
}

// Plain BPE on the words the package's pre-tokenizer cuts (each a list of byte characters).
function learnMerges(words, count) {
  const seqs = [...words.entries()].map(([w, n]) => [Array.from(w), n]);
  const merges = [];
  for (let k = 0; k < count; ++k) {
    const pairs = new Map();
    for (const [s, n] of seqs)
      for (let i = 0; i + 1 < s.length; ++i) {
        const key = s[i] + ' ' + s[i + 1];
        pairs.set(key, (pairs.get(key) || 0) + n);
      }
    let best = null;
    for (const [key, n] of pairs)
      if (best === null || n > best[1] || (n === best[1] && key < best[0])) best = [key, n];
    if (best === null || best[1] < 2) break;
    const [a, b] = best[0].split(' ');
    merges.push(best[0]);
    for (const entry of seqs) {
      const s = entry[0], t = [];
      for (let i = 0; i < s.length; ++i) {
        if (i + 1 < s.length && s[i] === a && s[i + 1] === b) t.push(a + b), ++i;
        else t.push(s[i]);
      }
      entry[0] = t;
    }
  }
  return merges;
}

async function main() {
  fs.mkdirSync(outDir, {recursive: true});
  const alphabet = byteChars();
  const result = {reference: 'tokenizers ' + version, tokenizers: {}};
  for (const [name, spec] of Object.entries(specs)) {
    const vocab = {};
    alphabet.forEach((c, i) => (vocab[c] = i));
    const bare = hf.Tokenizer.fromString(JSON.stringify(tokenizerJson(spec, vocab, [])));
    const words = new Map();
    for (const s of strings)
      for (const [piece] of bare.getPreTokenizer().preTokenizeString(s))
        words.set(piece, (words.get(piece) || 0) + 1);
    const merges = learnMerges(words, 400);
    for (const m of merges) {
      const merged = m.replace(' ', '');
      if (!(merged in vocab)) vocab[merged] = Object.keys(vocab).length;
    }
    const file = path.join(outDir, name + '.tokenizer.json');
    fs.writeFileSync(file, JSON.stringify(tokenizerJson(spec, vocab, merges), null, 1) + '\n');
    const tok = hf.Tokenizer.fromFile(file);
    const cases = [];
    for (const text of strings) {
      const enc = await tok.encode(text);
      cases.push({text: text, ids: enc.getIds()});
    }
    result.tokenizers[name] = cases;
  }
  // One case a line: the committed file reads in a diff.
  const lists = Object.entries(result.tokenizers).map(([name, cases]) =>
    JSON.stringify(name) + ': [\n' + cases.map((c) => JSON.stringify(c)).join(',\n') + '\n]');
  fs.writeFileSync(path.join(outDir, 'cases.json'),
    '{"reference": ' + JSON.stringify(result.reference) + ',\n"tokenizers": {\n' +
      lists.join(',\n') + '\n}}\n');
  console.log(`hf_tokenizers_reference: ${Object.keys(specs).length} tokenizers, ` +
    `${strings.length} strings each, by tokenizers ${version}`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
