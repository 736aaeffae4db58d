#include "npy.h"

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
  auto dump = [&](const AttentionTrace& a, const std::string& name) {
    const Shape s = shape({a.layers, a.heads, a.q_len, a.k_len});
    writeNpy(dir + "/" + name + "_probs.npy", a.probs.data(), s);
    if (a.hasScores()) writeNpy(dir + "/" + name + "_scores.npy", a.scores.data(), s);
    // The mask is shared by layers and heads; expanded here to the design's [L, H, Tq, Tk].
    std::vector<uint8_t> m((size_t)numel(s));
    const int64_t qk = (int64_t)a.q_len * a.k_len;
    for (int b = 0; b < a.batch; ++b)
      for (int lh = 0; lh < a.layers * a.heads; ++lh)
        std::copy(a.mask.begin() + b * qk, a.mask.begin() + (b + 1) * qk,
                  m.begin() + ((int64_t)b * a.layers * a.heads + lh) * qk);
    writeNpy(dir + "/" + name + "_mask.npy", m.data(), s);
  };
  dump(tr.enc_self, "enc_self");
  dump(tr.dec_self, "dec_self");
  dump(tr.cross, "cross");
  writeNpy(dir + "/logits.npy", tr.logits.ptr(), shape({tr.logits.dim(1), tr.logits.dim(2)}));
  nlohmann::json j;
  j["src_ids"] = tr.src_ids;
  j["tgt_ids"] = tr.tgt_ids;
  j["src_tokens"] = tr.src_tokens;
  j["tgt_tokens"] = tr.tgt_tokens;
  j["backend"] = tr.backend;
  std::ofstream out(dir + "/tokens.json");
  out << j.dump(2) << "\n";
  if (!out) throw Error(ErrorKind::Io, dir + "/tokens.json: write error");
}

}  // namespace attnviz
