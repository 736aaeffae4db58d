#include "model/trace_dump.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "base/atomic_file.h"
#include "base/error.h"
#include "io/npy.h"
#include "model/runs.h"

namespace attnviz {

void makeFolder(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error(ErrorKind::Io, dir + ": cannot create the folder (" + ec.message() + ")");
  if (!std::filesystem::is_directory(dir, ec))
    throw Error(ErrorKind::Io, dir + ": cannot write there: not a folder");
}

std::string jsonText(const nlohmann::json& j) {
  // Token strings that are not UTF-8 are written with U+FFFD, never as a throw mid-dump.
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

namespace {

// tokens.json: the ids and token strings of each side the trace has, the segment ids, the backend.
nlohmann::json tokensJson(const Trace& tr) {
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
  return j;
}

void writeTraceFiles(const Trace& tr, const std::string& dir, const Model* model) {
  makeFolder(dir);
  const bool single = tr.batch == 1;
  auto shape = [&](Shape s) {
    if (!single) s.insert(s.begin(), tr.batch);
    return s;
  };
  // Every file is written whole to a temporary name and renamed only when all are complete; the
  // arrays are streamed from the trace row by row, so the dump costs no copy of a block.
  AtomicFileSet files;
  auto npy = [&](const std::string& name, const char* descr, const Shape& s) -> AtomicFile& {
    AtomicFile& f = files.add(dir + "/" + name);
    f.write(npyPreamble(descr, s));
    return f;
  };
  // Each kind the model has as [B, L, H, Tq, Tk] (the batch axis dropped for one sentence).
  for (AttentionKind kind : kAttentionKinds) {
    std::vector<const AttentionBlock*> layers;
    for (int l = 0; const AttentionBlock* b = tr.block(kind, l); ++l) layers.push_back(b);
    if (layers.empty()) continue;
    const AttentionBlock& first = *layers.front();
    const int L = (int)layers.size(), H = first.heads, Tq = first.q_len, Tk = first.k_len;
    const std::string name = attentionKindName(kind);
    const Shape s = shape({L, H, Tq, Tk});
    // tiles(f, tile): for b, l, h in that order, the rows [0, Tq) of Tk values that
    // tile(block, b, h, i0, i1, out) computes, 64 rows at a time.
    auto tiles = [&](AtomicFile& f, size_t elem, auto tile) {
      constexpr int kRows = 64;
      std::vector<uint8_t> buf((size_t)kRows * Tk * elem);
      for (int b = 0; b < tr.batch; ++b)
        for (const AttentionBlock* a : layers)
          for (int h = 0; h < H; ++h)
            for (int i0 = 0; i0 < Tq; i0 += kRows) {
              const int i1 = std::min(Tq, i0 + kRows);
              tile(*a, b, h, i0, i1, buf.data());
              f.write(buf.data(), (size_t)(i1 - i0) * Tk * elem);
            }
      f.finish();  // its buffer freed now, not when every file is done
    };
    tiles(npy(name + "_probs.npy", "<f4", s), 4,
          [Tk](const AttentionBlock& a, int b, int h, int i0, int i1, uint8_t* out) {
            a.probTile(b, h, i0, i1, 0, Tk, reinterpret_cast<float*>(out));
          });
    tiles(npy(name + "_scores.npy", "<f4", s), 4,
          [Tk](const AttentionBlock& a, int b, int h, int i0, int i1, uint8_t* out) {
            a.scoreTile(b, h, i0, i1, 0, Tk, reinterpret_cast<float*>(out));
          });
    tiles(npy(name + "_mask.npy", "|u1", s), 1,
          [Tk](const AttentionBlock& a, int b, int, int i0, int i1, uint8_t* out) {
            a.maskTile(b, i0, i1, 0, Tk, out);
          });
    // The vectors behind the scores, when the values were kept: KIND_{q,k,v}.npy [L, H, len, d]
    // (a key/value head shared by a group of query heads repeated for each of them).
    if (first.hasValues()) {
      auto vectors = [&](const char* what, int len, int d, auto row) {
        AtomicFile& f = npy(name + "_" + what + ".npy", "<f4", shape({L, H, len, d}));
        for (int b = 0; b < tr.batch; ++b)
          for (const AttentionBlock* a : layers)
            for (int h = 0; h < H; ++h)
              for (int i = 0; i < len; ++i) f.write(row(*a, b, h, i), (size_t)d * sizeof(float));
        f.finish();
      };
      vectors("q", Tq, first.d_k,
              [](const AttentionBlock& a, int b, int h, int i) { return a.qRow(b, h, i); });
      vectors("k", Tk, first.d_k,
              [](const AttentionBlock& a, int b, int h, int i) { return a.kRow(b, h, i); });
      vectors("v", Tk, first.d_v,
              [](const AttentionBlock& a, int b, int h, int i) { return a.vRow(b, h, i); });
    }
  }
  // The outputs without their batch axis ([B, ...] → [...] for one sentence).
  auto tensor = [&](const char* file, const Tensor& t) {
    if (t.empty()) return;
    const Shape s = single ? Shape(t.shape.begin() + 1, t.shape.end()) : t.shape;
    npy(file, "<f4", s).write(t.ptr(), t.data.size() * sizeof(float));
  };
  if (!tr.logits.empty()) {  // row by row: kept, or computed again by the model
    const TokenLogits& l = tr.logits;
    const Shape s =
        single ? Shape{l.positions(), l.vocab()} : Shape{l.batch(), l.positions(), l.vocab()};
    AtomicFile& f = npy("logits.npy", "<f4", s);
    for (int b = 0; b < l.batch(); ++b)
      for (int i = 0; i < l.positions(); ++i) {
        if (const float* row = l.row(b, i)) {
          f.write(row, (size_t)l.vocab() * sizeof(float));
          continue;
        }
        if (!model)
          throw Error(ErrorKind::BadInput, "the token logits of position " + std::to_string(i) +
                                               " were not kept, and no model was given to "
                                               "compute them");
        const std::vector<float> row = logitsRow(*model, tr, b, i);
        f.write(row.data(), row.size() * sizeof(float));
      }
    f.finish();
  }
  tensor("class_logits.npy", tr.class_logits);
  tensor("hidden.npy", tr.hidden);
  files.add(dir + "/tokens.json").write(jsonText(tokensJson(tr)));
  files.commitAll();
}

const char* partKindName(LogitPart::Kind k) {
  switch (k) {
    case LogitPart::Kind::TokenEmbedding:
      return "token_embedding";
    case LogitPart::Kind::Positions:
      return "positions";
    case LogitPart::Kind::Embeddings:
      return "embeddings";
    case LogitPart::Kind::Head:
      return "head";
    case LogitPart::Kind::FeedForward:
      return "feed_forward";
    case LogitPart::Kind::Bias:
      return "bias";
  }
  return "?";
}

void writeLensFiles(const LogitLens& lens, const std::vector<std::string>& inputs,
                    const Vocabulary& out, const Contributions* c, const std::string& dir) {
  makeFolder(dir);
  AtomicFileSet files;
  auto npy = [&](const std::string& name, const std::vector<float>& v, const Shape& s) {
    AtomicFile& f = files.add(dir + "/" + name);
    f.write(npyPreamble("<f4", s));
    f.write(v.data(), v.size() * sizeof(float));
  };
  npy("lens_top_probs.npy", lens.top_probs, {lens.rows, lens.positions, lens.top_k});
  npy("lens_target_probs.npy", lens.target_probs, {lens.rows, lens.positions});
  if (!lens.logits.empty()) npy("lens_logits.npy", lens.logits.data, lens.logits.shape);
  auto tokens = [&](const std::vector<int>& ids) {
    std::vector<std::string> t;
    for (int id : ids) t.push_back(out.token(id));
    return t;
  };
  nlohmann::json j;
  j["reading"] = lens.reading;
  j["rows"] = lens.row_names;
  j["input_tokens"] = inputs;
  j["targets"] = lens.targets;
  j["target_tokens"] = tokens(lens.targets);
  j["top_k"] = lens.top_k;
  j["top_ids"] = lens.top_ids;  // [rows, positions, top_k] flat
  j["top_tokens"] = tokens(lens.top_ids);
  j["target_ranks"] = lens.target_ranks;  // [rows, positions] flat
  files.add(dir + "/lens.json").write(jsonText(j));
  if (c) {
    nlohmann::json k;
    k["position"] = c->position;
    k["token"] = c->token;
    k["token_string"] = out.token(c->token);
    if (c->versus >= 0) {
      k["versus"] = c->versus;
      k["versus_string"] = out.token(c->versus);
    }
    k["logit"] = c->logit;
    k["sum_of_parts"] = c->total;
    k["frozen_scale"] = c->scale;
    k["norm"] = c->norm;
    for (const LogitPart& p : c->parts)
      k["parts"].push_back(
          {{"name", p.name},
           {"kind", partKindName(p.kind)},
           {"attention", p.kind == LogitPart::Kind::Head ? attentionKindName(p.attention) : ""},
           {"layer", p.layer},
           {"head", p.head},
           {"value", p.value}});
    files.add(dir + "/contributions.json").write(jsonText(k));
  }
  files.commitAll();
}

// The file name part of a patching heatmap: residual_enc, heads_cross …
std::string patchMapName(const PatchHeatmap& m) {
  if (m.heads) return std::string("heads_") + attentionKindName(m.block);
  return m.side == Side::Source ? "residual_enc" : "residual_dec";
}

void writePatchingFiles(const PatchingResult& r, const std::string& dir) {
  makeFolder(dir);
  AtomicFileSet files;
  nlohmann::json j;
  j["definition"] = r.definition;
  j["stack"] = r.stack == Side::Source ? "encoder" : "decoder";
  j["position"] = r.position;
  j["answer"] = r.answer;
  j["answer_token"] = r.answer_token;
  j["foil"] = r.foil;
  j["foil_token"] = r.foil_token;
  j["metric_clean"] = r.clean;
  j["metric_corrupted"] = r.corrupted;
  j["patched_runs"] = r.runs;
  for (const PatchHeatmap& m : r.maps) {
    const std::string name = patchMapName(m);
    for (const auto& [what, values] : {std::pair{"restored", &m.restored}, {"metric", &m.metric}}) {
      const std::vector<float> v(values->begin(), values->end());
      AtomicFile& f = files.add(dir + "/patch_" + name + "_" + what + ".npy");
      f.write(npyPreamble("<f4", {m.rows, m.cols}));
      f.write(v.data(), v.size() * sizeof(float));
    }
    j["maps"].push_back({{"name", name},
                         {"title", m.title},
                         {"rows", m.row_labels},
                         {"columns", m.col_labels},
                         {"restored", "patch_" + name + "_restored.npy"},
                         {"metric", "patch_" + name + "_metric.npy"}});
  }
  files.add(dir + "/patch.json").write(jsonText(j));
  files.commitAll();
}

}  // namespace

void dumpPatching(const PatchingResult& result, const std::string& dir) {
  try {
    writePatchingFiles(result, dir);
  } catch (const Error& e) {
    throw Error(e.kind(), "the patching result was not written to " + dir + ": " + e.what());
  }
}

void dumpLens(const LogitLens& lens, const std::vector<std::string>& inputs, const Vocabulary& out,
              const Contributions* contributions, const std::string& dir) {
  try {
    writeLensFiles(lens, inputs, out, contributions, dir);
  } catch (const Error& e) {
    throw Error(e.kind(), "the lens was not written to " + dir + ": " + e.what());
  }
}

// One CSV field: quoted when it holds a comma, a quote or a line break (quotes doubled).
std::string csvField(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char ch : text) {
    if (ch == '"') quoted += '"';
    quoted += ch;
  }
  return quoted + "\"";
}

std::string csvNumber(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.7g", v);
  return buf;
}

// A line of fields, separated by commas and ended as RFC 4180 ends it.
std::string csvLine(const std::vector<std::string>& fields) {
  std::string line;
  for (size_t k = 0; k < fields.size(); ++k) {
    if (k > 0) line += ',';
    line += fields[k];
  }
  return line + "\r\n";
}

std::string lensCsv(const LogitLens& lens, const std::vector<std::string>& inputs,
                    const Vocabulary& out) {
  std::vector<std::string> header = {"row",    "position",           "input",
                                     "target", "target_probability", "target_rank"};
  for (int k = 1; k <= lens.top_k; ++k) {
    header.push_back("top" + std::to_string(k));
    header.push_back("top" + std::to_string(k) + "_probability");
  }
  std::string csv = csvLine(header);
  for (int r = 0; r < lens.rows; ++r)
    for (int i = 0; i < lens.positions; ++i) {
      const int64_t cell = lens.cell(r, i);
      std::vector<std::string> f = {
          csvField(lens.row_names[(size_t)r]),
          std::to_string(i + 1),
          csvField(i < (int)inputs.size() ? inputs[(size_t)i] : std::string()),
          csvField(out.token(lens.targets[(size_t)i])),
          csvNumber(lens.target_probs[(size_t)cell]),
          std::to_string(lens.target_ranks[(size_t)cell])};
      for (int k = 0; k < lens.top_k; ++k) {
        const size_t at = (size_t)(cell * lens.top_k + k);
        f.push_back(csvField(out.token(lens.top_ids[at])));
        f.push_back(csvNumber(lens.top_probs[at]));
      }
      csv += csvLine(f);
    }
  return csv;
}

std::string contributionsCsv(const Contributions& c) {
  std::string csv = csvLine({"part", "kind", "attention", "layer", "head", "value"});
  for (const LogitPart& p : c.parts)
    csv += csvLine({csvField(p.name), partKindName(p.kind),
                    p.kind == LogitPart::Kind::Head ? attentionKindName(p.attention) : "",
                    p.layer >= 0 ? std::to_string(p.layer + 1) : "",
                    p.head >= 0 ? std::to_string(p.head + 1) : "", csvNumber(p.value)});
  return csv;
}

std::string patchingCsv(const PatchingResult& r) {
  std::string csv =
      csvLine({"map", "row", "column", "row_index", "column_index", "restored", "metric"});
  for (const PatchHeatmap& m : r.maps)
    for (int row = 0; row < m.rows; ++row)
      for (int col = 0; col < m.cols; ++col)
        csv += csvLine({patchMapName(m), csvField(m.row_labels[(size_t)row]),
                        csvField(m.col_labels[(size_t)col]), std::to_string(row + 1),
                        std::to_string(col + 1), csvNumber(m.restored[(size_t)m.cell(row, col)]),
                        csvNumber(m.metric[(size_t)m.cell(row, col)])});
  return csv;
}

uint64_t dumpBytes(const Trace& tr) {
  uint64_t n = 0;
  for (const AttentionBlock& a : tr.blocks) {
    const uint64_t cells = (uint64_t)a.batch * a.heads * a.q_len * a.k_len;
    n += cells * 9;  // scores and probabilities (float32) and the mask (uint8)
    if (a.hasValues())
      n += (uint64_t)a.batch * a.heads * ((uint64_t)a.q_len + a.k_len) * a.d_k * 4 +
           (uint64_t)a.batch * a.heads * a.k_len * a.d_v * 4;
  }
  const uint64_t logits = (uint64_t)tr.logits.batch() * tr.logits.positions() * tr.logits.vocab();
  return n + (logits + tr.class_logits.data.size() + tr.hidden.data.size()) * 4;
}

namespace {

int parseCount(const std::string& part, const std::string& what, const std::string& whole) {
  size_t used = 0;
  int v = -1;
  try {
    v = std::stoi(part, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (part.empty() || used != part.size() || v < 0)
    throw Error(ErrorKind::BadInput,
                "\"" + whole + "\": " + what + " \"" + part + "\" is not a whole number");
  return v;
}

// The comma-separated items of `text`, empty ones kept (each is then refused by its parser).
std::vector<std::string> commaItems(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    out.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

}  // namespace

std::string headChoiceName(const HeadChoice& h) {
  return std::string(attentionKindName(h.kind)) + ":" + std::to_string(h.layer + 1) + ":" +
         std::to_string(h.head + 1);
}

std::vector<HeadChoice> parseHeadChoices(const std::string& text) {
  std::vector<HeadChoice> out;
  for (const std::string& item : commaItems(text)) {
    const size_t c1 = item.find(':'), c2 = c1 == std::string::npos ? c1 : item.find(':', c1 + 1);
    if (c2 == std::string::npos || item.find(':', c2 + 1) != std::string::npos)
      throw Error(ErrorKind::BadInput, "\"" + item +
                                           "\" is not KIND:LAYER:HEAD (e.g. dec_self:30:9; KIND "
                                           "is enc_self, dec_self or cross)");
    const std::string kind = item.substr(0, c1);
    HeadChoice h;
    if (!attentionKindNamed(kind, &h.kind))
      throw Error(ErrorKind::BadInput, "\"" + item + "\": the kind \"" + kind +
                                           "\" is none of enc_self, dec_self, cross");
    h.layer = parseCount(item.substr(c1 + 1, c2 - c1 - 1), "the layer", item) - 1;
    h.head = parseCount(item.substr(c2 + 1), "the head", item) - 1;
    if (h.layer < 0 || h.head < 0)
      throw Error(ErrorKind::BadInput,
                  "\"" + item + "\": layers and heads count from 1, as the GUI shows them");
    out.push_back(h);
  }
  return out;
}

std::vector<RowRange> parseRowRanges(const std::string& text) {
  std::vector<RowRange> out;
  for (const std::string& item : commaItems(text)) {
    const size_t colon = item.find(':');
    if (colon == std::string::npos || item.find(':', colon + 1) != std::string::npos)
      throw Error(ErrorKind::BadInput, "\"" + item +
                                           "\" is not A:B (query rows A … B−1 from 0, as a NumPy "
                                           "slice; e.g. 8000:8192, or 8000: for the rest)");
    const std::string a = item.substr(0, colon), b = item.substr(colon + 1);
    RowRange r;
    r.begin = a.empty() ? 0 : parseCount(a, "the first row", item);
    r.end = b.empty() ? -1 : parseCount(b, "the end", item);
    if (r.end >= 0 && r.end <= r.begin)
      throw Error(ErrorKind::BadInput, "\"" + item + "\" selects no row (B must exceed A)");
    if (!out.empty() && (out.back().end < 0 || r.begin < out.back().end))
      throw Error(ErrorKind::BadInput, "\"" + text +
                                           "\": give the ranges in increasing order, not "
                                           "overlapping (each row is written once)");
    out.push_back(r);
  }
  return out;
}

namespace {

// The ranges with "to the end" made q_len; Error(BadInput) naming the head for rows it lacks.
std::vector<RowRange> rowsOf(const AttentionBlock& a, const std::vector<RowRange>& ranges,
                             const std::string& head) {
  std::vector<RowRange> out;
  for (const RowRange& r : ranges) {
    const RowRange got{r.begin, r.end < 0 ? a.q_len : r.end};
    if (got.begin >= a.q_len || got.end > a.q_len)
      throw Error(ErrorKind::BadInput, head + ": rows " + std::to_string(got.begin) + ":" +
                                           std::to_string(got.end) + " are outside the " +
                                           std::to_string(a.q_len) +
                                           " query rows (0:" + std::to_string(a.q_len) + ")");
    out.push_back(got);
  }
  if (out.empty()) out.push_back({0, a.q_len});
  return out;
}

}  // namespace

void dumpHeads(const Trace& tr, const std::vector<HeadChoice>& heads,
               const std::vector<RowRange>& ranges, const std::string& dir) {
  for (const HeadChoice& h : heads) {
    const AttentionBlock* a = tr.block(h.kind, h.layer);
    if (!a)
      throw Error(ErrorKind::BadInput, headChoiceName(h) + ": the model has " +
                                           std::to_string(tr.layers(h.kind)) + " " +
                                           attentionKindName(h.kind) + " layers");
    if (h.head >= a->heads)
      throw Error(ErrorKind::BadInput,
                  headChoiceName(h) + ": the model has " + std::to_string(a->heads) + " heads");
    rowsOf(*a, ranges, headChoiceName(h));
  }
  try {
    makeFolder(dir);
    AtomicFileSet files;
    nlohmann::json written = nlohmann::json::array();
    for (const HeadChoice& h : heads) {
      const AttentionBlock& a = *tr.block(h.kind, h.layer);
      const std::vector<RowRange> rows = rowsOf(a, ranges, headChoiceName(h));
      const int K = a.k_len;
      int count = 0;
      nlohmann::json spans = nlohmann::json::array();
      for (const RowRange& r : rows) {
        count += r.end - r.begin;
        spans.push_back({r.begin, r.end});
      }
      const std::string stem = dir + "/" + attentionKindName(h.kind) + "_" +
                               std::to_string(h.layer + 1) + "_" + std::to_string(h.head + 1);
      AtomicFile& sf = files.add(stem + "_scores.npy");
      AtomicFile& mf = files.add(stem + "_mask.npy");
      AtomicFile& pf = files.add(stem + "_probs.npy");
      sf.write(npyPreamble("<f4", {count, K}));
      mf.write(npyPreamble("|u1", {count, K}));
      pf.write(npyPreamble("<f4", {count, K}));
      constexpr int kRows = 64;
      std::vector<float> tile((size_t)kRows * K);
      std::vector<uint8_t> mask((size_t)kRows * K);
      for (const RowRange& r : rows)
        for (int i0 = r.begin; i0 < r.end; i0 += kRows) {
          const int i1 = std::min(r.end, i0 + kRows), n = (i1 - i0) * K;
          a.scoreTile(0, h.head, i0, i1, 0, K, tile.data());
          sf.write(tile.data(), (size_t)n * 4);
          a.maskTile(0, i0, i1, 0, K, mask.data());
          mf.write(mask.data(), (size_t)n);
          a.probTile(0, h.head, i0, i1, 0, K, tile.data());
          pf.write(tile.data(), (size_t)n * 4);
        }
      // On disk now, their buffers freed: a set keeps every file until it commits them all.
      sf.finish();
      mf.finish();
      pf.finish();
      written.push_back({{"kind", attentionKindName(h.kind)},
                         {"layer", h.layer + 1},
                         {"head", h.head + 1},
                         {"rows", spans},
                         {"keys", K}});
    }
    nlohmann::json j = tokensJson(tr);
    j["heads"] = written;
    files.add(dir + "/tokens.json").write(jsonText(j));
    files.commitAll();
  } catch (const Error& e) {
    throw Error(e.kind(), "the heads were not written to " + dir + ": " + e.what());
  }
}

void dumpTrace(const Trace& tr, const std::string& dir, const Model* model) {
  try {
    writeTraceFiles(tr, dir, model);
  } catch (const Error& e) {
    throw Error(e.kind(), "the trace was not written to " + dir + ": " + e.what());
  }
}

}  // namespace attnviz
