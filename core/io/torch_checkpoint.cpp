#include "io/torch_checkpoint.h"

#include <zip.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <unordered_set>

#include "base/error.h"
#include "base/json_safe.h"

namespace attnviz {

namespace {

using pickle::Graph;
using pickle::Object;
using pickle::Ref;
using pickle::Value;
using Type = pickle::Object::Type;

// torch.save's legacy magic number 0x1950a86a20f9469cfc6c, little-endian as LONG1 stores it.
constexpr uint8_t kLegacyMagic[10] = {0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};
constexpr int64_t kLegacyProtocolVersion = 1001;
// Deflate cannot expand data more than about 1032 times; a larger claim is a zip bomb.
constexpr uint64_t kMaxDeflateRatio = 1032;

std::string q(std::string_view s) {
  return "\"" + clipForMessage(s, 120) + "\"";
}

bool mulOverflows(uint64_t a, uint64_t b, uint64_t* out) {
  if (a != 0 && b > std::numeric_limits<uint64_t>::max() / a) return true;
  *out = a * b;
  return false;
}
bool addOverflows(uint64_t a, uint64_t b, uint64_t* out) {
  if (b > std::numeric_limits<uint64_t>::max() - a) return true;
  *out = a + b;
  return false;
}

// ---- the file as random-access bytes (legacy format) ----

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual uint64_t size() const = 0;
  // Reads exactly n bytes at offset (the caller checked the range).
  virtual void read(uint64_t offset, uint64_t n, uint8_t* out) const = 0;
};

class MemorySource : public ByteSource {
 public:
  explicit MemorySource(const std::vector<uint8_t>& b) : b_(b) {}
  uint64_t size() const override { return b_.size(); }
  void read(uint64_t offset, uint64_t n, uint8_t* out) const override {
    if (n) std::memcpy(out, b_.data() + offset, n);
  }

 private:
  const std::vector<uint8_t>& b_;
};

class FileSource : public ByteSource {
 public:
  FileSource(const std::string& path, uint64_t size) : path_(path), size_(size) {
    in_.open(path, std::ios::binary);
    if (!in_) throw Error(ErrorKind::Io, path + ": cannot open the file for reading");
  }
  uint64_t size() const override { return size_; }
  void read(uint64_t offset, uint64_t n, uint8_t* out) const override {
    in_.clear();
    in_.seekg(static_cast<std::streamoff>(offset));
    if (n && !in_.read(reinterpret_cast<char*>(out), static_cast<std::streamsize>(n)))
      throw Error(ErrorKind::Io, path_ + ": read error at byte " + std::to_string(offset));
  }

 private:
  std::string path_;
  uint64_t size_;
  mutable std::ifstream in_;
};

// ---- zip archives, through libzip ----

std::string zipErrorText(int code) {
  zip_error_t e;
  zip_error_init_with_code(&e, code);
  std::string s = zip_error_strerror(&e);
  zip_error_fini(&e);
  return s;
}

class ZipArchive {
 public:
  struct Entry {
    std::string name;
    uint64_t size = 0, comp_size = 0;
    uint16_t method = 0;
  };

  ZipArchive(const std::string& what, uint64_t archive_size) : what_(what), size_(archive_size) {}
  ~ZipArchive() {
    if (z_) zip_discard(z_);
  }
  ZipArchive(const ZipArchive&) = delete;
  ZipArchive& operator=(const ZipArchive&) = delete;

  void openFile(const std::string& path) {
    int code = 0;
    z_ = zip_open(path.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &code);
    if (!z_) failOpen(code);
  }
  // `bytes` must outlive the archive.
  void openBuffer(const std::vector<uint8_t>& bytes) {
    zip_error_t err;
    zip_error_init(&err);
    zip_source_t* src = zip_source_buffer_create(bytes.data(), bytes.size(), 0, &err);
    if (!src) {
      zip_error_fini(&err);
      throw Error(ErrorKind::Io, what_ + ": out of memory opening the archive");
    }
    z_ = zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS, &err);
    if (!z_) {
      zip_source_free(src);
      const int code = zip_error_code_zip(&err);
      zip_error_fini(&err);
      failOpen(code);
    }
    zip_error_fini(&err);
  }

  // Lists and checks every entry: nothing encrypted, only stored or deflated data, no size that
  // the archive cannot hold, no more bytes in all than the archive has (entries overlapping).
  void scan(uint64_t max_entries) {
    const zip_int64_t n = zip_get_num_entries(z_, 0);
    if (n < 0) throw Error(ErrorKind::BadArchive, what_ + ": cannot count the zip entries");
    if (static_cast<uint64_t>(n) > max_entries)
      throw Error(ErrorKind::TooLarge, what_ + ": the zip archive has " + std::to_string(n) +
                                           " entries (the limit is " + std::to_string(max_entries) +
                                           ")");
    uint64_t claimed = 0;  // local headers and data of all entries
    for (zip_int64_t i = 0; i < n; ++i) {
      zip_stat_t st;
      zip_stat_init(&st);
      if (zip_stat_index(z_, static_cast<zip_uint64_t>(i), ZIP_FL_ENC_RAW, &st) != 0 ||
          !(st.valid & ZIP_STAT_NAME) || !(st.valid & ZIP_STAT_SIZE) ||
          !(st.valid & ZIP_STAT_COMP_SIZE) || !(st.valid & ZIP_STAT_COMP_METHOD))
        throw Error(ErrorKind::BadArchive, what_ + ": zip entry " + std::to_string(i) +
                                               " cannot be read (" + zip_strerror(z_) + ")");
      Entry e;
      e.name = st.name;
      e.size = st.size;
      e.comp_size = st.comp_size;
      e.method = st.comp_method;
      const std::string where = what_ + ": zip entry " + q(e.name);
      if ((st.valid & ZIP_STAT_ENCRYPTION_METHOD) && st.encryption_method != ZIP_EM_NONE)
        throw Error(ErrorKind::BadArchive, where + " is encrypted");
      if (e.method != ZIP_CM_STORE && e.method != ZIP_CM_DEFLATE)
        throw Error(ErrorKind::BadArchive,
                    where + " uses compression method " + std::to_string(e.method) +
                        "; torch.save stores entries uncompressed (attnviz also reads deflate)");
      if (e.comp_size > size_)
        throw Error(ErrorKind::BadArchive, where + " claims " + std::to_string(e.comp_size) +
                                               " bytes of data in a " + std::to_string(size_) +
                                               "-byte archive");
      if (e.method == ZIP_CM_STORE && e.size != e.comp_size)
        throw Error(ErrorKind::BadArchive, where + " is stored uncompressed but claims " +
                                               std::to_string(e.size) + " bytes from " +
                                               std::to_string(e.comp_size));
      if (e.method == ZIP_CM_DEFLATE && e.size / kMaxDeflateRatio > e.comp_size + 1)
        throw Error(ErrorKind::BadArchive, where + " claims " + formatBytes(e.size) +
                                               " uncompressed from " + formatBytes(e.comp_size) +
                                               " (a zip bomb: deflate expands at most " +
                                               std::to_string(kMaxDeflateRatio) + " times)");
      if (!index_.emplace(e.name, entries_.size()).second)
        throw Error(ErrorKind::BadArchive, where + " occurs twice in the archive");
      claimed += 30 + e.name.size() + e.comp_size;  // each term is at most the archive's size
      if (claimed > size_)
        throw Error(ErrorKind::BadArchive,
                    what_ + ": the zip entries up to " + q(e.name) + " claim " +
                        std::to_string(claimed) + " bytes of headers and data in a " +
                        std::to_string(size_) +
                        "-byte archive: entries overlap (or the sizes are false)");
      entries_.push_back(std::move(e));
    }
  }

  const std::vector<Entry>& entries() const { return entries_; }
  // Position of an entry, or -1.
  int64_t find(const std::string& name) const {
    auto it = index_.find(name);
    return it == index_.end() ? -1 : static_cast<int64_t>(it->second);
  }

