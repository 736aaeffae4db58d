// The functions that parameterise the backend's ops — activations, norms, rotary layouts — named
// once for the model's config and every backend.
#pragma once

namespace attnviz {

// Relu: max(0, x); Gelu: x·Φ(x) (exact, erf); GeluTanh: the tanh approximation (GPT-2's
// "gelu_new", minGPT's NewGELU); Silu: x·σ(x); Tanh.
enum class Activation { Relu, Gelu, GeluTanh, Silu, Tanh };

// How a norm op normalises each row x of d values before γ scales it and β (when there is one)
// shifts it:
//   LayerNorm     (x − mean) / √(var + ε), var the biased variance (nn.LayerNorm);
//   LayerNormStd  (x − mean) / (std + ε), std the unbiased standard deviation, ε outside the root
//                 (the Annotated Transformer's own LayerNorm);
//   RmsNorm       x / √(mean(x²) + ε) (Llama, llama2.c; no mean, no β).
enum class NormKind { LayerNorm, LayerNormStd, RmsNorm };

// Which dimensions of a head rotary position embeddings rotate together, by the angle
// pos · θ^(−2i/d_head) of pair i:
//   Interleaved  (x[2i], x[2i+1])        llama2.c, Meta's Llama code (complex numbers);
//   Halves       (x[i], x[i + d_head/2]) Hugging Face's rotate_half.
enum class RopeLayout { Interleaved, Halves };

}  // namespace attnviz
