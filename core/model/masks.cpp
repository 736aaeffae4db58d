#include "model/masks.h"

namespace attnviz {

std::vector<uint8_t> paddingMask(const std::vector<std::vector<int>>& keys, int q_len, int pad_id) {
  const size_t B = keys.size();
  const size_t Tk = B ? keys[0].size() : 0;
  std::vector<uint8_t> m(B * q_len * Tk, 0);
  for (size_t b = 0; b < B; ++b)
    for (int i = 0; i < q_len; ++i)
      for (size_t j = 0; j < Tk; ++j) m[(b * q_len + i) * Tk + j] = keys[b][j] == pad_id;
  return m;
}

std::vector<uint8_t> subsequentMask(int len) {
  std::vector<uint8_t> m((size_t)len * len, 0);
  for (int i = 0; i < len; ++i)
    for (int j = i + 1; j < len; ++j) m[(size_t)i * len + j] = 1;
  return m;
}

std::vector<uint8_t> decoderSelfMask(const std::vector<std::vector<int>>& tgt, int pad_id,
                                     bool padding, bool subsequent) {
  const int T = tgt.empty() ? 0 : (int)tgt[0].size();
  std::vector<uint8_t> m =
      padding ? paddingMask(tgt, T, pad_id) : std::vector<uint8_t>(tgt.size() * T * T, 0);
  if (subsequent) {
    for (size_t b = 0; b < tgt.size(); ++b)
      for (int i = 0; i < T; ++i)
        for (int j = i + 1; j < T; ++j) m[(b * T + i) * T + j] = 1;
  }
  return m;
}

}  // namespace attnviz
