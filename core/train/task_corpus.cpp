#include "train/task_corpus.h"

#include "base/error.h"

namespace attnviz {

namespace {

std::string joinWords(const std::vector<std::string>& words) {
  std::string s;
  for (const std::string& w : words) {
    if (!s.empty()) s += ' ';
    s += w;
  }
  return s;
}

}  // namespace

Corpus trainingTaskCorpus(const Task& task) {
  Corpus c;
  c.origin = "the " + task.name() + " task's held-out sentences";
  for (const Example& ex : task.heldOut()) {
    CorpusEntry e;
    e.src = joinWords(ex.src);
    e.tgt = joinWords(ex.tgt);
    e.has_tgt = true;
    c.entries.push_back(std::move(e));
  }
  if (c.entries.empty())
    throw Error(ErrorKind::BadInput, "the " + task.name() + " task has no held-out sentences");
  return c;
}

}  // namespace attnviz
