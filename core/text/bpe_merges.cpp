#include "text/bpe_merges.h"

#include <queue>

namespace attnviz {

void BpeMerges::set(int left, int right, int merged, int rank) {
  table_[key(left, right)] = Merge{rank, merged};
}

const BpeMerges::Merge* BpeMerges::find(int left, int right) const {
  if (left < 0 || right < 0) return nullptr;
  auto it = table_.find(key(left, right));
  return it == table_.end() ? nullptr : &it->second;
}

void BpeMerges::apply(std::vector<int>& ids) const {
  const int n = (int)ids.size();
  if (n < 2 || table_.empty()) return;
  // The symbols as a doubly linked list over positions; a merged symbol lives on at the left
  // position, the right one is dead.
  std::vector<int> prev(n), next(n);
  std::vector<char> alive(n, 1);
  for (int i = 0; i < n; ++i) prev[i] = i - 1, next[i] = i + 1 < n ? i + 1 : -1;
  // Candidates (rank, left position, the right symbol's id when pushed): stale ones are skipped.
  struct Candidate {
    int rank, pos, left_id, right_id;
    bool operator>(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
  auto push = [&](int pos) {
    if (pos < 0 || next[pos] < 0) return;
    if (const Merge* m = find(ids[pos], ids[next[pos]]))
      heap.push({m->rank, pos, ids[pos], ids[next[pos]]});
  };
  for (int i = 0; i + 1 < n; ++i) push(i);
  while (!heap.empty()) {
    const Candidate c = heap.top();
    heap.pop();
    const int r = next[c.pos];
    if (!alive[c.pos] || r < 0 || ids[c.pos] != c.left_id || ids[r] != c.right_id) continue;
    ids[c.pos] = find(c.left_id, c.right_id)->merged;
    alive[r] = 0;
    next[c.pos] = next[r];
    if (next[r] >= 0) prev[next[r]] = c.pos;
    push(prev[c.pos]);
    push(c.pos);
  }
  std::vector<int> out;
  for (int i = 0; i >= 0; i = next[i]) out.push_back(ids[i]);
  ids.swap(out);
}

}  // namespace attnviz
