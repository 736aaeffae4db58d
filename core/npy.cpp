#include "npy.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "error.h"

namespace attnviz {

namespace {

void writeNpyRaw(const std::string& path, const char* descr, const void* data, size_t bytes,
                 const Shape& shape) {
  std::string shp = "(";
  for (size_t i = 0; i < shape.size(); ++i)
    shp +=
        std::to_string(shape[i]) + (shape.size() == 1 ? "," : (i + 1 < shape.size() ? ", " : ""));
  shp += ")";
  std::string header =
      std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shp + ", }";
  // magic (6) + version (2) + header length (2) + header, padded with spaces to a multiple of 64,
  // ending in a newline.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  if (!out) throw Error(ErrorKind::Io, path + ": cannot open for writing");
  out.write("\x93NUMPY\x01\x00", 8);
  const uint16_t n = (uint16_t)header.size();
  const char len[2] = {(char)(n & 0xFF), (char)(n >> 8)};
  out.write(len, 2);
  out.write(header.data(), (std::streamsize)header.size());
  out.write(static_cast<const char*>(data), (std::streamsize)bytes);
  if (!out) throw Error(ErrorKind::Io, path + ": write error");
}

}  // namespace

void writeNpy(const std::string& path, const float* data, const Shape& shape) {
  writeNpyRaw(path, "<f4", data, (size_t)numel(shape) * 4, shape);
}

void writeNpy(const std::string& path, const uint8_t* data, const Shape& shape) {
  writeNpyRaw(path, "|u1", data, (size_t)numel(shape), shape);
}

void dumpTrace(const Trace& tr, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error(ErrorKind::Io, dir + ": cannot create the folder (" + ec.message() + ")");
  const bool single = tr.batch == 1;
  auto shape = [&](Shape s) {
    if (!single) s.insert(s.begin(), tr.batch);
    return s;
  };
  // Each kind the model has as [B, L, H, Tq, Tk] (the batch axis dropped for one sentence).
  for (AttentionKind kind : kAttentionKinds) {
    std::vector<const AttentionBlock*> layers;
    for (int l = 0; const AttentionBlock* b = tr.block(kind, l); ++l) layers.push_back(b);
    if (layers.empty()) continue;
    const AttentionBlock& first = *layers.front();
    const int L = (int)layers.size(), H = first.heads, Tq = first.q_len, Tk = first.k_len;
    const int64_t per = (int64_t)H * Tq * Tk;  // one sentence, one layer
    std::vector<float> probs((size_t)tr.batch * L * per), scores;
    std::vector<uint8_t> mask(probs.size());
    const bool keep = first.hasScores();
    if (keep) scores.resize(probs.size());
    for (int l = 0; l < L; ++l) {
      const std::vector<float> p = layers[l]->denseProbs();
      const std::vector<float> s = keep ? layers[l]->denseScores() : std::vector<float>();
      const std::vector<uint8_t> m = layers[l]->denseMask();
      for (int b = 0; b < tr.batch; ++b) {
        const int64_t to = ((int64_t)b * L + l) * per, from = (int64_t)b * per;
        std::copy(p.begin() + from, p.begin() + from + per, probs.begin() + to);
        std::copy(m.begin() + from, m.begin() + from + per, mask.begin() + to);
        if (keep) std::copy(s.begin() + from, s.begin() + from + per, scores.begin() + to);
      }
    }
    const std::string name = attentionKindName(kind);
    const Shape s = shape({L, H, Tq, Tk});
    writeNpy(dir + "/" + name + "_probs.npy", probs.data(), s);
    if (keep) writeNpy(dir + "/" + name + "_scores.npy", scores.data(), s);
    writeNpy(dir + "/" + name + "_mask.npy", mask.data(), s);
    // The vectors behind the scores, when kept: KIND_{q,k,v}.npy [L, H, len, d].
    if (first.hasQkv()) {
      auto vectors = [&](const char* what, int len, int d, auto row) {
        std::vector<float> out((size_t)tr.batch * L * H * len * d);
        for (int l = 0; l < L; ++l)
          for (int b = 0; b < tr.batch; ++b)
            for (int h = 0; h < H; ++h)
              for (int i = 0; i < len; ++i)
                std::memcpy(&out[((((size_t)b * L + l) * H + h) * len + i) * d],
                            row(*layers[l], b, h, i), (size_t)d * sizeof(float));
        writeNpy(dir + "/" + name + "_" + what + ".npy", out.data(), shape({L, H, len, d}));
      };
      vectors("q", Tq, first.d_k,
              [](const AttentionBlock& a, int b, int h, int i) { return a.qRow(b, h, i); });
      vectors("k", Tk, first.d_k,
              [](const AttentionBlock& a, int b, int h, int i) { return a.kRow(b, h, i); });
      vectors("v", Tk, first.d_v,
              [](const AttentionBlock& a, int b, int h, int i) { return a.vRow(b, h, i); });
    }
  }
  if (!tr.logits.empty())
    writeNpy(dir + "/logits.npy", tr.logits.ptr(), shape({tr.logits.dim(1), tr.logits.dim(2)}));
  if (!tr.class_logits.empty())
    writeNpy(dir + "/class_logits.npy", tr.class_logits.ptr(), shape({tr.class_logits.dim(1)}));
  if (!tr.hidden.empty())
    writeNpy(dir + "/hidden.npy", tr.hidden.ptr(), shape({tr.hidden.dim(1), tr.hidden.dim(2)}));
  nlohmann::json j;
  if (!tr.src_ids.empty()) {
    j["src_ids"] = tr.src_ids;
    j["src_tokens"] = tr.src_tokens;
  }
  if (!tr.segment_ids.empty()) j["segment_ids"] = tr.segment_ids;
  if (!tr.tgt_ids.empty()) {
    j["tgt_ids"] = tr.tgt_ids;
    j["tgt_tokens"] = tr.tgt_tokens;
  }
  j["backend"] = tr.backend;
  std::ofstream out(dir + "/tokens.json");
  out << j.dump(2) << "\n";
  if (!out) throw Error(ErrorKind::Io, dir + "/tokens.json: write error");
}

}  // namespace attnviz