  // The whole entry; its CRC is checked.
  std::vector<uint8_t> read(size_t index) {
    const Entry& e = entries_.at(index);
    const std::string where = what_ + ": zip entry " + q(e.name);
    zip_file_t* f = zip_fopen_index(z_, index, 0);
    if (!f)
      throw Error(ErrorKind::BadArchive, where + " cannot be opened (" + zip_strerror(z_) + ")");
    std::vector<uint8_t> out(e.size);
    uint64_t got = 0;
    bool ok = true;
    while (got < e.size) {
      const zip_int64_t r = zip_fread(f, out.data() + got, e.size - got);
      if (r <= 0) {
        ok = false;
        break;
      }
      got += static_cast<uint64_t>(r);
    }
    // One more read reaches the end of the entry, where libzip compares the CRC.
    uint8_t extra;
    const zip_int64_t tail = ok ? zip_fread(f, &extra, 1) : -1;
    std::string why = zip_file_strerror(f);
    zip_fclose(f);
    if (!ok || tail != 0)
      throw Error(ErrorKind::BadArchive,
                  where +
                      (!ok ? " ends after " + std::to_string(got) + " of its " +
                                 std::to_string(e.size) + " bytes"
                           : std::string(tail > 0 ? " holds more bytes than it declares"
                                                  : " cannot be read")) +
                      " (" + why + ")");
    return out;
  }

 private:
  [[noreturn]] void failOpen(int code) const {
    throw Error(ErrorKind::BadArchive,
                what_ + ": not a readable zip archive (" + zipErrorText(code) +
                    "); a torch.save checkpoint is a zip archive with a data.pkl entry");
  }

  std::string what_;
  uint64_t size_;
  zip_t* z_ = nullptr;
  std::vector<Entry> entries_;
  std::unordered_map<std::string, size_t> index_;
};

// ---- persistent ids: storages ----

class StorageTable {
 public:
  StorageTable(const std::string& what, const CheckpointLimits& limits)
      : what_(what), lim_(limits) {}

  // ('storage', storage_type, key, location, numel) in the zip format; legacy files add
  // view_metadata and may also hold ('module', cls, source_file, source).
  Value load(Graph& g, const Value& pid, uint64_t at, bool legacy) {
    auto fail = [&](const std::string& why) -> Value {
      throw Error(ErrorKind::BadPickle,
                  what_ + ": byte " + std::to_string(at) + " (BINPERSID): " + why);
    };
    if (!g.is(pid, Type::Tuple)) return fail("a persistent id that is " + g.describe(pid));
    const std::vector<Value> t = g.at(pid.ref).items;
    const std::string* kind = t.empty() ? nullptr : g.str(t[0]);
    if (legacy && kind && *kind == "module" && t.size() == 4 && g.is(t[1], Type::Global))
      return t[1];  // a legacy whole model's class, saved with its source (never looked at)
    if (!kind || *kind != "storage")
      return fail("a persistent id that is not a storage (" + g.describe(t.empty() ? pid : t[0]) +
                  "); torch.save writes only ('storage', ...) ids");
    const size_t arity = legacy ? 6 : 5;
    if (t.size() != arity)
      return fail("a storage persistent id of " + std::to_string(t.size()) + " items, expected " +
                  std::to_string(arity));
    if (!g.is(t[1], Type::Global) || g.at(t[1].ref).global != pickle::Global::StorageType)
      return fail("storage type " + g.describe(t[1]) + " is not a torch storage class");
    const pickle::StorageType* type = g.at(t[1].ref).storage_type;
    const std::string* key = g.str(t[2]);
    if (!key || key->empty() || key->size() > 256)
      return fail("storage key " + g.describe(t[2]) + " is not a short string");
    // torch.save names storages "0", "1", ... (legacy files: a number); the zip entry is
    // data/KEY. A key with a path separator or a ".." names a file elsewhere in (or outside) the
    // archive.
    if (key->find_first_of("/\\") != std::string::npos || key->find("..") != std::string::npos)
      return fail("storage key " + q(*key) +
                  " is a path, not a name: it would lead out of the archive's data/ folder "
                  "(torch.save names storages \"0\", \"1\", ...)");
    const std::string* location = g.str(t[3]);
    if (!location) return fail("storage location " + g.describe(t[3]) + " is not a string");
    if (t[4].kind != Value::Kind::Int || t[4].i < 0)
      return fail("storage " + q(*key) + " has " + g.describe(t[4]) +
                  " elements, expected a non-negative int");
    const uint64_t numel = static_cast<uint64_t>(t[4].i);
    const Ref root = record(g, *key, type, numel, *location, at);
    if (!legacy || t[5].kind == Value::Kind::None) return Value::object(root);
    // Legacy view: (view_key, offset, size) within the root storage.
    const std::vector<Value>* v = g.is(t[5], Type::Tuple) ? &g.at(t[5].ref).items : nullptr;
    if (!v || v->size() != 3 || !g.str((*v)[0]) || (*v)[1].kind != Value::Kind::Int ||
        (*v)[2].kind != Value::Kind::Int || (*v)[1].i < 0 || (*v)[2].i < 0)
      return fail("storage " + q(*key) + " has view metadata " + g.describe(t[5]) +
                  ", expected (key, offset, size)");
    const std::string view_key = *g.str((*v)[0]);
    const uint64_t off = static_cast<uint64_t>((*v)[1].i), size = static_cast<uint64_t>((*v)[2].i);
    if (off > numel || size > numel - off)
      return fail("storage view " + q(view_key) + " of elements [" + std::to_string(off) + ", " +
                  std::to_string(off) + " + " + std::to_string(size) + ") lies outside storage " +
                  q(*key) + " of " + std::to_string(numel) + " elements");
    if (view_key == *key) return Value::object(root);
    const Ref view = record(g, view_key, type, size, *location, at);
    auto& rec = g.storages[g.at(view).index];
    rec.view_of = g.at(root).index;
    rec.view_offset = off;
    return Value::object(view);
  }

 private:
  Ref record(Graph& g, const std::string& key, const pickle::StorageType* type, uint64_t numel,
             const std::string& location, uint64_t at) {
    auto it = by_key_.find(key);
    if (it != by_key_.end()) {
      const pickle::StorageRecord& s = g.storages[g.at(it->second).index];
      if (s.type != type || s.numel != numel)
        throw Error(ErrorKind::BadPickle,
                    what_ + ": byte " + std::to_string(at) + ": storage " + q(key) +
                        " is declared twice, as " + std::to_string(s.numel) + " " + s.type->name +
                        " elements and as " + std::to_string(numel) + " " + type->name);
      return it->second;
    }
    if (by_key_.size() >= lim_.max_tensors)
      throw Error(ErrorKind::TooLarge,
                  what_ + ": more than " + std::to_string(lim_.max_tensors) + " storages");
    if (g.objects.size() >= lim_.pickle.max_objects)
      throw Error(ErrorKind::TooLarge,
                  what_ + ": more than " + std::to_string(lim_.pickle.max_objects) + " objects");
    pickle::StorageRecord s;
    s.key = key;
    s.type = type;
    s.numel = numel;
    s.location = location;
    Object o;
    o.type = Type::Storage;
    o.index = static_cast<uint32_t>(g.storages.size());
    o.offset = at;
    g.storages.push_back(std::move(s));
    g.objects.push_back(std::move(o));
    const Ref r = static_cast<Ref>(g.objects.size() - 1);
    by_key_.emplace(key, r);
    return r;
  }

  const std::string& what_;
  const CheckpointLimits& lim_;
  std::unordered_map<std::string, Ref> by_key_;
};

}  // namespace

// ---- choosing the tensors, checking them, reading their storages ----

// What arguments() keeps: entries per dict, bytes per string.
constexpr size_t kMaxArguments = 4096;
constexpr size_t kMaxArgumentBytes = 4096;

