// The golden ids of tests/tokenizers/goldens (README.md), from Hugging Face's own tokenizers
// library through its Node binding (npm: tokenizers). Never run by the test suite: regen.sh runs
// it with the pinned version after fetch.sh.
//   NODE_PATH=<dir with tokenizers installed> node gen_goldens.js DATA_DIR
// For every folder of DATA_DIR with a tokenizer.json, goldens/<folder>.tsv gets, for each
// string of strings.json and each pair, with and without special tokens, the ids and type ids
// encode() returns. tokenizer_config.json beside it is applied as transformers applies it
// (hftok.h): add_bos_token / add_eos_token, when given, make the post-processor the template
// "[bos] $A [eos]" / "[bos] $A [eos] [bos] $B:1 [eos]:1" of the parts asked for.
'use strict';
const fs = require('fs');
const path = require('path');
const tk = require('tokenizers');

const here = __dirname;
const data = process.argv[2];
if (!data) {
  console.error('usage: node gen_goldens.js DATA_DIR');
  process.exit(2);
}
const version = require(require.resolve('tokenizers/package.json')).version;
const {strings, pairs} = JSON.parse(fs.readFileSync(path.join(here, 'strings.json'), 'utf8'));

function configure(tok, dir) {
  const file = path.join(dir, 'tokenizer_config.json');
  if (!fs.existsSync(file)) return;
  const c = JSON.parse(fs.readFileSync(file, 'utf8'));
  if (!('add_bos_token' in c) && !('add_eos_token' in c)) return;
  const content = (t) => (t && typeof t === 'object' ? t.content : t);
  const bos = c.add_bos_token ? content(c.bos_token) : null;
  const eos = c.add_eos_token ? content(c.eos_token) : null;
  const part = (seq, type) => [bos && `${bos}:${type}`, `$${seq}:${type}`, eos && `${eos}:${type}`].filter(Boolean);
  const single = part('A', 0).join(' ');
  const pair = part('A', 0).concat(part('B', 1)).join(' ');
  const specials = [];
  if (bos) specials.push([bos, tok.tokenToId(bos)]);
  if (eos && eos !== bos) specials.push([eos, tok.tokenToId(eos)]);
  tok.setPostProcessor(tk.templateProcessing(single, pair, specials));
}

async function main() {
  const out = path.join(here, 'goldens');
  fs.mkdirSync(out, {recursive: true});
  const names = fs.readdirSync(data).filter((n) => fs.existsSync(path.join(data, n, 'tokenizer.json'))).sort();
  for (const name of names) {
    const dir = path.join(data, name);
    const tok = tk.Tokenizer.fromFile(path.join(dir, 'tokenizer.json'));
    configure(tok, dir);
    const lines = [`# ${name}: ids from tokenizers@${version} (Node binding), written by gen_goldens.js`,
      '# kind\tindex\tspecial\tids\ttype ids ("-": all 0)'];
    const row = (kind, i, sp, e) => {
      const types = e.getTypeIds();
      lines.push([kind, i, sp ? 1 : 0, e.getIds().join(' '), types.some((t) => t !== 0) ? types.join(' ') : '-'].join('\t'));
    };
    for (let i = 0; i < strings.length; i++)
      for (const sp of [false, true]) row('s', i, sp, await tok.encode(strings[i], null, {addSpecialTokens: sp}));
    for (let i = 0; i < pairs.length; i++)
      for (const sp of [false, true]) row('p', i, sp, await tok.encode(pairs[i][0], pairs[i][1], {addSpecialTokens: sp}));
    fs.writeFileSync(path.join(out, `${name}.tsv`), lines.join('\n') + '\n');
    console.log(`${name}: ${strings.length} strings, ${pairs.length} pairs`);
  }
}
main().catch((e) => {
  console.error(e);
  process.exit(1);
});
