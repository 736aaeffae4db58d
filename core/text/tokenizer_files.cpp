#include "text/tokenizer_files.h"

#include <algorithm>
#include <filesystem>

#include "base/error.h"
#include "text/bpe_tokenizer.h"
#include "text/hf_tokenizer_json.h"
#include "text/sentencepiece_tokenizer.h"
#include "text/vocab_files.h"
#include "text/wordpiece_tokenizer.h"

namespace attnviz {

namespace {

namespace fs = std::filesystem;

int indexOf(const std::vector<std::string>& tokens, const std::string& t) {
  auto it = std::find(tokens.begin(), tokens.end(), t);
  return it == tokens.end() ? -1 : (int)(it - tokens.begin());
}

}  // namespace

TokenizerFiles openTokenizerFile(const std::string& path, int bos_id) {
  const fs::path file(path);
  const std::string name = file.filename().string();
  const fs::path dir = file.parent_path();
  TokenizerFiles out;
  const auto gpt2 = findGpt2Files(dir.string());
  if (name == "tokenizer.json") {
    TokenizerJson t = readTokenizerJson(path);
    out.tokenizer = t.tokenizer;
    out.tokens = std::move(t.tokens);
    out.unk_id = t.unk_id;
    out.prefix_ids = t.prefix_ids;
    out.files = name;
  } else if (file.extension() == ".model") {
    if (!sentencePieceAvailable())
      throw Error(ErrorKind::BadConfig,
                  path +
                      ": a SentencePiece model, and this build has no SentencePiece "
                      "(libsentencepiece-dev); give the input as ids");
    out.tokens = readSentencePiecePieces(path);
    out.unk_id = indexOf(out.tokens, "<unk>");
    out.tokenizer = openSentencePieceModel({path, bos_id, -1, false});
    if (bos_id >= 0) out.prefix_ids = {bos_id};
    out.files = name;
  } else if (gpt2 && fs::path(gpt2->vocab).filename() == name) {
    out.tokens = readVocabularyFile(path);
    out.tokenizer = openGpt2Tokenizer(gpt2->merges, out.tokens);
    out.files = name + " + " + fs::path(gpt2->merges).filename().string();
  } else {
    out.tokens = readVocabularyFile(path);
    out.files = name;
  }
  return out;
}

TokenizerFiles openHfFolderTokenizer(const std::string& folder, const std::string& model_type,
                                     int bos_id, std::vector<std::string>* notes) {
  const fs::path dir(folder);
  TokenizerFiles out;
  const bool byte_level =
      model_type == "gpt_neo" || model_type == "gpt_neox" || model_type == "opt";
  if (model_type == "gpt2") {
    if (const auto files = findGpt2Files(folder)) out = openTokenizerFile(files->vocab, -1);
  } else if (byte_level && !fs::exists(dir / "tokenizer.json")) {
    // GPT-2's byte-level BPE (GPT2Tokenizer's vocab.json + merges.txt) when no tokenizer.json.
    if (const auto files = findGpt2Files(folder)) out = openTokenizerFile(files->vocab, -1);
  } else if (model_type == "bert" || model_type == "distilbert") {  // DistilBertTokenizer: BERT's
    if (fs::exists(dir / "vocab.txt")) {
      out.tokens = readVocabularyFile((dir / "vocab.txt").string());
      WordPieceOptions o = wordPieceOptionsFromFolder(folder, out.tokens, notes);
      out.unk_id = indexOf(out.tokens, o.unk_token);
      out.prefix_ids = {indexOf(out.tokens, o.cls_token)};
      out.tokenizer = openWordPiece(o);
      out.files = "vocab.txt";
    }
  } else if (fs::exists(dir / "tokenizer.json")) {
    out = openTokenizerFile((dir / "tokenizer.json").string(), bos_id);
  } else if (fs::exists(dir / "tokenizer.model")) {
    if (!sentencePieceAvailable()) {
      if (notes)
        notes->push_back(
            "this build has no SentencePiece (libsentencepiece-dev): tokenizer.model "
            "is not read; give the input as ids");
      return out;
    }
    out = openTokenizerFile((dir / "tokenizer.model").string(), bos_id);
  }
  if (notes) {
    if (out.tokenizer)
      notes->push_back("tokenizer: " + out.tokenizer->describe() + " from " + out.files);
    else
      notes->push_back("no tokenizer files for model_type \"" + model_type + "\" in " + folder +
                       ": words are looked up in the vocabulary as typed");
  }
  return out;
}

}  // namespace attnviz