class CheckpointBuilder {
 public:
  // Reads the bytes of a storage record (nbytes = numel × element size).
  using Fetch = std::function<std::vector<uint8_t>(const pickle::StorageRecord&, uint64_t nbytes,
                                                   const std::string& used_by)>;

  CheckpointBuilder(TorchCheckpoint& ck, const Graph& g, const CheckpointLimits& lim,
                    const std::string& pkl)
      : ck_(ck), g_(g), lim_(lim), pkl_(pkl) {}

  void pick(const Value& root);
  void check();
  void read(const Fetch& fetch);

  // The formats: each fills `ck` or throws.
  static void zip(TorchCheckpoint& ck, ZipArchive& zip, const CheckpointLimits& lim);
  static void legacy(TorchCheckpoint& ck, const ByteSource& src, const CheckpointLimits& lim);
  static void pickleAndStorages(TorchCheckpoint& ck, const std::vector<uint8_t>& pkl,
                                const std::string& pkl_name, const Fetch& fetch,
                                const CheckpointLimits& lim);

 private:
  struct Module {
    std::vector<std::pair<std::string, Ref>> tensors;  // parameters, then persistent buffers
    std::vector<std::pair<std::string, Ref>> children;
  };

  TorchCheckpoint& ck_;
  const Graph& g_;
  const CheckpointLimits& lim_;
  const std::string& pkl_;  // "model.pt: archive/data.pkl"
  std::vector<std::pair<std::string, Ref>> named_;
  uint64_t name_bytes_ = 0;
  std::unordered_map<Ref, Module> modules_;
  uint64_t visits_ = 0;
  std::vector<uint32_t> slots_;  // ck_.storages_[i] holds g_.storages[slots_[i]]

  const std::string& file() const { return ck_.path_; }
  void add(std::string name, Ref tensor);
  nlohmann::json argument(const Value& v, int depth) const;
  bool isModule(const Value& v) const;
  const Object* state(const Object& inst) const;
  const Module& module(Ref inst, const std::string& name);
  void walk(Ref inst, const std::string& prefix, std::vector<Ref>& ancestors);
  void refuseUnknownGlobals(const std::string& shape) const;
  std::string keyList(const Object& dict, const std::string& skip) const;
};

void CheckpointBuilder::add(std::string name, Ref tensor) {
  if (named_.size() >= lim_.max_tensors)
    throw Error(ErrorKind::TooLarge,
                pkl_ + ": more than " + std::to_string(lim_.max_tensors) + " tensors (the limit)");
  name_bytes_ += name.size();
  if (name_bytes_ > lim_.max_name_bytes)
    throw Error(ErrorKind::TooLarge, pkl_ + ": tensor names longer than " +
                                         formatBytes(lim_.max_name_bytes) + " in all (the limit)");
  named_.emplace_back(std::move(name), tensor);
}

// The state a BUILD gave an object: a dict (or the dict of a (dict, slots) pair); null if none.
const Object* CheckpointBuilder::state(const Object& inst) const {
  const Value& s = inst.items[2];
  if (g_.is(s, Type::Dict)) return &g_.at(s.ref);
  if (g_.is(s, Type::Tuple) && g_.at(s.ref).items.size() == 2 &&
      g_.is(g_.at(s.ref).items[0], Type::Dict))
    return &g_.at(g_.at(s.ref).items[0].ref);
  return nullptr;
}

// An nn.Module: an object made from its class (not the result of a function call) whose state
// has _parameters or _modules.
bool CheckpointBuilder::isModule(const Value& v) const {
  if (!g_.is(v, Type::Instance)) return false;
  const Object& o = g_.at(v.ref);
  if (o.made_by_call) return false;
  const Object* s = state(o);
  return s && (g_.get(*s, "_parameters") || g_.get(*s, "_modules"));
}

std::string CheckpointBuilder::keyList(const Object& dict, const std::string& skip) const {
  std::string out;
  size_t shown = 0;
  for (size_t i = 0; i + 1 < dict.items.size(); i += 2) {
    const std::string* k = g_.str(dict.items[i]);
    const std::string key = k ? q(*k) : g_.describe(dict.items[i]);
    if (k && *k == skip) continue;
    if (shown == 8) return out + ", …";
    out += (shown++ ? ", " : "") + key;
  }
  return out;
}

void CheckpointBuilder::refuseUnknownGlobals(const std::string& shape) const {
  if (g_.unknown_globals.empty()) return;
  const std::string& name = g_.unknown_globals.front();
  const size_t dot = name.rfind('.');
  const bool cls = dot + 1 < name.size() && std::isupper(static_cast<unsigned char>(name[dot + 1]));
  std::string others;
  if (g_.unknown_globals.size() > 1)
    others = " (and " + std::to_string(g_.unknown_globals.size() - 1) +
             " more: " + clipForMessage(g_.unknown_globals[1], 80) +
             (g_.unknown_globals.size() > 2 ? ", …)" : ")");
  throw Error(ErrorKind::ForbiddenGlobal,
              pkl_ + ": the " + shape + " refers to the Python " + (cls ? "class " : "function ") +
                  clipForMessage(name, 120) + others +
                  ", which attnviz does not load; a checkpoint of tensors, numbers, strings, "
                  "lists and dicts loads (save model.state_dict() alone if in doubt)");
}

// A checkpoint's value as JSON for arguments(): scalars as themselves, a dict with string keys one
// level down, anything else as what it is ({"python": "a tensor"}).
nlohmann::json CheckpointBuilder::argument(const Value& v, int depth) const {
  auto opaque = [&](const std::string& what) { return nlohmann::json{{"python", what}}; };
  switch (v.kind) {
    case Value::Kind::None:
      return nullptr;
    case Value::Kind::Bool:
      return v.b;
    case Value::Kind::Int:
      return v.i;
    case Value::Kind::Float:
      return v.f;
    case Value::Kind::Ref:
      break;
  }
  const Object& o = g_.at(v.ref);
  if (o.type == Type::Str)
    return o.text.size() <= kMaxArgumentBytes ? nlohmann::json(o.text) : opaque(g_.describe(v));
  if (o.type == Type::Dict && depth == 0) {
    nlohmann::json out = nlohmann::json::object();
    for (size_t i = 0; i + 1 < o.items.size() && i < 2 * kMaxArguments; i += 2)
      if (const std::string* key = g_.str(o.items[i]); key && key->size() <= kMaxArgumentBytes)
        out[*key] = argument(o.items[i + 1], depth + 1);
    return out;
  }
  return opaque(g_.describe(v));
}

