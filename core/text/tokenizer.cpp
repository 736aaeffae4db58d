#include "text/tokenizer.h"

#include "base/error.h"
#include "base/json_safe.h"

namespace attnviz {

void checkSentenceText(const std::string& text, const std::string& what) {
  if (text.size() > kMaxSentenceBytes)
    throw Error(ErrorKind::BadInput, what + " is " + std::to_string(text.size()) +
                                         " bytes long; at most " +
                                         std::to_string(kMaxSentenceBytes) + " are tokenized");
  if (size_t bad = 0; !isValidUtf8(text, &bad))
    throw Error(ErrorKind::BadInput, what + " is not valid UTF-8 text (invalid byte at position " +
                                         std::to_string(bad) + ")");
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7F)
      throw Error(ErrorKind::BadInput, what + " contains a control character (byte " +
                                           std::to_string(c) + " at position " + std::to_string(i) +
                                           ")");
  }
  if (text.find_first_not_of(" \t\r\n") == std::string::npos)
    throw Error(ErrorKind::BadInput, what + " is empty: type some words");
}

}  // namespace attnviz
