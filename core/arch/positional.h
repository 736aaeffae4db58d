// Positional encodings as the tutorials compute them: sinusoids (float32, in the same order of
// operations as PyTorch): PE(pos, 2i) = sin(pos · div_i), PE(pos, 2i+1) = cos(pos · div_i),
// div_i = exp(2i · (−ln 10000 / d_model)); and rotary embeddings' angles.
#pragma once

#include <vector>

#include "arch/weights.h"
#include "base/tensor.h"
#include "compute/functions.h"

namespace attnviz {

// [len, d_model]
Tensor sinusoidalTable(int len, int d_model);
// [len, d_model]: the same frequencies as [sin(pos·div_0) … sin(pos·div_{d/2-1}) | cos(…) …], as
// Marian's sinusoidal embedding lays them out (computed in double, as it does, then rounded).
Tensor sinusoidalHalvesTable(int len, int d_model);
// [len, d_model]: fairseq's sinusoid as M2M100SinusoidalPositionalEmbedding.get_embedding builds
// it in float32 — f_k = exp(k · −ln(10000)/(d/2 − 1)), row r = [sin(r·f) | cos(r·f)] (a zero last
// column when d_model is odd) — with row p holding its row padding_idx + 1 + p, where position p
// of a sentence without padding reads it. d_model >= 4.
Tensor sinusoidalFairseqTable(int len, int d_model, int padding_idx);

// Rotary position embeddings' angles as PyTorch computes them in float32 (llama2.c's
// precompute_freqs_cis, Hugging Face's LlamaRotaryEmbedding): pair i of a head turns by
// pos · θ^(−2i/d_head). [2, len, d_head / 2]: the cosines, then the sines.
Tensor rotaryTable(int len, int d_head, float theta);
// The rotation speeds of those pairs, θ^(−2i/d_head) radians per position, i = 0 … d_head/2 − 1,
// in float32 as rotaryTable turns them. [d_head / 2]
std::vector<float> rotaryFrequencies(int d_head, float theta);
// What rotary positions do to a score: the vector x [d_head] put at every position 0 … len − 1,
// turned by the forward pass's own rope_forward (the CPU backend, rotaryTable, the pair layout),
// and the rotated copies compared: [len, len], cell (m, n) = ⟨R(m)x, R(n)x⟩ / |x|².
Tensor rotaryScores(int len, int d_head, float theta, RopeLayout layout,
                    const std::vector<float>& x);

// T5's relative position bias as the forward pass adds it to the score of query position i and key
// position j in head h of a stack's self-attention: the stack's table [relative_buckets, n_heads]
// at row bucket(j − i) (compute/position_buckets.h), bidirectional in the encoder, causal in the
// decoder. `bucket`, when given, receives the row read. Needs Positional::Relative and the table.
float relativePositionBias(const ModelConfig& cfg, const StackWeights& stack, bool decoder, int h,
                           int i, int j, int* bucket = nullptr);
// Those biases for positions 0 … n − 1: [n, n], cell (i, j).
Tensor relativePositionBiasMatrix(const ModelConfig& cfg, const StackWeights& stack, bool decoder,
                                  int h, int n);

// PE·PEᵀ over the first `len` positions, each row normalised to unit length (cosine similarity).
Tensor positionSimilarity(const Tensor& table, int len);

}  // namespace attnviz