void CheckpointBuilder::pick(const Value& root) {
  struct Candidate {
    Ref dict;
    std::vector<std::string> path;
    size_t tensors;
  };
  // Breadth first through dicts with string keys, three levels deep: the dict with the most
  // tensor values wins (the shallower, then the first, on ties). Optimizer state is keyed by
  // parameter numbers, so its tensors are never reached.
  std::vector<Candidate> found;
  std::vector<std::pair<Value, std::vector<std::string>>> models;
  std::deque<Candidate> queue;
  std::unordered_set<Ref> seen;
  if (isModule(root)) {
    models.push_back({root, {}});
  } else if (g_.is(root, Type::Dict)) {
    queue.push_back({root.ref, {}, 0});
    seen.insert(root.ref);
  }
  while (!queue.empty()) {
    Candidate c = std::move(queue.front());
    queue.pop_front();
    const Object& d = g_.at(c.dict);
    for (size_t i = 0; i + 1 < d.items.size(); i += 2) {
      const std::string* key = g_.str(d.items[i]);
      const Value& v = d.items[i + 1];
      if (!key) continue;
      if (g_.is(v, Type::Tensor)) {
        ++c.tensors;
      } else if (c.path.size() < 3 && g_.is(v, Type::Dict) && seen.insert(v.ref).second) {
        std::vector<std::string> path = c.path;
        path.push_back(*key);
        queue.push_back({v.ref, std::move(path), 0});
      } else if (c.path.size() < 3 && isModule(v)) {
        std::vector<std::string> path = c.path;
        path.push_back(*key);
        models.push_back({v, std::move(path)});
      }
    }
    if (c.tensors) found.push_back(std::move(c));
  }

  if (!found.empty()) {
    const Candidate* best = &found.front();
    for (const Candidate& c : found)
      if (c.tensors > best->tensors) best = &c;
    ck_.layout_ =
        best->path.empty() ? CheckpointLayout::StateDict : CheckpointLayout::CheckpointDict;
    ck_.key_path_ = best->path;
    refuseUnknownGlobals(best->path.empty() ? "state_dict" : "checkpoint");
    const Object& d = g_.at(best->dict);
    std::vector<std::string> skipped;
    for (size_t i = 0; i + 1 < d.items.size(); i += 2) {
      const std::string* key = g_.str(d.items[i]);
      if (key && g_.is(d.items[i + 1], Type::Tensor))
        add(*key, d.items[i + 1].ref);
      else if (skipped.size() < 8)
        skipped.push_back(key ? q(*key) : g_.describe(d.items[i]));
    }
    if (!skipped.empty())
      ck_.notes_.push_back("entries that are not tensors, not read: " + [&] {
        std::string s;
        for (const auto& k : skipped) s += (s.empty() ? "" : ", ") + k;
        return s;
      }());
    if (!best->path.empty()) {
      ck_.notes_.push_back("other entries of the checkpoint, not read: " +
                           keyList(g_.at(root.ref), best->path.front()));
      // The other entries' values (model_args, iter_num, …) for what they state.
      const Object& top = g_.at(root.ref);
      for (size_t i = 0; i + 1 < top.items.size() && i < 2 * kMaxArguments; i += 2) {
        const std::string* key = g_.str(top.items[i]);
        if (key && *key != best->path.front()) ck_.arguments_[*key] = argument(top.items[i + 1], 0);
      }
    }
    return;
  }
  if (!models.empty()) {
    const auto& [model, path] = models.front();
    ck_.layout_ = CheckpointLayout::WholeModel;
    ck_.key_path_ = path;
    const Object& inst = g_.at(model.ref);
    ck_.model_class_ = g_.at(inst.items[0].ref).text;
    std::vector<Ref> ancestors;
    walk(model.ref, "", ancestors);
    if (!g_.unknown_globals.empty()) {
      std::string list;
      for (const auto& n : g_.unknown_globals) list += (list.empty() ? "" : ", ") + n;
      ck_.notes_.push_back("the pickled model refers to " +
                           std::to_string(g_.unknown_globals.size()) +
                           (g_.unknown_globals.size() == 16 ? "+" : "") +
                           " Python classes or functions, none of them run: " + list);
    }
    if (named_.empty())
      throw Error(ErrorKind::BadCheckpoint, file() + ": the pickled model " +
                                                clipForMessage(ck_.model_class_, 120) +
                                                " has no parameters or buffers");
    return;
  }
  // Nothing usable: say what is there.
  if (g_.is(root, Type::Instance)) {
    const Object& o = g_.at(root.ref);
    const std::string& cls = g_.at(o.items[0].ref).text;
    const size_t dot = cls.rfind('.');
    const bool is_class =
        dot + 1 < cls.size() && std::isupper(static_cast<unsigned char>(cls[dot + 1]));
    throw Error(o.made_by_call || !is_class ? ErrorKind::ForbiddenGlobal : ErrorKind::BadCheckpoint,
                pkl_ + ": the file holds " + g_.describe(root) +
                    ", not a state_dict or a torch.nn.Module; attnviz does not load it");
  }
  if (g_.is(root, Type::Dict)) {
    const Object& d = g_.at(root.ref);
    throw Error(ErrorKind::BadCheckpoint,
                pkl_ + ": the file holds a dict of " + std::to_string(d.items.size() / 2) +
                    " entries (" + keyList(d, "") +
                    ") with no tensors in it or in the dicts inside it: not a state_dict");
  }
  throw Error(ErrorKind::BadCheckpoint, pkl_ + ": the file holds " + g_.describe(root) +
                                            ", not a state_dict, a checkpoint dict or a model");
}

const CheckpointBuilder::Module& CheckpointBuilder::module(Ref inst, const std::string& name) {
  auto it = modules_.find(inst);
  if (it != modules_.end()) return it->second;
  const std::string where = file() + ": module " + (name.empty() ? "(top)" : q(name));
  const Object* s = state(g_.at(inst));
  Module m;
  auto dictOf = [&](const char* key) -> const Object* {
    const Value* v = s ? g_.get(*s, key) : nullptr;
    if (!v || v->kind == Value::Kind::None) return nullptr;
    if (!g_.is(*v, Type::Dict))
      throw Error(ErrorKind::BadCheckpoint,
                  where + ": " + key + " is " + g_.describe(*v) + ", expected an OrderedDict");
    return &g_.at(v->ref);
  };
  std::unordered_set<std::string_view> transient;  // _non_persistent_buffers_set
  if (const Value* np = s ? g_.get(*s, "_non_persistent_buffers_set") : nullptr;
      np && np->kind == Value::Kind::Ref)
    for (const Value& n : g_.at(np->ref).items)
      if (const std::string* t = g_.str(n)) transient.insert(*t);
  for (const char* kind : {"_parameters", "_buffers"}) {
    const Object* d = dictOf(kind);
    if (!d) continue;
    for (size_t i = 0; i + 1 < d->items.size(); i += 2) {
      const std::string* key = g_.str(d->items[i]);
      const Value& v = d->items[i + 1];
      if (!key)
        throw Error(ErrorKind::BadCheckpoint,
                    where + ": " + kind + " has a key that is " + g_.describe(d->items[i]));
      if (v.kind == Value::Kind::None) continue;  // e.g. bias=False; not in the state_dict
      if (std::string_view(kind) == "_buffers" && transient.count(*key)) continue;
      if (!g_.is(v, Type::Tensor))
        throw Error(ErrorKind::BadCheckpoint, where + ": " + kind + "[" + q(*key) + "] is " +
                                                  g_.describe(v) + ", not a tensor");
      m.tensors.emplace_back(*key, v.ref);
    }
  }
  if (const Object* d = dictOf("_modules")) {
    for (size_t i = 0; i + 1 < d->items.size(); i += 2) {
      const std::string* key = g_.str(d->items[i]);
      const Value& v = d->items[i + 1];
      if (!key)
        throw Error(ErrorKind::BadCheckpoint,
                    where + ": _modules has a key that is " + g_.describe(d->items[i]));
      if (v.kind == Value::Kind::None) continue;
      if (!isModule(v))
        throw Error(ErrorKind::BadCheckpoint,
                    where + ": submodule " + q(*key) + " is " + g_.describe(v) +
                        ", not a torch.nn.Module with _parameters and _modules");
      m.children.emplace_back(*key, v.ref);
    }
  }
  return modules_.emplace(inst, std::move(m)).first->second;
}

// The names a state_dict() of this module would have: its parameters, its persistent buffers,
// then each child's under "child.".
void CheckpointBuilder::walk(Ref inst, const std::string& prefix, std::vector<Ref>& ancestors) {
  const std::string name = prefix.empty() ? "" : prefix.substr(0, prefix.size() - 1);
  if (std::find(ancestors.begin(), ancestors.end(), inst) != ancestors.end())
    throw Error(ErrorKind::BadCheckpoint, file() + ": module " + q(name) + " contains itself");
  if (ancestors.size() >= lim_.max_module_depth)
    throw Error(ErrorKind::TooLarge, file() + ": modules nested more than " +
                                         std::to_string(lim_.max_module_depth) +
                                         " deep (the limit), at " + q(name));
  if (++visits_ > lim_.max_module_visits)
    throw Error(ErrorKind::TooLarge, file() + ": more than " +
                                         std::to_string(lim_.max_module_visits) +
                                         " module visits (modules shared many times over?)");
  const Module& m = module(inst, name);
  for (const auto& [key, tensor] : m.tensors) add(prefix + key, tensor);
  ancestors.push_back(inst);
  for (const auto& [key, child] : m.children) {
    if (prefix.size() + key.size() + 1 > lim_.max_name_bytes)
      throw Error(ErrorKind::TooLarge, file() + ": module names longer than the limit");
    walk(child, prefix + key + ".", ancestors);
  }
  ancestors.pop_back();
}

