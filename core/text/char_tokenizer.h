// A character-level tokenizer (nanoGPT's shakespeare_char, Karpathy's "Let's build GPT"): each
// character of the text is one token, looked up in the vocabulary as the tutorial's stoi does —
// no spaces implied, no markers added.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "text/tokenizer.h"

namespace attnviz {

// `tokens`: the vocabulary, index = id (meta.pkl's itos); tokens longer than one character are
// never produced. `source` names it in messages ("meta.pkl"). A character the vocabulary lacks is
// Error(BadInput) naming it, escaped, with the vocabulary's first characters.
std::shared_ptr<const Tokenizer> openCharTokenizer(std::vector<std::string> tokens,
                                                   std::string source);

}  // namespace attnviz
