// nanoGPT's character vocabulary: data/<dataset>/meta.pkl, a pickled dict {'vocab_size': int,
// 'itos': {int: str}, 'stoi': {str: int}} (prepare.py's pickle.dump), read through the restricted
// unpickler as plain data — a pickle that names any Python object (GLOBAL) is refused.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace attnviz {

// The tokens, index = id (itos; each usually one character, '\n' among them). Throws
// Error(ForbiddenGlobal) for a pickle that names a Python class or function (code execution is
// what a GLOBAL + REDUCE is for), Error(BadPickle / Truncated / TooLarge) for a broken or
// oversized stream, Error(BadVocabulary) naming the entry when the dict is not nanoGPT's: not a
// dict, no itos, keys that are not the ids 0 … n-1, values that are not non-empty strings, a
// stoi or vocab_size that disagrees with itos.
std::vector<std::string> readNanoGptMeta(const std::string& path);
// The same from bytes in memory; `where` names them in messages.
std::vector<std::string> nanoGptMetaFromBytes(const uint8_t* data, size_t size,
                                              const std::string& where);

}  // namespace attnviz