void CheckpointBuilder::check() {
  TorchCheckpoint& ck = ck_;
  std::map<uint32_t, size_t> storage_slot;  // storage record → ck.storages_ index
  for (const auto& [name, ref] : named_) {
    const pickle::TensorRecord& t = g_.tensors[g_.at(ref).index];
    const pickle::StorageRecord& s = g_.storages[g_.at(t.storage).index];
    const std::string where = file() + ": tensor " + q(name);
    const pickle::StorageType& type = *s.type;
    if (type.unsupported)
      throw Error(ErrorKind::UnsupportedDtype,
                  where + " is " + type.unsupported + " (torch." + type.name +
                      "); attnviz reads float, integer and bool tensors");
    const uint64_t esize = static_cast<uint64_t>(type.element_size);
    if (t.storage_offset < 0)
      throw Error(ErrorKind::BadOffsets,
                  where + " has a negative storage offset " + std::to_string(t.storage_offset));
    // numel, and the product of the non-zero sizes: bounded too, so that no product of sizes
    // taken in any order (an empty tensor's included) overflows downstream.
    uint64_t numel = 1, nonzero = 1, last = static_cast<uint64_t>(t.storage_offset);
    for (size_t d = 0; d < t.sizes.size(); ++d) {
      if (t.sizes[d] < 0)
        throw Error(ErrorKind::BadShape,
                    where + ": size " + shapeToString(t.sizes) + " has a negative dimension");
      if (t.strides[d] < 0)
        throw Error(ErrorKind::BadShape, where + ": stride " + shapeToString(t.strides) +
                                             " has a negative entry (PyTorch tensors have none)");
      if (mulOverflows(numel, static_cast<uint64_t>(t.sizes[d]), &numel) ||
          mulOverflows(nonzero, static_cast<uint64_t>(std::max<int64_t>(t.sizes[d], 1)),
                       &nonzero) ||
          nonzero > (uint64_t(1) << 62))
        throw Error(ErrorKind::SizeOverflow, where + ": size " + shapeToString(t.sizes) +
                                                 " has more elements than 64 bits can count");
    }
    uint64_t nbytes = 0;
    if (numel > (uint64_t(1) << 62) || mulOverflows(numel, esize, &nbytes))
      throw Error(ErrorKind::SizeOverflow, where + ": size " + shapeToString(t.sizes) + " × " +
                                               std::to_string(esize) + " bytes overflows");
    const std::string storage_name = "storage " + q(s.key) + " (" + std::to_string(s.numel) +
                                     " elements of torch." + type.name + ")";
    if (numel > 0) {
      for (size_t d = 0; d < t.sizes.size(); ++d) {
        uint64_t reach = 0;
        if (mulOverflows(static_cast<uint64_t>(t.sizes[d] - 1), static_cast<uint64_t>(t.strides[d]),
                         &reach) ||
            addOverflows(last, reach, &last))
          throw Error(ErrorKind::SizeOverflow,
                      where + ": offset " + std::to_string(t.storage_offset) + ", size " +
                          shapeToString(t.sizes) + " and stride " + shapeToString(t.strides) +
                          " reach past 64 bits");
      }
      if (last >= s.numel)
        throw Error(ErrorKind::BadOffsets, where + " (offset " + std::to_string(t.storage_offset) +
                                               ", size " + shapeToString(t.sizes) + ", stride " +
                                               shapeToString(t.strides) + ") reaches element " +
                                               std::to_string(last) + " of its " + storage_name);
      if (numel > s.numel && numel > lim_.max_broadcast_elements)
        throw Error(ErrorKind::BadShape,
                    where + " views " + std::to_string(numel) + " elements of a " + storage_name +
                        ": a broadcast larger than the limit of " +
                        std::to_string(lim_.max_broadcast_elements) + " elements");
    } else if (static_cast<uint64_t>(t.storage_offset) > s.numel) {
      throw Error(ErrorKind::BadOffsets, where + " is empty but its offset " +
                                             std::to_string(t.storage_offset) + " lies past its " +
                                             storage_name);
    }
    TensorInfo info;
    info.name = name;
    info.dtype = type.dtype;
    info.shape = t.sizes;
    info.begin = static_cast<uint64_t>(t.storage_offset) * esize;
    info.end = numel ? (last + 1) * esize : info.begin;
    TensorLayout layout;
    layout.storage = s.key;
    layout.storage_offset = t.storage_offset;
    layout.strides = t.strides;
    layout.parameter = t.parameter;
    int64_t expect = 1;  // no overflow: the product of the sizes is numel, at most 2^62
    for (size_t d = t.sizes.size(); numel > 0 && d-- > 0;) {
      if (t.sizes[d] != 1 && t.strides[d] != expect) layout.contiguous = false;
      expect *= t.sizes[d];
    }
    if (!ck.index_.emplace(name, ck.tensors_.size()).second)
      throw Error(ErrorKind::DuplicateKey, file() + ": tensor name " + q(name) + " occurs twice");
    auto slot = storage_slot.emplace(g_.at(t.storage).index, ck.storages_.size());
    if (slot.second) {
      ck.storages_.emplace_back();
      ck.storages_.back().element_size = type.element_size;
    }
    ck.storage_of_.push_back(slot.first->second);
    ck.tensors_.push_back(std::move(info));
    ck.layouts_.push_back(std::move(layout));
  }
  // Remember which record each slot reads (kept in the first tensor's order).
  slots_.assign(ck.storages_.size(), 0);
  for (const auto& [record, slot] : storage_slot) slots_[slot] = record;
}

void CheckpointBuilder::read(const Fetch& fetch) {
  std::vector<std::string> used_by(slots_.size());
  for (size_t i = ck_.tensors_.size(); i-- > 0;) used_by[ck_.storage_of_[i]] = ck_.tensors_[i].name;
  std::vector<uint64_t> nbytes(slots_.size());
  uint64_t total = 0;
  for (size_t i = 0; i < slots_.size(); ++i) {
    const pickle::StorageRecord& s = g_.storages[slots_[i]];
    if (mulOverflows(s.numel, static_cast<uint64_t>(s.type->element_size), &nbytes[i]) ||
        addOverflows(total, nbytes[i], &total) || total > lim_.max_storage_bytes)
      throw Error(ErrorKind::TooLarge, file() + ": the storages of the tensors need more than " +
                                           formatBytes(lim_.max_storage_bytes) +
                                           " (the limit; storage " + q(s.key) + " declares " +
                                           std::to_string(s.numel) + " elements of torch." +
                                           s.type->name + ")");
  }
  for (size_t i = 0; i < slots_.size(); ++i) {
    std::vector<uint8_t> bytes = fetch(g_.storages[slots_[i]], nbytes[i], used_by[i]);
    if (bytes.size() != nbytes[i])
      throw Error(ErrorKind::BadOffsets,
                  file() + ": storage " + q(g_.storages[slots_[i]].key) + " holds " +
                      std::to_string(bytes.size()) + " bytes; the pickle declares " +
                      std::to_string(nbytes[i]) + " (tensor " + q(used_by[i]) + ")");
    ck_.storages_[i].bytes = std::move(bytes);
  }
}

