// Positional encodings as the tutorials compute them: sinusoids (float32, in the same order of
// operations as PyTorch): PE(pos, 2i) = sin(pos · div_i), PE(pos, 2i+1) = cos(pos · div_i),
// div_i = exp(2i · (−ln 10000 / d_model)); and rotary embeddings' angles.
#pragma once

#include "base/tensor.h"

namespace attnviz {

// [len, d_model]
Tensor sinusoidalTable(int len, int d_model);
// [len, d_model]: the same frequencies as [sin(pos·div_0) … sin(pos·div_{d/2-1}) | cos(…) …], as
// Marian's sinusoidal embedding lays them out (computed in double, as it does, then rounded).
Tensor sinusoidalHalvesTable(int len, int d_model);

// Rotary position embeddings' angles as PyTorch computes them in float32 (llama2.c's
// precompute_freqs_cis, Hugging Face's LlamaRotaryEmbedding): pair i of a head turns by
// pos · θ^(−2i/d_head). [2, len, d_head / 2]: the cosines, then the sines.
Tensor rotaryTable(int len, int d_head, float theta);

// PE·PEᵀ over the first `len` positions, each row normalised to unit length (cosine similarity).
Tensor positionSimilarity(const Tensor& table, int len);

}  // namespace attnviz
