// The attention masks exactly as the reference tutorials build them (1 = masked):
// get_attn_pad_mask (keys equal to the pad id), get_attn_subsequence_mask (np.triu(k=1)) and
// their union for decoder self-attention.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace attnviz {

// Which masks are applied; the GUI turns them off to show what leaks through.
struct MaskOptions {
  bool src_padding = true;  // encoder self-attention and cross-attention keys
  bool tgt_padding = true;  // decoder self-attention keys
  bool subsequent = true;   // decoder self-attention: no looking ahead
};

// [B, Tq, Tk]: mask[b, i, j] = (keys[b][j] == pad_id)
std::vector<uint8_t> paddingMask(const std::vector<std::vector<int>>& keys, int q_len, int pad_id);
// [T, T]: mask[i, j] = (j > i)
std::vector<uint8_t> subsequentMask(int len);
// [B, T, T]: padding ∪ subsequent (each part only when enabled)
std::vector<uint8_t> decoderSelfMask(const std::vector<std::vector<int>>& tgt, int pad_id,
                                     bool padding, bool subsequent);

}  // namespace attnviz