void CheckpointBuilder::pickleAndStorages(TorchCheckpoint& ck, const std::vector<uint8_t>& pkl,
                                          const std::string& pkl_name, const Fetch& fetch,
                                          const CheckpointLimits& lim) {
  if (pkl.size() > lim.max_pickle_bytes)
    throw Error(ErrorKind::TooLarge, pkl_name + " is " + formatBytes(pkl.size()) +
                                         " (the limit is " + formatBytes(lim.max_pickle_bytes) +
                                         ")");
  Graph g;
  StorageTable table(pkl_name, lim);
  const pickle::Result r = pickle::unpickle(
      pkl.data(), pkl.size(), g, lim.pickle, pkl_name,
      [&](Graph& gr, const Value& pid, uint64_t at) { return table.load(gr, pid, at, false); });
  if (r.consumed != pkl.size())
    throw Error(ErrorKind::BadPickle, pkl_name + ": " + std::to_string(pkl.size() - r.consumed) +
                                          " bytes after the pickle's STOP at byte " +
                                          std::to_string(r.consumed - 1));
  ck.protocol_ = r.protocol;
  CheckpointBuilder b(ck, g, lim, pkl_name);
  b.pick(r.root);
  b.check();
  b.read(fetch);
}

void CheckpointBuilder::zip(TorchCheckpoint& ck, ZipArchive& zip, const CheckpointLimits& lim) {
  const std::string& file = ck.path_;
  zip.scan(lim.max_entries);
  // The archive's folder: the one holding data.pkl ("archive", or the file's stem before 2.0).
  std::vector<size_t> pkls;
  for (size_t i = 0; i < zip.entries().size(); ++i) {
    const std::string& n = zip.entries()[i].name;
    const size_t slash = n.find('/');
    if (slash != std::string::npos && slash > 0 &&
        n.compare(slash, std::string::npos, "/data.pkl") == 0)
      pkls.push_back(i);
  }
  if (pkls.empty()) {
    std::string names;
    for (size_t i = 0; i < zip.entries().size() && i < 6; ++i)
      names += (i ? ", " : "") + q(zip.entries()[i].name);
    if (zip.entries().size() > 6) names += ", …";
    throw Error(ErrorKind::BadArchive, file + ": a zip archive without a FOLDER/data.pkl entry (" +
                                           std::to_string(zip.entries().size()) + " entries" +
                                           (names.empty() ? "" : ": " + names) +
                                           "): not a torch.save checkpoint");
  }
  if (pkls.size() > 1)
    throw Error(ErrorKind::BadArchive, file + ": the zip archive has " +
                                           std::to_string(pkls.size()) + " data.pkl entries (" +
                                           q(zip.entries()[pkls[0]].name) + ", " +
                                           q(zip.entries()[pkls[1]].name) + "); expected one");
  const std::string& pkl_entry = zip.entries()[pkls[0]].name;
  const std::string prefix = pkl_entry.substr(0, pkl_entry.size() - std::string("data.pkl").size());
  ck.archive_ = prefix.substr(0, prefix.size() - 1);
  for (const auto& e : zip.entries())
    if (e.name == prefix + "constants.pkl" ||
        e.name.compare(0, prefix.size() + 5, prefix + "code/") == 0)
      throw Error(ErrorKind::BadCheckpoint,
                  file + ": a TorchScript archive (torch.jit.save: it has " + q(e.name) +
                      "); attnviz never runs TorchScript code. Save model.state_dict() with "
                      "torch.save instead");
  auto small = [&](const std::string& name) -> std::optional<std::string> {
    const int64_t i = zip.find(name);
    if (i < 0) return std::nullopt;
    if (zip.entries()[i].size > 64)
      throw Error(ErrorKind::BadArchive, file + ": zip entry " + q(name) + " is " +
                                             std::to_string(zip.entries()[i].size) +
                                             " bytes, expected a short text");
    std::vector<uint8_t> b = zip.read(static_cast<size_t>(i));
    std::string s(b.begin(), b.end());
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
    return s;
  };
  if (auto order = small(prefix + "byteorder")) {
    if (*order == "big")
      throw Error(ErrorKind::BadArchive,
                  file + ": saved on a big-endian machine (" + q(prefix + "byteorder") +
                      " says \"big\"); attnviz reads little-endian checkpoints");
    if (*order != "little")
      throw Error(ErrorKind::BadArchive, file + ": zip entry " + q(prefix + "byteorder") + " is " +
                                             q(*order) + ", expected \"little\" or \"big\"");
  }
  auto version = small(prefix + "version");
  if (!version) version = small(prefix + ".data/version");
  if (version) {
    const bool digits =
        !version->empty() && version->size() <= 4 &&
        std::all_of(version->begin(), version->end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!digits || std::stoi(*version) < 1)
      throw Error(ErrorKind::BadArchive, file + ": zip entry " + q(prefix + "version") + " is " +
                                             q(*version) + ", expected a format version number");
    // PyTorch reads format versions up to kMaxSupportedFileFormatVersion (10, unchanged since
    // PyTorch 1.x; torch.save writes 3) and refuses newer ones: a format attnviz cannot know.
    constexpr int kNewestFormatVersion = 10;
    if (std::stoi(*version) > kNewestFormatVersion)
      throw Error(ErrorKind::BadArchive,
                  file + ": zip entry " + q(prefix + "version") + " says format version " +
                      *version + ", newer than any PyTorch writes (attnviz reads versions 1 to " +
                      std::to_string(kNewestFormatVersion) + ", as PyTorch does)");
  }
  const auto& pe = zip.entries()[pkls[0]];
  if (pe.size > lim.max_pickle_bytes)
    throw Error(ErrorKind::TooLarge, file + ": " + q(pkl_entry) + " is " + formatBytes(pe.size) +
                                         " (the limit is " + formatBytes(lim.max_pickle_bytes) +
                                         ")");
  const std::vector<uint8_t> pkl = zip.read(pkls[0]);
  pickleAndStorages(
      ck, pkl, file + ": " + pkl_entry,
      [&](const pickle::StorageRecord& s, uint64_t nbytes, const std::string& used_by) {
        const std::string name = prefix + "data/" + s.key;
        const int64_t i = zip.find(name);
        if (i < 0)
          throw Error(ErrorKind::BadArchive, file + ": zip entry " + q(name) +
                                                 " is missing (the storage of tensor " +
                                                 q(used_by) + ")");
        const uint64_t have = zip.entries()[static_cast<size_t>(i)].size;
        if (have != nbytes)
          throw Error(ErrorKind::BadOffsets,
                      file + ": zip entry " + q(name) + " holds " + std::to_string(have) +
                          " bytes, but " + q(pkl_entry) + " declares " + std::to_string(s.numel) +
                          " elements of torch." + s.type->name + " (" + std::to_string(nbytes) +
                          " bytes; tensor " + q(used_by) + ")");
        return zip.read(static_cast<size_t>(i));
      },
      lim);
}

