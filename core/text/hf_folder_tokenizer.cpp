#include "text/hf_folder_tokenizer.h"

#include <algorithm>
#include <filesystem>

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

HfFolderTokenizer openHfFolderTokenizer(const std::string& folder, const std::string& model_type,
                                        int bos_id, std::vector<std::string>* notes) {
  const fs::path dir(folder);
  HfFolderTokenizer out;
  if (model_type == "gpt2") {
    if (const auto files = findGpt2Files(folder)) {
      out.tokens = readVocabularyFile(files->vocab);
      out.tokenizer = openGpt2Tokenizer(files->merges, out.tokens);
      out.files = fs::path(files->vocab).filename().string() + " + " +
                  fs::path(files->merges).filename().string();
    }
  } else if (model_type == "bert") {
    if (fs::exists(dir / "vocab.txt")) {
      out.tokens = readVocabularyFile((dir / "vocab.txt").string());
      WordPieceOptions o = wordPieceOptionsFromFolder(folder, out.tokens, notes);
      out.unk_id = indexOf(out.tokens, o.unk_token);
      out.prefix_ids = {indexOf(out.tokens, o.cls_token)};
      out.tokenizer = openWordPiece(o);
      out.files = "vocab.txt";
    }
  } else if (fs::exists(dir / "tokenizer.json")) {
    TokenizerJson t = readTokenizerJson((dir / "tokenizer.json").string());
    out.tokenizer = t.tokenizer;
    out.tokens = std::move(t.tokens);
    out.unk_id = t.unk_id;
    out.prefix_ids = t.prefix_ids;
    out.files = "tokenizer.json";
  } else if (fs::exists(dir / "tokenizer.model")) {
    if (!sentencePieceAvailable()) {
      if (notes)
        notes->push_back(
            "this build has no SentencePiece (libsentencepiece-dev): tokenizer.model "
            "is not read; give the input as ids");
      return out;
    }
    const std::string path = (dir / "tokenizer.model").string();
    out.tokens = readSentencePiecePieces(path);
    out.unk_id = indexOf(out.tokens, "<unk>");
    out.tokenizer = openSentencePieceModel({path, bos_id, -1, false});
    if (bos_id >= 0) out.prefix_ids = {bos_id};
    out.files = "tokenizer.model";
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
