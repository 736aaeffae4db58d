// Comparing a trace with a PyTorch reference file (tools/make_references.py): the parity
// tolerances, a block built from the reference's [B, L, H, Tq, Tk] tensors, and a cell-by-cell
// comparison that names the first cell outside the tolerance. Shared by the parity suites.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "model/model.h"
#include "test_support.h"

namespace attnviz::test {

// Probabilities to 1e-5 absolute; logits, scores and hidden states to 1e-4 relative (relative to
// max(|reference|, 1), so values near 0 are compared absolutely).
constexpr double kProbTol = 1e-5;
constexpr double kRelTol = 1e-4;

// The folder a CTest fixture wrote, named by its environment variable ("" outside CTest).
inline std::string fixtureDir(const char* env) {
  const char* d = std::getenv(env);
  return d ? d : "";
}

// The fixture's cases.json: a list of cases, empty when it is not there.
inline nlohmann::json fixtureCases(const std::string& dir) {
  std::ifstream in(dir + "/cases.json");
  return in ? nlohmann::json::parse(in) : nlohmann::json::array();
}

inline std::vector<std::vector<int>> idsOf(const nlohmann::json& j, const char* key) {
  if (!j.contains(key)) return {};
  return j[key].get<std::vector<std::vector<int>>>();
}

// The reference batch's inputs (a reference file's __metadata__["inputs"]).
inline Inputs referenceInputs(const nlohmann::json& inputs) {
  Inputs in;
  in.src = idsOf(inputs, "src_ids");
  in.segments = idsOf(inputs, "segment_ids");
  in.tgt = idsOf(inputs, "tgt_ids");
  return in;
}

// A block's cells as whole matrices [batch, heads, q_len, k_len] (the mask repeated per head): a
// reference read from a file, or a trace's block computed whole (AttentionBlock::dense*).
struct DenseBlock {
  AttentionKind kind = AttentionKind::EncoderSelf;
  int layer = 0, batch = 0, heads = 0, q_len = 0, k_len = 0;
  std::vector<float> probs, scores;
  std::vector<uint8_t> mask;
  size_t at(int b, int h, int i, int j) const {
    return (((size_t)b * heads + h) * q_len + i) * k_len + j;
  }
  static DenseBlock of(const AttentionBlock& a) {
    DenseBlock d{a.kind, a.layer, a.batch, a.heads, a.q_len, a.k_len};
    d.probs = a.denseProbs();
    d.scores = a.denseScores();
    d.mask = a.denseMask();
    return d;
  }
};

inline std::string cellName(const DenseBlock& a, int b, int h, int i, int j) {
  return std::string(attentionKindName(a.kind)) + " layer " + std::to_string(a.layer) +
         " b=" + std::to_string(b) + " h=" + std::to_string(h) + " i=" + std::to_string(i) +
         " j=" + std::to_string(j);
}

// Compares `got` with `want` cell by cell: "" when equal within the tolerances, else where and by
// how much they differ.
inline std::string compareBlocks(const DenseBlock& got, const DenseBlock& want) {
  if (got.batch != want.batch || got.heads != want.heads || got.q_len != want.q_len ||
      got.k_len != want.k_len)
    return std::string(attentionKindName(got.kind)) + " layer " + std::to_string(got.layer) +
           ": shape differs";
  for (int b = 0; b < got.batch; ++b)
    for (int h = 0; h < got.heads; ++h)
      for (int i = 0; i < got.q_len; ++i)
        for (int j = 0; j < got.k_len; ++j) {
          const size_t c = got.at(b, h, i, j);
          if (got.mask[c] != want.mask[c]) return "mask at " + cellName(got, b, h, i, j);
          const double dp = std::abs((double)got.probs[c] - want.probs[c]);
          if (!(dp <= kProbTol))
            return "prob at " + cellName(got, b, h, i, j) + " differs by " + std::to_string(dp);
          const double ref = want.scores[c];
          const double ds = std::abs(got.scores[c] - ref) / std::max(std::abs(ref), 1.0);
          if (!(ds <= kRelTol))
            return "score at " + cellName(got, b, h, i, j) + " differs by " + std::to_string(ds);
        }
  return "";
}

inline std::string compareBlocks(const AttentionBlock& got, const AttentionBlock& want) {
  return compareBlocks(DenseBlock::of(got), DenseBlock::of(want));
}

// Every block, logits, class logits and hidden states of `t` against the reference file: "" when
// all agree, else the first difference.
inline std::string compareWithReference(const Trace& t, const SafetensorsFile& ref) {
  int kinds_seen = 0;
  for (AttentionKind kind : kAttentionKinds) {
    const std::string k = attentionKindName(kind);
    if (!ref.contains(k + ".probs")) {
      if (t.has(kind)) return k + ": the model computed blocks the reference lacks";
      continue;
    }
    ++kinds_seen;
    const Tensor scores = ref.toFloat(k + ".scores"), probs = ref.toFloat(k + ".probs");
    const ByteTensor mask = ref.toBytes(k + ".mask");
    const Shape& s = probs.shape;  // [B, L, H, Tq, Tk]
    if (t.layers(kind) != (int)s[1]) return k + ": layer count differs";
    for (int l = 0; l < (int)s[1]; ++l) {
      const AttentionBlock* a = t.block(kind, l);
      DenseBlock want{kind, l, (int)s[0], (int)s[2], (int)s[3], (int)s[4]};
      const size_t cells = (size_t)s[0] * s[2] * s[3] * s[4];
      want.probs.resize(cells);
      want.scores.resize(cells);
      want.mask.resize(cells);
      for (int b = 0; b < s[0]; ++b)
        for (int h = 0; h < s[2]; ++h)
          for (int i = 0; i < s[3]; ++i)
            for (int j = 0; j < s[4]; ++j) {
              const int64_t from = (((b * s[1] + l) * s[2] + h) * s[3] + i) * s[4] + j;
              want.probs[want.at(b, h, i, j)] = probs.data[from];
              want.scores[want.at(b, h, i, j)] = scores.data[from];
              want.mask[want.at(b, h, i, j)] = mask.data[from];
            }
      const std::string diff = compareBlocks(DenseBlock::of(*a), want);
      if (!diff.empty()) return diff;
    }
  }
  if (kinds_seen == 0) return "the reference holds no attention";
  for (const auto& [got, name] :
       {std::pair<const Tensor*, const char*>{&t.logits.dense(), "logits"},
        {&t.class_logits, "class_logits"},
        {&t.hidden, "hidden"}}) {
    if (!ref.contains(name)) {
      if (!got->empty()) return std::string(name) + ": the trace has it, the reference not";
      continue;
    }
    const Tensor want = ref.toFloat(name);
    if (got->shape != want.shape)
      return std::string(name) + ": shape " + shapeToString(got->shape) + " vs reference " +
             shapeToString(want.shape);
    const Diff d = compare(got->ptr(), want.ptr(), want.data.size(), 1.0);
    if (!(d.worst <= kRelTol))
      return std::string(name) + " differ by " + std::to_string(d.worst) +
             " (relative) at flat index " + std::to_string(d.index);
  }
  return "";
}

// The float32 values of a .npy file (version 1.0, '<f4', C order), as numpy.load reads them; empty
// when the file is not one.
inline std::vector<float> readNpyFloats(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char pre[10];
  if (!in.read(pre, 10) || std::string(pre, 6) != "\x93NUMPY" || pre[6] != 1) return {};
  const size_t header_len = (unsigned char)pre[8] | ((unsigned char)pre[9] << 8);
  std::string header(header_len, '\0');
  if (!in.read(header.data(), (std::streamsize)header_len) ||
      header.find("'<f4'") == std::string::npos)
    return {};
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<float> out(bytes.size() / 4);
  std::memcpy(out.data(), bytes.data(), out.size() * 4);
  return out;
}

}  // namespace attnviz::test