void CheckpointBuilder::legacy(TorchCheckpoint& ck, const ByteSource& src,
                               const CheckpointLimits& lim) {
  const std::string& file = ck.path_;
  const uint64_t size = src.size();
  // The pickles come first, together at most max_pickle_bytes: read the first MiB of the file
  // for them, and more only when they are longer.
  const std::string object_pickle = file + ": legacy object pickle";
  const uint64_t limit = std::min<uint64_t>(size, lim.max_pickle_bytes);
  std::unique_ptr<Graph> graph;
  std::unique_ptr<StorageTable> table;
  Value root, keys;
  uint64_t pos = 0;
  int protocol = 0;
  for (uint64_t head = std::min<uint64_t>(limit, 1 << 20);; head = std::min(limit, head * 4)) {
    std::vector<uint8_t> buf(head);
    src.read(0, head, buf.data());
    graph = std::make_unique<Graph>();
    table = std::make_unique<StorageTable>(object_pickle, lim);
    Graph& g = *graph;
    pos = 0;
    auto next = [&](const char* what, bool storages) {
      const std::string name =
          file + ": legacy " + what + " pickle (at byte " + std::to_string(pos) + ")";
      const pickle::Result r = pickle::unpickle(
          buf.data() + pos, head - pos, g, lim.pickle, name,
          [&](Graph& gr, const Value& pid, uint64_t at) -> Value {
            if (!storages)
              throw Error(ErrorKind::BadPickle, name + ": a persistent id where none belongs");
            return table->load(gr, pid, at, true);
          });
      pos += r.consumed;
      if (storages) protocol = r.protocol;
      return r.root;
    };
    try {
      const Value magic = next("magic number", false);
      if (!g.is(magic, Type::BigInt) || g.at(magic.ref).text.size() != sizeof kLegacyMagic ||
          std::memcmp(g.at(magic.ref).text.data(), kLegacyMagic, sizeof kLegacyMagic) != 0)
        throw Error(ErrorKind::BadCheckpoint, file + ": the first pickle is " + g.describe(magic) +
                                                  ", not torch.save's magic number: not a "
                                                  "legacy PyTorch checkpoint");
      const Value version = next("protocol version", false);
      if (version.kind != Value::Kind::Int || version.i != kLegacyProtocolVersion)
        throw Error(ErrorKind::BadCheckpoint, file + ": legacy protocol version is " +
                                                  g.describe(version) + ", expected " +
                                                  std::to_string(kLegacyProtocolVersion));
      const Value sys = next("system info", false);
      const Value* little = g.is(sys, Type::Dict) ? g.get(g.at(sys.ref), "little_endian") : nullptr;
      if (!little || little->kind != Value::Kind::Bool)
        throw Error(ErrorKind::BadCheckpoint, file + ": the legacy system info is " +
                                                  g.describe(sys) +
                                                  ", expected a dict with little_endian");
      if (!little->b)
        throw Error(ErrorKind::BadArchive,
                    file +
                        ": saved on a big-endian machine (little_endian "
                        "is False); attnviz reads little-endian checkpoints");
      root = next("object", true);
      keys = next("storage keys", false);
      break;
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::Truncated || head == size) throw;
      if (head == limit)
        throw Error(ErrorKind::TooLarge, file + ": the legacy pickles are longer than " +
                                             formatBytes(lim.max_pickle_bytes) + " (the limit)");
    }
  }
  Graph& g = *graph;
  if (!g.is(keys, Type::List))
    throw Error(ErrorKind::BadCheckpoint, file + ": the legacy storage key list is " +
                                              g.describe(keys) + ", expected a list");

  // Then each storage: an 8-byte element count and the elements, in the order of the keys.
  std::unordered_map<std::string, uint32_t> roots;
  for (uint32_t i = 0; i < g.storages.size(); ++i)
    if (g.storages[i].view_of < 0) roots.emplace(g.storages[i].key, i);
  std::unordered_map<uint32_t, uint64_t> data_at;
  const std::vector<Value> key_list = g.at(keys.ref).items;
  for (const Value& k : key_list) {
    const std::string* key = g.str(k);
    if (!key)
      throw Error(ErrorKind::BadCheckpoint, file + ": the legacy storage key list holds " +
                                                g.describe(k) + ", expected strings");
    auto it = roots.find(*key);
    if (it == roots.end())
      throw Error(ErrorKind::BadCheckpoint, file + ": the legacy storage key list names " +
                                                q(*key) + ", which no tensor in the pickle uses");
    const pickle::StorageRecord& s = g.storages[it->second];
    if (data_at.count(it->second))
      throw Error(ErrorKind::BadCheckpoint,
                  file + ": storage " + q(*key) + " is listed twice in the legacy storage keys");
    if (size - pos < 8)
      throw Error(ErrorKind::Truncated, file + ": truncated at byte " + std::to_string(size) +
                                            ", before the element count of storage " + q(*key));
    uint8_t le[8];
    src.read(pos, 8, le);
    uint64_t count = 0;
    for (int b = 7; b >= 0; --b) count = (count << 8) | le[b];
    if (count != s.numel)
      throw Error(ErrorKind::BadOffsets,
                  file + ": storage " + q(*key) + " at byte " + std::to_string(pos) + " says " +
                      std::to_string(count) + " elements; the pickle declares " +
                      std::to_string(s.numel));
    uint64_t nbytes = 0, end = 0;
    if (mulOverflows(count, static_cast<uint64_t>(s.type->element_size), &nbytes) ||
        addOverflows(pos + 8, nbytes, &end) || end > size)
      throw Error(ErrorKind::Truncated, file + ": truncated: storage " + q(*key) + " of " +
                                            std::to_string(count) + " elements of torch." +
                                            s.type->name + " runs past the end of the " +
                                            std::to_string(size) + "-byte file");
    data_at.emplace(it->second, pos + 8);
    pos = end;
  }
  for (const auto& [key, index] : roots)
    if (!data_at.count(index))
      throw Error(
          ErrorKind::BadCheckpoint,
          file + ": storage " + q(key) + " is used in the pickle but has no data in the file");
  if (pos != size)
    throw Error(ErrorKind::TrailingBytes, file + ": " + std::to_string(size - pos) +
                                              " bytes after the last storage (at byte " +
                                              std::to_string(pos) + ")");
  ck.protocol_ = protocol;
  CheckpointBuilder b(ck, g, lim, object_pickle);
  b.pick(root);
  b.check();
  b.read([&](const pickle::StorageRecord& s, uint64_t nbytes, const std::string&) {
    uint64_t at = 0;
    if (s.view_of >= 0) {
      const uint32_t root_index = static_cast<uint32_t>(s.view_of);
      at = data_at.at(root_index) + s.view_offset * static_cast<uint64_t>(s.type->element_size);
    } else {
      at = data_at.at(static_cast<uint32_t>(&s - g.storages.data()));
    }
    std::vector<uint8_t> bytes(nbytes);
    src.read(at, nbytes, bytes.data());
    return bytes;
  });
}

// ---- TorchCheckpoint ----

const char* tensorFileFormatName(TensorFileFormat f) {
  switch (f) {
    case TensorFileFormat::Safetensors:
      return "safetensors";
    case TensorFileFormat::TorchZip:
      return "PyTorch checkpoint (zip)";
    case TensorFileFormat::TorchLegacy:
      return "PyTorch checkpoint (legacy)";
    case TensorFileFormat::TorchTar:
      return "PyTorch checkpoint (tar, before PyTorch 0.4)";
    case TensorFileFormat::Unknown:
      break;
  }
  return "unknown";
}

const char* checkpointLayoutName(CheckpointLayout l) {
  switch (l) {
    case CheckpointLayout::StateDict:
      return "state_dict";
    case CheckpointLayout::CheckpointDict:
      return "checkpoint dict";
    case CheckpointLayout::WholeModel:
      return "whole model";
  }
  return "?";
}

TensorFileFormat sniffTensorBytes(const uint8_t* d, size_t n) {
  if (n >= 4 && d[0] == 'P' && d[1] == 'K' &&
      ((d[2] == 3 && d[3] == 4) || (d[2] == 5 && d[3] == 6)))
    return TensorFileFormat::TorchZip;
  // PROTO 2..5, an optional FRAME, then LONG1 of 10 bytes: the magic number.
  if (n >= 2 && d[0] == 0x80 && d[1] >= 2 && d[1] <= 5) {
    size_t p = 2;
    if (n > p && d[p] == 0x95) p += 9;
    if (n >= p + 12 && d[p] == 0x8a && d[p + 1] == 10 &&
        std::memcmp(d + p + 2, kLegacyMagic, sizeof kLegacyMagic) == 0)
      return TensorFileFormat::TorchLegacy;
  }
  if (n >= 262 && std::memcmp(d + 257, "ustar", 5) == 0) return TensorFileFormat::TorchTar;
  if (n >= 9) {
    uint64_t len = 0;
    for (int i = 7; i >= 0; --i) len = (len << 8) | d[i];
    if (len >= 2 && d[8] == '{') return TensorFileFormat::Safetensors;
  }
  return TensorFileFormat::Unknown;
}

