#include "text/vocab_files.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "base/error.h"
#include "base/file_read.h"
#include "base/json_safe.h"
#include "base/safe_text.h"
#include "text/vocab.h"

namespace attnviz {

namespace {

constexpr uint64_t kMaxVocabularyFileBytes = 256ull << 20;

void checkToken(const std::string& token, const std::string& where) {
  if (token.empty()) throw Error(ErrorKind::BadVocabulary, where + " is an empty token");
  if (token.size() > (size_t)VocabularyLimits::kMaxTokenBytes)
    throw Error(ErrorKind::BadVocabulary,
                where + " is " + std::to_string(token.size()) + " bytes long (at most " +
                    std::to_string(VocabularyLimits::kMaxTokenBytes) + ")");
  // Control characters are tokens too ('\n' in a JSON list, a byte vocabulary): shown escaped.
  if (size_t bad = 0; !isValidUtf8(token, &bad))
    throw Error(ErrorKind::BadVocabulary, where + " is not valid UTF-8");
}

void checkCount(size_t n, const std::string& path) {
  if (n > (size_t)VocabularyLimits::kMaxTokens)
    throw Error(ErrorKind::BadVocabulary,
                path + ": more than " + std::to_string(VocabularyLimits::kMaxTokens) + " tokens");
}

std::vector<std::string> fromJson(const nlohmann::json& j, const std::string& path) {
  std::vector<std::string> tokens;
  if (j.is_array()) {
    checkCount(j.size(), path);
    for (size_t i = 0; i < j.size(); ++i) {
      const std::string where = path + ": entry " + std::to_string(i);
      if (!j[i].is_string()) throw Error(ErrorKind::BadVocabulary, where + " is not a string");
      tokens.push_back(j[i].get<std::string>());
      checkToken(tokens.back(), where);
    }
  } else if (j.is_object()) {
    // token → id, the ids exactly 0 … n-1
    checkCount(j.size(), path);
    tokens.assign(j.size(), std::string());
    for (auto it = j.begin(); it != j.end(); ++it) {
      const std::string where = path + ": token \"" + clipForMessage(it.key(), 60) + "\"";
      const auto& v = it.value();
      if (!v.is_number_integer() || v.get<int64_t>() < 0 ||
          v.get<int64_t>() >= (int64_t)tokens.size())
        throw Error(ErrorKind::BadVocabulary, where + " maps to " + clipForMessage(v.dump(), 30) +
                                                  ", expected an id 0 to " +
                                                  std::to_string(tokens.size() - 1));
      std::string& slot = tokens[(size_t)v.get<int64_t>()];
      if (!slot.empty())
        throw Error(ErrorKind::BadVocabulary, where + " has id " + v.dump() + ", which \"" +
                                                  clipForMessage(slot, 60) + "\" has too");
      checkToken(it.key(), where);
      slot = it.key();
    }
  } else {
    throw Error(ErrorKind::BadVocabulary,
                path + ": expected a JSON list of tokens or an object token → id, found " +
                    jsonTypeName(j));
  }
  return tokens;
}

}  // namespace

std::vector<std::string> readVocabularyFile(const std::string& path) {
  checkedFileSize(path, kMaxVocabularyFileBytes, "the vocabulary file");
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  if (text.rfind("\xEF\xBB\xBF", 0) == 0) text.erase(0, 3);  // a byte-order mark
  // JSON when it opens as a JSON object or list of strings; "[PAD]" on a line of its own is a
  // token (BERT's vocab.txt begins so).
  const size_t start = text.find_first_not_of(" \t\r\n");
  const size_t next =
      start == std::string::npos ? start : text.find_first_not_of(" \t\r\n", start + 1);
  const bool json = start != std::string::npos &&
                    (text[start] == '{' ||
                     (text[start] == '[' && (next == std::string::npos || text[next] == '"' ||
                                             text[next] == ']' || text[next] == '[')));
  std::vector<std::string> tokens;
  if (json) {
    tokens = fromJson(parseJsonStrict(text, path), path);
  } else {
    // One token a line; a trailing newline ends the last line, it adds no token.
    size_t line_start = 0;
    int line = 1;
    while (line_start < text.size()) {
      size_t end = text.find('\n', line_start);
      if (end == std::string::npos) end = text.size();
      std::string token = text.substr(line_start, end - line_start);
      if (!token.empty() && token.back() == '\r') token.pop_back();
      checkToken(token, path + ": line " + std::to_string(line));
      tokens.push_back(std::move(token));
      checkCount(tokens.size(), path);
      line_start = end + 1;
      ++line;
    }
  }
  if (tokens.empty()) throw Error(ErrorKind::BadVocabulary, path + ": the vocabulary is empty");
  std::set<std::string> seen;
  for (size_t i = 0; i < tokens.size(); ++i)
    if (!seen.insert(tokens[i]).second)
      throw Error(ErrorKind::BadVocabulary,
                  path + ": the token \"" + clipForMessage(tokens[i], 60) +
                      "\" appears twice (again as id " + std::to_string(i) + ")");
  return tokens;
}

std::vector<std::string> fitVocabulary(std::vector<std::string> tokens, int V,
                                       const std::string& name, std::vector<std::string>* notes) {
  if ((int)tokens.size() > V) {
    std::string dropped;
    for (int i = V; i < (int)tokens.size() && i < V + 3; ++i)
      dropped += std::string(i > V ? ", " : "") + "\"" + clipForMessage(tokens[i], 30) + "\"";
    notes->push_back(name + ": " + std::to_string(tokens.size() - V) +
                     " tokens beyond the model's " + std::to_string(V) + " rows left out (" +
                     dropped + (tokens.size() - V > 3 ? ", …" : "") + ")");
    tokens.resize(V);
  }
  if ((int)tokens.size() < V) {
    notes->push_back(name + " has " + std::to_string(tokens.size()) + " tokens for " +
                     std::to_string(V) + " rows; the rest are shown as <unused N>");
    for (int i = (int)tokens.size(); i < V; ++i)
      tokens.push_back("<unused " + std::to_string(i) + ">");
  }
  return tokens;
}

}  // namespace attnviz
