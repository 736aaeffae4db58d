#include "trace.h"

namespace attnviz {

const char* attentionKindName(AttentionKind kind) {
  switch (kind) {
    case AttentionKind::EncoderSelf: return "enc_self";
    case AttentionKind::DecoderSelf: return "dec_self";
    case AttentionKind::Cross: return "cross";
  }
  return "?";
}

const char* attentionKindTitle(AttentionKind kind) {
  switch (kind) {
    case AttentionKind::EncoderSelf: return "Encoder self-attention";
    case AttentionKind::DecoderSelf: return "Decoder masked self-attention";
    case AttentionKind::Cross: return "Encoder-decoder (cross) attention";
  }
  return "?";
}

const AttentionTrace& Trace::get(AttentionKind kind) const {
  switch (kind) {
    case AttentionKind::EncoderSelf: return enc_self;
    case AttentionKind::DecoderSelf: return dec_self;
    default: return cross;
  }
}

AttentionTrace& Trace::get(AttentionKind kind) {
  return const_cast<AttentionTrace&>(static_cast<const Trace*>(this)->get(kind));
}

uint64_t estimateTraceBytes(int B, int S, int T, int enc_layers, int dec_layers, int heads,
                            int tgt_vocab, bool keep_scores) {
  const uint64_t per = keep_scores ? 8 : 4;  // probs (+ scores) as float32
  const uint64_t b = (uint64_t)B, s = (uint64_t)S, t = (uint64_t)T, h = (uint64_t)heads;
  uint64_t bytes = per * b * h * ((uint64_t)enc_layers * s * s + (uint64_t)dec_layers * (t * t + t * s));
  bytes += b * (s * s + t * t + t * s);      // masks
  bytes += 4 * b * t * (uint64_t)tgt_vocab;  // logits
  return bytes;
}

}  // namespace attnviz