TensorFileFormat sniffTensorFile(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return TensorFileFormat::Unknown;
  std::ifstream in(path, std::ios::binary);
  uint8_t head[512];
  in.read(reinterpret_cast<char*>(head), sizeof head);
  return sniffTensorBytes(head, static_cast<size_t>(in.gcount()));
}

namespace {

[[noreturn]] void notACheckpoint(const std::string& what, TensorFileFormat f, const uint8_t* head,
                                 size_t n) {
  if (f == TensorFileFormat::Safetensors)
    throw Error(ErrorKind::BadCheckpoint,
                what + ": a safetensors file, not a PyTorch checkpoint (open it as safetensors)");
  if (f == TensorFileFormat::TorchTar)
    throw Error(ErrorKind::BadCheckpoint,
                what +
                    ": a tar archive (torch.save before PyTorch 0.4); attnviz does not read "
                    "it: load and save it again with a recent PyTorch");
  if (n == 0) throw Error(ErrorKind::FileTooShort, what + ": the file is empty");
  std::string hex;
  for (size_t i = 0; i < std::min<size_t>(n, 8); ++i) {
    char b[4];
    std::snprintf(b, sizeof b, "%02x", head[i]);
    hex += (i ? " " : "") + std::string(b);
  }
  throw Error(ErrorKind::BadCheckpoint,
              what + ": not a PyTorch checkpoint: it starts with bytes " + hex +
                  ", neither a zip archive (torch.save) nor torch.save's legacy magic number");
}

}  // namespace

std::unique_ptr<TorchCheckpoint> TorchCheckpoint::open(const std::string& path,
                                                       const CheckpointLimits& limits) {
  const uint64_t size = regularFileSize(path);
  uint8_t head[512];
  size_t n = 0;
  {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(ErrorKind::Io, path + ": cannot open the file for reading");
    in.read(reinterpret_cast<char*>(head), sizeof head);
    n = static_cast<size_t>(in.gcount());
  }
  std::unique_ptr<TorchCheckpoint> ck(new TorchCheckpoint);
  ck->path_ = path;
  ck->format_ = sniffTensorBytes(head, n);
  if (ck->format_ == TensorFileFormat::TorchZip) {
    ZipArchive zip(path, size);
    zip.openFile(path);
    CheckpointBuilder::zip(*ck, zip, limits);
  } else if (ck->format_ == TensorFileFormat::TorchLegacy) {
    FileSource src(path, size);
    CheckpointBuilder::legacy(*ck, src, limits);
  } else {
    notACheckpoint(path, ck->format_, head, n);
  }
  return ck;
}

std::unique_ptr<TorchCheckpoint> TorchCheckpoint::parse(std::vector<uint8_t> bytes,
                                                        const std::string& what,
                                                        const CheckpointLimits& limits) {
  std::unique_ptr<TorchCheckpoint> ck(new TorchCheckpoint);
  ck->path_ = what;
  ck->format_ = sniffTensorBytes(bytes.data(), bytes.size());
  if (ck->format_ == TensorFileFormat::TorchZip) {
    ZipArchive zip(what, bytes.size());
    zip.openBuffer(bytes);
    CheckpointBuilder::zip(*ck, zip, limits);
  } else if (ck->format_ == TensorFileFormat::TorchLegacy) {
    MemorySource src(bytes);
    CheckpointBuilder::legacy(*ck, src, limits);
  } else {
    notACheckpoint(what, ck->format_, bytes.data(), bytes.size());
  }
  return ck;
}

std::unique_ptr<TorchCheckpoint> TorchCheckpoint::fromPickle(const std::vector<uint8_t>& data_pkl,
                                                             const StorageReader& storage,
                                                             const std::string& what,
                                                             const CheckpointLimits& limits) {
  std::unique_ptr<TorchCheckpoint> ck(new TorchCheckpoint);
  ck->path_ = what;
  ck->format_ = TensorFileFormat::TorchZip;
  CheckpointBuilder::pickleAndStorages(
      *ck, data_pkl, what + ": data.pkl",
      [&](const pickle::StorageRecord& s, uint64_t nbytes, const std::string&) {
        return storage(s.key, nbytes);
      },
      limits);
  return ck;
}

const TensorInfo* TorchCheckpoint::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

const TensorLayout& TorchCheckpoint::layout(const TensorInfo& info) const {
  auto it = index_.find(info.name);
  if (it == index_.end())
    throw Error(ErrorKind::MissingTensor, path_ + ": no tensor " + q(info.name));
  return layouts_[it->second];
}

std::string TorchCheckpoint::describeLayout() const {
  std::string keys;
  for (const auto& k : key_path_) keys += "[" + q(k) + "]";
  switch (layout_) {
    case CheckpointLayout::StateDict:
      return "state_dict";
    case CheckpointLayout::CheckpointDict:
      return "state_dict under " + keys + " of a checkpoint dict";
    case CheckpointLayout::WholeModel:
      return "whole model " + clipForMessage(model_class_, 120) +
             (keys.empty() ? "" : " under " + keys + " of a checkpoint dict");
  }
  return "?";
}

namespace {

// Calls f(element_index_in_storage, run_length) for runs of consecutive storage elements that
// make up the tensor in row-major order.
template <class F>
void forEachRun(const Shape& sizes, const std::vector<int64_t>& strides, int64_t offset, F&& f) {
  const size_t nd = sizes.size();
  if (numel(sizes) == 0) return;
  if (nd == 0) {
    f(offset, 1);
    return;
  }
  const int64_t inner = sizes[nd - 1];
  const bool unit = strides[nd - 1] == 1;
  std::vector<int64_t> idx(nd, 0);
  for (;;) {
    int64_t base = offset;
    for (size_t d = 0; d + 1 < nd; ++d) base += idx[d] * strides[d];
    if (unit) {
      f(base, inner);
    } else {
      for (int64_t j = 0; j < inner; ++j) f(base + j * strides[nd - 1], 1);
    }
    size_t d = nd - 1;
    for (;;) {
      if (d == 0) return;
      --d;
      if (++idx[d] < sizes[d]) break;
      idx[d] = 0;
    }
  }
}

}  // namespace

std::vector<uint8_t> TorchCheckpoint::contiguousBytes(const TensorInfo& info) const {
  const TensorLayout& l = layout(info);
  const Storage& st = storages_[storage_of_[&l - layouts_.data()]];
  const size_t es = static_cast<size_t>(st.element_size);
  std::vector<uint8_t> out(static_cast<size_t>(numel(info.shape)) * es);
  uint8_t* dst = out.data();
  forEachRun(info.shape, l.strides, l.storage_offset, [&](int64_t at, int64_t n) {
    std::memcpy(dst, st.bytes.data() + static_cast<size_t>(at) * es, static_cast<size_t>(n) * es);
    dst += static_cast<size_t>(n) * es;
  });
  return out;
}

Tensor TorchCheckpoint::toFloat(const TensorInfo& info) const {
  const TensorLayout& l = layout(info);
  if (!isFloatDType(info.dtype))
    throw Error(ErrorKind::UnsupportedDtype, path_ + ": tensor " + q(info.name) + " has dtype " +
                                                 dtypeName(info.dtype) +
                                                 "; weights must be F32, F16, BF16 or F64");
  const Storage& st = storages_[storage_of_[&l - layouts_.data()]];
  const size_t es = static_cast<size_t>(st.element_size);
  Tensor out(info.shape);
  float* dst = out.ptr();
  forEachRun(info.shape, l.strides, l.storage_offset, [&](int64_t at, int64_t n) {
    convertToFloat(st.bytes.data() + static_cast<size_t>(at) * es, info.dtype,
                   static_cast<size_t>(n), dst);
    dst += n;
  });
  return out;
}

}  // namespace attnviz
