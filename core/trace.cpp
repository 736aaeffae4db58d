#include "trace.h"

#include <limits>

namespace attnviz {

const char* attentionKindName(AttentionKind kind) {
  switch (kind) {
    case AttentionKind::EncoderSelf:
      return "enc_self";
    case AttentionKind::DecoderSelf:
      return "dec_self";
    case AttentionKind::Cross:
      return "cross";
  }
  return "?";
}

const char* attentionKindTitle(AttentionKind kind) {
  switch (kind) {
    case AttentionKind::EncoderSelf:
      return "Encoder self-attention";
    case AttentionKind::DecoderSelf:
      return "Decoder masked self-attention";
    case AttentionKind::Cross:
      return "Encoder-decoder (cross) attention";
  }
  return "?";
}

const AttentionTrace& Trace::get(AttentionKind kind) const {
  switch (kind) {
    case AttentionKind::EncoderSelf:
      return enc_self;
    case AttentionKind::DecoderSelf:
      return dec_self;
    default:
      return cross;
  }
}

AttentionTrace& Trace::get(AttentionKind kind) {
  return const_cast<AttentionTrace&>(static_cast<const Trace*>(this)->get(kind));
}

namespace {
uint64_t satMul(uint64_t a, uint64_t b) {
  if (a != 0 && b > std::numeric_limits<uint64_t>::max() / a)
    return std::numeric_limits<uint64_t>::max();
  return a * b;
}
uint64_t satAdd(uint64_t a, uint64_t b) {
  return b > std::numeric_limits<uint64_t>::max() - a ? std::numeric_limits<uint64_t>::max()
                                                      : a + b;
}
}  // namespace

uint64_t estimateTraceBytes(int B, int S, int T, int enc_layers, int dec_layers, int heads,
                            int tgt_vocab, bool keep_scores) {
  // Saturating arithmetic: a huge batch gives UINT64_MAX instead of wrapping to a small number.
  const uint64_t per = keep_scores ? 8 : 4;  // probs (+ scores) as float32
  const uint64_t b = (uint64_t)B, s = (uint64_t)S, t = (uint64_t)T, h = (uint64_t)heads;
  const uint64_t attn = satAdd(satMul((uint64_t)enc_layers, satMul(s, s)),
                               satMul((uint64_t)dec_layers, satAdd(satMul(t, t), satMul(t, s))));
  uint64_t bytes = satMul(satMul(per, b), satMul(h, attn));
  bytes =
      satAdd(bytes, satMul(b, satAdd(satMul(s, s), satAdd(satMul(t, t), satMul(t, s)))));  // masks
  bytes = satAdd(bytes, satMul(satMul(4, b), satMul(t, (uint64_t)tgt_vocab)));             // logits
  return bytes;
}

}  // namespace attnviz
