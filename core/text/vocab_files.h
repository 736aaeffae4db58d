// Vocabularies kept the way people keep them: a JSON list of tokens (index = id), a JSON object
// mapping token → id (Hugging Face's vocab.json), or a text file of one token a line (WordPiece's
// vocab.txt, torchtext's get_itos() written out).
#pragma once

#include <string>
#include <vector>

namespace attnviz {

// The tokens, index = id. Throws Error(Io / BadVocabulary / InvalidJson / TooLarge) naming the
// file and the line or entry.
std::vector<std::string> readVocabularyFile(const std::string& path);

// A vocabulary fitted to a model's V rows: tokens past them left out, missing rows shown as
// "<unused N>" (with a note naming `name`, the file).
std::vector<std::string> fitVocabulary(std::vector<std::string> tokens, int V,
                                       const std::string& name, std::vector<std::string>* notes);

}  // namespace attnviz
