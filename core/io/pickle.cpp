#include "io/pickle.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <unordered_map>
#include <unordered_set>

#include "base/error.h"
#include "base/json_safe.h"

namespace attnviz::pickle {

namespace {

// ---- the names understood, and the names refused outright ----

struct KnownGlobal {
  const char* module;
  const char* name;
  Global global;
};
constexpr KnownGlobal kKnownGlobals[] = {
    {"torch._utils", "_rebuild_tensor_v2", Global::RebuildTensorV2},
    {"torch._utils", "_rebuild_parameter", Global::RebuildParameter},
    {"torch._utils", "_rebuild_parameter_with_state", Global::RebuildParameterWithState},
    {"torch._tensor", "_rebuild_from_type_v2", Global::RebuildFromTypeV2},
    {"collections", "OrderedDict", Global::OrderedDict},
    {"torch", "Size", Global::TorchSize},
    {"torch", "device", Global::TorchDevice},
    {"torch", "Tensor", Global::TensorType},
    {"torch._tensor", "Tensor", Global::TensorType},
    {"torch.nn.parameter", "Parameter", Global::TensorType},
    {"builtins", "set", Global::Set},
    {"builtins", "frozenset", Global::Set},
    {"builtins", "bytes", Global::Bytes},
    {"builtins", "bytearray", Global::Bytes},
    {"builtins", "object", Global::Object},
    {"_codecs", "encode", Global::CodecsEncode},
    {"copyreg", "_reconstructor", Global::Reconstructor},
    {"copyreg", "__newobj__", Global::NewObj},
    {"argparse", "Namespace", Global::Namespace},
};

constexpr const char* kTorchDTypes[] = {
    "float64", "float32",   "float16",       "bfloat16",    "int64",   "int32",
    "int16",   "int8",      "uint8",         "bool",        "double",  "float",
    "half",    "long",      "int",           "short",       "uint16",  "uint32",
    "uint64",  "complex64", "complex128",    "cfloat",      "cdouble", "qint8",
    "quint8",  "qint32",    "float8_e4m3fn", "float8_e5m2", "chalf",   "complex32"};

constexpr StorageType kStorageTypes[] = {
    {"DoubleStorage", DType::F64, 8, nullptr},
    {"FloatStorage", DType::F32, 4, nullptr},
    {"HalfStorage", DType::F16, 2, nullptr},
    {"BFloat16Storage", DType::BF16, 2, nullptr},
    {"LongStorage", DType::I64, 8, nullptr},
    {"IntStorage", DType::I32, 4, nullptr},
    {"ShortStorage", DType::I16, 2, nullptr},
    {"CharStorage", DType::I8, 1, nullptr},
    {"ByteStorage", DType::U8, 1, nullptr},
    {"BoolStorage", DType::BOOL, 1, nullptr},
    {"UInt16Storage", DType::U16, 2, nullptr},
    {"UInt32Storage", DType::U32, 4, nullptr},
    {"UInt64Storage", DType::U64, 8, nullptr},
    {"Float8_e4m3fnStorage", DType::F8_E4M3, 1, nullptr},
    {"Float8_e5m2Storage", DType::F8_E5M2, 1, nullptr},
    {"UntypedStorage", DType::U8, 1, nullptr},
    {"ComplexFloatStorage", DType::F32, 8, "complex (complex64)"},
    {"ComplexDoubleStorage", DType::F64, 16, "complex (complex128)"},
    {"ComplexHalfStorage", DType::F16, 4, "complex (complex32)"},
    {"QInt8Storage", DType::I8, 1, "quantized (qint8)"},
    {"QUInt8Storage", DType::U8, 1, "quantized (quint8)"},
    {"QInt32Storage", DType::I32, 4, "quantized (qint32)"},
    {"QUInt4x2Storage", DType::U8, 1, "quantized (quint4x2)"},
    {"QUInt2x4Storage", DType::U8, 1, "quantized (quint2x4)"},
};

// Modules whose every name serves to run programs, touch files or the network, or load more
// pickles. They are refused even inside a whole pickled model, where other unknown names are
// tolerated as stubs (which are never called anyway): a checkpoint has no business naming them.
constexpr const char* kForbiddenModules[] = {"os",
                                             "posix",
                                             "nt",
                                             "sys",
                                             "subprocess",
                                             "pty",
                                             "socket",
                                             "shutil",
                                             "ctypes",
                                             "importlib",
                                             "runpy",
                                             "code",
                                             "codeop",
                                             "pickle",
                                             "_pickle",
                                             "cPickle",
                                             "marshal",
                                             "webbrowser",
                                             "multiprocessing",
                                             "pdb",
                                             "commands",
                                             "popen2",
                                             "platform",
                                             "signal",
                                             "io",
                                             "_io",
                                             "tempfile",
                                             "asyncio",
                                             "operator",
                                             "_operator",
                                             "threading",
                                             "_thread",
                                             "urllib",
                                             "http",
                                             "ftplib",
                                             "smtplib",
                                             "telnetlib",
                                             "ssl",
                                             "requests",
                                             "setuptools",
                                             "distutils",
                                             "pip",
                                             "torch.hub",
                                             "torch.jit",
                                             "torch.package",
                                             "torch.serialization",
                                             "numpy.testing",
                                             "numpy.f2py",
                                             "numpy.distutils",
                                             "numpy.ctypeslib",
                                             "dill",
                                             "cloudpickle",
                                             "joblib"};
// Names of builtins that evaluate code or reach any attribute of any object.
constexpr const char* kForbiddenBuiltins[] = {
    "eval",  "exec",   "execfile", "compile", "getattr", "setattr",   "delattr",   "__import__",
    "open",  "file",   "globals",  "locals",  "vars",    "input",     "raw_input", "breakpoint",
    "apply", "reload", "help",     "exit",    "quit",    "memoryview"};
// Single names elsewhere that load files.
constexpr const char* kForbiddenNames[] = {"torch.load",    "torch.save",     "numpy.load",
                                           "numpy.loadtxt", "numpy.fromfile", "numpy.save"};

bool inModule(std::string_view module, std::string_view m) {
  return module == m ||
         (module.size() > m.size() && module.substr(0, m.size()) == m && module[m.size()] == '.');
}

// Python 2 spellings that protocol 2 still writes (pickle's fix_imports).
std::string canonicalModule(std::string_view module) {
  if (module == "__builtin__") return "builtins";
  if (module == "copy_reg") return "copyreg";
  return std::string(module);
}

// Text from the file for a message: clipped, control characters shown as \xNN.
std::string printable(std::string_view text, size_t max_bytes = 120) {
  return escapeControlChars(clipForMessage(text, max_bytes));
}

const char* opcodeName(uint8_t op) {
  switch (op) {
    case '(':
      return "MARK";
    case '.':
      return "STOP";
    case '0':
      return "POP";
    case '1':
      return "POP_MARK";
    case '2':
      return "DUP";
    case 'F':
      return "FLOAT";
    case 'I':
      return "INT";
    case 'J':
      return "BININT";
    case 'K':
      return "BININT1";
    case 'L':
      return "LONG";
    case 'M':
      return "BININT2";
    case 'N':
      return "NONE";
    case 'P':
      return "PERSID";
    case 'Q':
      return "BINPERSID";
    case 'R':
      return "REDUCE";
    case 'S':
      return "STRING";
    case 'T':
      return "BINSTRING";
    case 'U':
      return "SHORT_BINSTRING";
    case 'V':
      return "UNICODE";
    case 'X':
      return "BINUNICODE";
    case 'a':
      return "APPEND";
    case 'b':
      return "BUILD";
    case 'c':
      return "GLOBAL";
    case 'd':
      return "DICT";
    case '}':
      return "EMPTY_DICT";
    case 'e':
      return "APPENDS";
    case 'g':
      return "GET";
    case 'h':
      return "BINGET";
    case 'i':
      return "INST";
    case 'j':
      return "LONG_BINGET";
    case 'l':
      return "LIST";
    case ']':
      return "EMPTY_LIST";
    case 'o':
      return "OBJ";
    case 'p':
      return "PUT";
    case 'q':
      return "BINPUT";
    case 'r':
      return "LONG_BINPUT";
    case 's':
      return "SETITEM";
    case 't':
      return "TUPLE";
    case ')':
      return "EMPTY_TUPLE";
    case 'u':
      return "SETITEMS";
    case 'G':
      return "BINFLOAT";
    case 'B':
      return "BINBYTES";
    case 'C':
      return "SHORT_BINBYTES";
    case 0x80:
      return "PROTO";
    case 0x81:
      return "NEWOBJ";
    case 0x82:
      return "EXT1";
    case 0x83:
      return "EXT2";
    case 0x84:
      return "EXT4";
    case 0x85:
      return "TUPLE1";
    case 0x86:
      return "TUPLE2";
    case 0x87:
      return "TUPLE3";
    case 0x88:
      return "NEWTRUE";
    case 0x89:
      return "NEWFALSE";
    case 0x8a:
      return "LONG1";
    case 0x8b:
      return "LONG4";
    case 0x8c:
      return "SHORT_BINUNICODE";
    case 0x8d:
      return "BINUNICODE8";
    case 0x8e:
      return "BINBYTES8";
    case 0x8f:
      return "EMPTY_SET";
    case 0x90:
      return "ADDITEMS";
    case 0x91:
      return "FROZENSET";
    case 0x92:
      return "NEWOBJ_EX";
    case 0x93:
      return "STACK_GLOBAL";
    case 0x94:
      return "MEMOIZE";
    case 0x95:
      return "FRAME";
    case 0x96:
      return "BYTEARRAY8";
    case 0x97:
      return "NEXT_BUFFER";
    case 0x98:
      return "READONLY_BUFFER";
  }
  return nullptr;
}

class Unpickler {
 public:
  Unpickler(const uint8_t* data, size_t size, Graph& g, const Limits& limits,
            const std::string& where, const PersistentLoad& pl)
      : p_(data), size_(size), g_(g), lim_(limits), where_(where), persistent_load_(pl) {}

  Result run();

 private:
  const uint8_t* p_;
  size_t size_;
  size_t pos_ = 0;
  size_t op_at_ = 0;  // where the current opcode starts
  uint8_t op_ = 0;
  Graph& g_;
  const Limits& lim_;
  const std::string& where_;
  const PersistentLoad& persistent_load_;

  std::vector<Value> stack_;
  std::vector<size_t> marks_;  // stack sizes at each open MARK
  std::unordered_map<uint32_t, Value> memo_;
  uint64_t items_ = 0;
  int protocol_ = 0;

  // ---- errors ----
  [[noreturn]] void fail(ErrorKind kind, const std::string& what) const {
    const char* name = opcodeName(op_);
    throw Error(kind, where_ + ": byte " + std::to_string(op_at_) + " (" +
                          (name ? name : "opcode") + "): " + what);
  }
  [[noreturn]] void bad(const std::string& what) const { fail(ErrorKind::BadPickle, what); }
  [[noreturn]] void tooLarge(const std::string& what, uint64_t limit) const {
    fail(ErrorKind::TooLarge, what + " (the limit is " + std::to_string(limit) + ")");
  }

  // ---- reading ----
  void need(uint64_t n) {
    if (n <= size_ - pos_) return;
    if (pos_ == op_at_)
      throw Error(ErrorKind::Truncated, where_ + ": the pickle ends at byte " +
                                            std::to_string(size_) +
                                            " before its STOP opcode (truncated file?)");
    const char* name = opcodeName(op_);
    throw Error(ErrorKind::Truncated,
                where_ + ": the pickle ends at byte " + std::to_string(size_) + " inside " +
                    (name ? name : "an opcode") + " at byte " + std::to_string(op_at_) +
                    ", which needs " + std::to_string(n) + " more bytes (truncated file?)");
  }
  uint64_t readLE(int n) {
    need(n);
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = (v << 8) | p_[pos_ + i];
    pos_ += n;
    return v;
  }
  std::string_view readBytes(uint64_t n, const char* what) {
    if (n > lim_.max_string_bytes)
      tooLarge(std::string(what) + " of " + std::to_string(n) + " bytes", lim_.max_string_bytes);
    need(n);
    std::string_view s(reinterpret_cast<const char*>(p_ + pos_), n);
    pos_ += n;
    return s;
  }
  // A GLOBAL operand: text up to a newline.
  std::string_view readLine() {
    const size_t max = 4096;
    for (size_t i = pos_; i < size_ && i - pos_ <= max; ++i)
      if (p_[i] == '\n') {
        std::string_view s(reinterpret_cast<const char*>(p_ + pos_), i - pos_);
        pos_ = i + 1;
        return s;
      }
    if (size_ - pos_ > max) bad("a GLOBAL name longer than " + std::to_string(max) + " bytes");
    need(size_ - pos_ + 1);
    return {};
  }

  // ---- building ----
  Ref make(Object::Type t) {
    if (g_.objects.size() >= lim_.max_objects)
      tooLarge("more than " + std::to_string(lim_.max_objects) + " objects", lim_.max_objects);
    Object o;
    o.type = t;
    o.offset = op_at_;
    g_.objects.push_back(std::move(o));
    return static_cast<Ref>(g_.objects.size() - 1);
  }
  void countItems(uint64_t n) {
    items_ += n;
    if (items_ > lim_.max_items)
      tooLarge("containers holding more than " + std::to_string(lim_.max_items) + " items in all",
               lim_.max_items);
  }
  Value makeText(Object::Type t, std::string_view text) {
    if (t == Object::Type::Str) {
      size_t bad_at = 0;
      if (!isValidUtf8(text, &bad_at))
        bad("a string that is not valid UTF-8 (at byte " + std::to_string(bad_at) +
            " of the string)");
    }
    Ref r = make(t);
    g_.objects[r].text.assign(text);
    return Value::object(r);
  }
  // A dict key Python cannot hash (a list, a dict, or a tuple holding one) makes torch.load fail
  // ("unhashable type"): such a file was never written by torch.save, and is refused here too.
  // Sets are not checked: a frozenset, which is hashable, is a Set here as well.
  void checkKeys(const std::vector<Value>& items) const {
    for (size_t i = 0; i < items.size(); i += 2) {
      std::vector<Ref> tuples;  // tuples to look into (a tuple never contains itself)
      std::unordered_set<Ref> seen;
      auto unhashable = [&](const Value& v) -> const char* {
        if (v.kind != Value::Kind::Ref) return nullptr;
        switch (g_.objects[v.ref].type) {
          case Object::Type::List:
            return "a list";
          case Object::Type::Dict:
            return "a dict";
          case Object::Type::Tuple:
            if (seen.insert(v.ref).second) tuples.push_back(v.ref);
            return nullptr;
          default:
            return nullptr;
        }
      };
      const char* what = unhashable(items[i]);
      while (!what && !tuples.empty()) {
        const Ref r = tuples.back();
        tuples.pop_back();
        for (const Value& v : g_.objects[r].items)
          if ((what = unhashable(v))) break;
      }
      if (what)
        bad("a dict key that is " + g_.describe(items[i]) +
            (g_.is(items[i], Object::Type::Tuple) ? std::string(" holding ") + what : "") +
            ": Python cannot hash it, so torch.save never writes it (torch.load refuses it too)");
    }
  }
  Value makeContainer(Object::Type t, std::vector<Value> items) {
    if (t == Object::Type::Dict) checkKeys(items);
    countItems(items.size());
    Ref r = make(t);
    g_.objects[r].items = std::move(items);
    return Value::object(r);
  }

  // ---- the stack ----
  size_t base() const { return marks_.empty() ? 0 : marks_.back(); }
  void push(const Value& v) {
    if (stack_.size() >= lim_.max_stack)
      tooLarge("more than " + std::to_string(lim_.max_stack) + " values on the stack",
               lim_.max_stack);
    stack_.push_back(v);
  }
  void needStack(size_t n) {
    if (stack_.size() - base() < n)
      bad("needs " + std::to_string(n) + " value(s) on the stack, finds " +
          std::to_string(stack_.size() - base()) + (marks_.empty() ? "" : " above the MARK") +
          " (corrupt pickle)");
  }
  Value pop() {
    needStack(1);
    Value v = stack_.back();
    stack_.pop_back();
    return v;
  }
  Value& top() {
    needStack(1);
    return stack_.back();
  }
  std::vector<Value> popMark() {
    if (marks_.empty()) bad("no MARK to pop to (corrupt pickle)");
    const size_t m = marks_.back();
    marks_.pop_back();
    std::vector<Value> items(stack_.begin() + static_cast<std::ptrdiff_t>(m), stack_.end());
    stack_.resize(m);
    return items;
  }

  // ---- operations ----
  Value global(std::string_view module_in, std::string_view name);
  Value call(const Value& callable, const Value& args, bool newobj);
  Value callKnown(Global fn, const std::string& name, const std::vector<Value>& args, bool newobj);
  Value rebuildTensor(const std::vector<Value>& args);
  Value instance(Ref cls, const Value& args, bool made_by_call);
  Value latin1(const std::string& text);
  void build(const Value& state);
  void addTo(Object::Type want, std::vector<Value> items);
  const std::vector<Value>& tupleItems(const Value& v, const char* what);
  Value loadLong(uint64_t n);
  void memoPut(uint64_t index);
  Value memoGet(uint64_t index);
};

Value Unpickler::global(std::string_view module_in, std::string_view name) {
  if (module_in.empty() || name.empty()) bad("a GLOBAL with an empty module or name");
  if (!isValidUtf8(module_in) || !isValidUtf8(name)) bad("a GLOBAL name that is not UTF-8");
  const std::string module = canonicalModule(module_in);
  const std::string full = module + "." + std::string(name);
  auto forbid = [&](const char* why) {
    fail(ErrorKind::ForbiddenGlobal,
         "refers to the Python " +
             std::string(std::isupper(static_cast<unsigned char>(name[0])) ? "class "
                                                                           : "function ") +
             printable(full) + ", " + why +
             "; attnviz never runs code from a checkpoint and does not load this file");
  };
  for (const char* m : kForbiddenModules)
    if (inModule(module, m)) forbid("which can run programs or reach files and the network");
  if (module == "builtins")
    for (const char* n : kForbiddenBuiltins)
      if (name == n) forbid("which can evaluate code or reach any attribute of any object");
  for (const char* n : kForbiddenNames)
    if (full == n) forbid("which loads or writes files");

  Ref r = make(Object::Type::Global);
  Object& o = g_.objects[r];
  o.text = full;
  for (const auto& k : kKnownGlobals)
    if (module == k.module && name == k.name) o.global = k.global;
  if (module == "torch" || module == "torch.cuda" || module == "torch.storage") {
    if (const StorageType* st = findStorageType(name)) {
      o.global = Global::StorageType;
      o.storage_type = st;
    }
  }
  if (module == "torch")
    for (const char* d : kTorchDTypes)
      if (name == d) o.global = Global::TorchDType;
  if (o.global == Global::Unknown) {
    ++g_.unknown_global_count;
    if (g_.unknown_globals.size() < 16 &&
        std::find(g_.unknown_globals.begin(), g_.unknown_globals.end(), full) ==
            g_.unknown_globals.end())
      g_.unknown_globals.push_back(full);
  }
  return Value::object(r);
}

const std::vector<Value>& Unpickler::tupleItems(const Value& v, const char* what) {
  if (!g_.is(v, Object::Type::Tuple) && !g_.is(v, Object::Type::List))
    bad(std::string(what) + " is " + g_.describe(v) + ", expected a tuple");
  return g_.objects[v.ref].items;
}

Value Unpickler::instance(Ref cls, const Value& args, bool made_by_call) {
  Ref r = make(Object::Type::Instance);
  countItems(3);
  Object& o = g_.objects[r];
  o.made_by_call = made_by_call;
  o.items = {Value::object(cls), args, Value::none()};
  return Value::object(r);
}

Value Unpickler::latin1(const std::string& text) {
  // text is UTF-8; every code point must be below 256.
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      out += static_cast<char>(c);
    } else if ((c == 0xC2 || c == 0xC3) && i + 1 < text.size()) {
      out += static_cast<char>(((c & 0x03) << 6) | (static_cast<unsigned char>(text[++i]) & 0x3F));
    } else {
      bad("_codecs.encode of a string with characters above U+00FF as latin1");
    }
  }
  Ref r = make(Object::Type::Bytes);
  g_.objects[r].text = std::move(out);
  return Value::object(r);
}

Value Unpickler::rebuildTensor(const std::vector<Value>& a) {
  const char* fn = "torch._utils._rebuild_tensor_v2";
  if (a.size() != 6 && a.size() != 7)
    bad(std::string(fn) + " called with " + std::to_string(a.size()) +
        " arguments; it takes (storage, storage_offset, size, stride, requires_grad, "
        "backward_hooks[, metadata])");
  if (!g_.is(a[0], Object::Type::Storage))
    bad(std::string(fn) + ": argument 1 (storage) is " + g_.describe(a[0]) +
        ", expected a storage from a persistent id");
  if (a[1].kind != Value::Kind::Int)
    bad(std::string(fn) + ": argument 2 (storage_offset) is " + g_.describe(a[1]) +
        ", expected an int");
  const auto& size = tupleItems(a[2], "argument 3 (size)");
  const auto& stride = tupleItems(a[3], "argument 4 (stride)");
  if (size.size() > lim_.max_dims)
    fail(ErrorKind::BadShape, std::string(fn) + ": a tensor of " + std::to_string(size.size()) +
                                  " dimensions (at most " + std::to_string(lim_.max_dims) + ")");
  if (stride.size() != size.size())
    bad(std::string(fn) + ": size has " + std::to_string(size.size()) + " dimensions but stride " +
        std::to_string(stride.size()));
  TensorRecord t;
  t.storage = a[0].ref;
  t.storage_offset = a[1].i;
  t.offset = op_at_;
  for (size_t i = 0; i < size.size(); ++i) {
    if (size[i].kind != Value::Kind::Int || stride[i].kind != Value::Kind::Int)
      bad(std::string(fn) + ": size or stride entry " + std::to_string(i) + " is " +
          g_.describe(size[i].kind != Value::Kind::Int ? size[i] : stride[i]) +
          ", expected an int");
    t.sizes.push_back(size[i].i);
    t.strides.push_back(stride[i].i);
  }
  if (a[4].kind != Value::Kind::Bool && a[4].kind != Value::Kind::Int)
    bad(std::string(fn) + ": argument 5 (requires_grad) is " + g_.describe(a[4]) +
        ", expected a bool");
  if (a[5].kind != Value::Kind::None && !g_.is(a[5], Object::Type::Dict))
    bad(std::string(fn) + ": argument 6 (backward_hooks) is " + g_.describe(a[5]) +
        ", expected an OrderedDict");
  if (a.size() == 7 && a[6].kind != Value::Kind::None && !g_.is(a[6], Object::Type::Dict))
    bad(std::string(fn) + ": argument 7 (metadata) is " + g_.describe(a[6]) + ", expected a dict");
  Ref r = make(Object::Type::Tensor);
  g_.objects[r].index = static_cast<uint32_t>(g_.tensors.size());
  g_.tensors.push_back(std::move(t));
  return Value::object(r);
}

// A call of an understood name, evaluated here the way Python would, on checked arguments.
Value Unpickler::callKnown(Global fn, const std::string& name, const std::vector<Value>& a,
                           bool newobj) {
  auto arity = [&](size_t lo, size_t hi) {
    if (a.size() < lo || a.size() > hi)
      bad(printable(name) + " called with " + std::to_string(a.size()) + " argument(s); expected " +
          (lo == hi ? std::to_string(lo) : std::to_string(lo) + " to " + std::to_string(hi)));
  };
  auto tensorArg = [&](size_t i) {
    if (!g_.is(a[i], Object::Type::Tensor))
      bad(printable(name) + ": argument " + std::to_string(i + 1) + " is " + g_.describe(a[i]) +
          ", expected a tensor");
    return a[i];
  };
  switch (fn) {
    case Global::RebuildTensorV2:
      if (newobj) break;
      return rebuildTensor(a);
    case Global::RebuildParameter:
    case Global::RebuildParameterWithState: {
      if (newobj) break;
      if (fn == Global::RebuildParameter)
        arity(3, 3);
      else
        arity(4, 4);
      Value t = tensorArg(0);
      g_.tensors[g_.objects[t.ref].index].parameter = true;
      return t;
    }
    case Global::RebuildFromTypeV2: {
      if (newobj) break;
      arity(4, 4);
      if (!g_.is(a[0], Object::Type::Global))
        bad(printable(name) + ": argument 1 is " + g_.describe(a[0]) + ", expected a function");
      const Global inner = g_.objects[a[0].ref].global;
      const std::string inner_name = g_.objects[a[0].ref].text;
      if (inner != Global::RebuildTensorV2 && inner != Global::RebuildParameter &&
          inner != Global::RebuildParameterWithState)
        bad(printable(name) + " asked to call " + printable(inner_name) +
            "; only torch's tensor rebuild functions are understood");
      if (!g_.is(a[1], Object::Type::Global))
        bad(printable(name) + ": argument 2 is " + g_.describe(a[1]) + ", expected a class");
      const std::vector<Value> args = tupleItems(a[2], "argument 3 of _rebuild_from_type_v2");
      return callKnown(inner, inner_name, args, false);
    }
    case Global::OrderedDict: {
      arity(0, 1);
      std::vector<Value> items;
      if (a.size() == 1) {
        if (g_.is(a[0], Object::Type::Dict)) {
          items = g_.objects[a[0].ref].items;
        } else if (g_.is(a[0], Object::Type::List) || g_.is(a[0], Object::Type::Tuple)) {
          for (const Value& pair : g_.objects[a[0].ref].items) {
            const auto& kv = tupleItems(pair, "an OrderedDict item");
            if (kv.size() != 2) bad("an OrderedDict item is not a (key, value) pair");
            items.push_back(kv[0]);
            items.push_back(kv[1]);
          }
        } else {
          bad(printable(name) + " called with " + g_.describe(a[0]) + ", expected key-value pairs");
        }
      }
      return makeContainer(Object::Type::Dict, std::move(items));
    }
    case Global::TorchSize: {
      arity(0, 1);
      std::vector<Value> dims;
      if (a.size() == 1) dims = tupleItems(a[0], "the argument of torch.Size");
      for (const Value& d : dims)
        if (d.kind != Value::Kind::Int)
          bad("torch.Size with an entry that is " + g_.describe(d) + ", expected ints");
      return makeContainer(Object::Type::Tuple, std::move(dims));
    }
    case Global::TorchDevice: {
      if (newobj) break;
      arity(1, 2);
      const std::string* type = g_.str(a[0]);
      if (!type || (a.size() == 2 && a[1].kind != Value::Kind::Int))
        bad("torch.device called with " + g_.describe(a[0]) + ", expected a device name");
      return makeText(Object::Type::Str,
                      a.size() == 2 ? *type + ":" + std::to_string(a[1].i) : *type);
    }
    case Global::Set: {
      arity(0, 1);
      std::vector<Value> items;
      if (a.size() == 1) {
        if (!g_.is(a[0], Object::Type::List) && !g_.is(a[0], Object::Type::Tuple) &&
            !g_.is(a[0], Object::Type::Set))
          bad(printable(name) + " called with " + g_.describe(a[0]) + ", expected a list");
        items = g_.objects[a[0].ref].items;
      }
      return makeContainer(Object::Type::Set, std::move(items));
    }
    case Global::Bytes:
    case Global::CodecsEncode: {
      if (newobj && fn == Global::CodecsEncode) break;
      if (a.empty() && fn == Global::Bytes) return makeText(Object::Type::Bytes, "");
      arity(fn == Global::Bytes ? 1 : 2, 2);
      if (g_.is(a[0], Object::Type::Bytes) && a.size() == 1) {
        const std::string copy = g_.objects[a[0].ref].text;
        return makeText(Object::Type::Bytes, copy);
      }
      const std::string* text = g_.str(a[0]);
      const std::string* enc = a.size() == 2 ? g_.str(a[1]) : nullptr;
      if (!text || !enc || (*enc != "latin1" && *enc != "latin-1"))
        bad(printable(name) + " called with " + g_.describe(a[0]) +
            "; only (str, 'latin1') is understood");
      return latin1(*text);
    }
    case Global::Reconstructor: {
      if (newobj) break;
      arity(3, 3);  // (cls, base, state): cls.__new__ without __init__
      if (g_.is(a[0], Object::Type::Global) && g_.objects[a[0].ref].global == Global::Namespace)
        return callKnown(Global::Namespace, g_.objects[a[0].ref].text, {}, true);
      if (!g_.is(a[0], Object::Type::Global) || g_.objects[a[0].ref].global != Global::Unknown)
        bad("copyreg._reconstructor asked to make " + g_.describe(a[0]));
      return instance(a[0].ref, makeContainer(Object::Type::Tuple, {}), false);
    }
    case Global::NewObj: {
      if (newobj) break;
      if (a.empty()) bad("copyreg.__newobj__ called without a class");
      return call(a[0], makeContainer(Object::Type::Tuple, {a.begin() + 1, a.end()}), true);
    }
    case Global::TensorType:
      // NEWOBJ of torch.nn.Parameter(data[, requires_grad]) in older files.
      if (newobj && (a.size() == 1 || a.size() == 2)) {
        Value t = tensorArg(0);
        g_.tensors[g_.objects[t.ref].index].parameter = true;
        return t;
      }
      break;
    case Global::Namespace: {
      // argparse.Namespace() or Namespace.__new__: an empty record whose BUILD state (a dict of
      // its attributes) becomes its entries. Namespace takes keyword arguments only.
      arity(0, 0);
      Value record = makeContainer(Object::Type::Dict, {});
      g_.objects[record.ref].global = Global::Namespace;
      return record;
    }
    case Global::StorageType:
      bad("calls " + printable(name) +
          " directly; in a checkpoint, storages come only from persistent ids");
    default:
      break;
  }
  bad((newobj ? "creates an object of " : "calls ") + printable(name) + " with " +
      std::to_string(a.size()) + " argument(s), which torch.save never writes");
}

// REDUCE (callable(*args)) and NEWOBJ (cls.__new__(cls, *args)).
Value Unpickler::call(const Value& callable, const Value& args, bool newobj) {
  if (!g_.is(callable, Object::Type::Global))
    bad(std::string(newobj ? "creates an object of " : "calls ") + g_.describe(callable) +
        "; only named classes and functions can be called");
  const Global fn = g_.objects[callable.ref].global;
  const std::string name = g_.objects[callable.ref].text;
  if (fn == Global::Unknown) {
    // Never called: recorded as an opaque object that a whole pickled model may hold.
    if (!g_.is(args, Object::Type::Tuple) && !g_.is(args, Object::Type::List))
      bad("the arguments of " + printable(name) + " are " + g_.describe(args) +
          ", expected a tuple");
    return instance(callable.ref, args, !newobj);
  }
  const std::vector<Value> a = tupleItems(args, "the argument list");
  return callKnown(fn, name, a, newobj);
}

void Unpickler::build(const Value& state) {
  Value& target = top();
  if (g_.is(target, Object::Type::Instance)) {
    g_.objects[target.ref].items[2] = state;
    return;
  }
  // A Namespace's attributes: its one state, a dict with string keys (what pickle writes for
  // vars(namespace)), become its entries.
  if (g_.is(target, Object::Type::Dict) && g_.objects[target.ref].global == Global::Namespace) {
    if (!g_.is(state, Object::Type::Dict))
      bad("sets the state of an argparse.Namespace to " + g_.describe(state) +
          "; expected a dict of its attributes");
    if (!g_.objects[target.ref].items.empty())
      bad("sets the state of an argparse.Namespace a second time");
    std::vector<Value> items = g_.objects[state.ref].items;
    for (size_t i = 0; i < items.size(); i += 2)
      if (!g_.str(items[i]))
        bad("an argparse.Namespace attribute named by " + g_.describe(items[i]) +
            ", expected a str");
    countItems(items.size());
    g_.objects[target.ref].items = std::move(items);
    return;
  }
  // An OrderedDict's attributes (a state_dict's _metadata) and a Parameter's Python state are
  // not needed to read tensors.
  if ((g_.is(target, Object::Type::Dict) || g_.is(target, Object::Type::Tensor)) &&
      (state.kind == Value::Kind::None || g_.is(state, Object::Type::Dict) ||
       g_.is(state, Object::Type::Tuple)))
    return;
  bad("sets the state of " + g_.describe(target) + " to " + g_.describe(state) +
      "; only objects of classes, tensors and OrderedDicts have a state");
}

// APPEND(S) to a list, SETITEM(S) to a dict, ADDITEMS to a set; an opaque Instance records them.
void Unpickler::addTo(Object::Type want, std::vector<Value> items) {
  Value& target = top();
  const bool ok =
      (g_.is(target, want) || g_.is(target, Object::Type::Instance)) &&
      !(g_.is(target, Object::Type::Dict) && g_.objects[target.ref].global == Global::Namespace);
  if (!ok)
    bad(std::string(want == Object::Type::Dict   ? "sets items of "
                    : want == Object::Type::List ? "appends to "
                                                 : "adds to ") +
        g_.describe(target) + "; only a " +
        (want == Object::Type::Dict   ? "dict"
         : want == Object::Type::List ? "list"
                                      : "set") +
        " can take them");
  if (want == Object::Type::Dict && items.size() % 2)
    bad("an odd number of values for key-value pairs");
  if (want == Object::Type::Dict && g_.is(target, Object::Type::Dict)) checkKeys(items);
  countItems(items.size());
  auto& dst = g_.objects[target.ref].items;
  dst.insert(dst.end(), items.begin(), items.end());
}

Value Unpickler::loadLong(uint64_t n) {
  if (n > lim_.max_long_bytes)
    tooLarge("an integer of " + std::to_string(n) + " bytes", lim_.max_long_bytes);
  need(n);
  const uint8_t* b = p_ + pos_;
  pos_ += n;
  if (n == 0) return Value::integer(0);
  // Fits in int64 when every byte above the 8th repeats the sign.
  const uint8_t sign = (b[n - 1] & 0x80) ? 0xFF : 0x00;
  bool fits = true;
  for (uint64_t i = 8; i < n; ++i) fits = fits && b[i] == sign;
  if (n > 8) fits = fits && ((b[7] & 0x80) ? 0xFF : 0x00) == sign;
  if (fits) {
    uint64_t v = sign ? ~uint64_t(0) : 0;
    for (uint64_t i = std::min<uint64_t>(n, 8); i-- > 0;) v = (v << 8) | b[i];
    int64_t s;
    std::memcpy(&s, &v, 8);
    return Value::integer(s);
  }
  Ref r = make(Object::Type::BigInt);
  g_.objects[r].text.assign(reinterpret_cast<const char*>(b), n);
  return Value::object(r);
}

void Unpickler::memoPut(uint64_t index) {
  const Value v = top();
  if (index > 0xFFFFFFFFull) bad("memo index " + std::to_string(index) + " out of range");
  auto it = memo_.find(static_cast<uint32_t>(index));
  if (it != memo_.end()) {
    it->second = v;
    return;
  }
  if (memo_.size() >= lim_.max_memo)
    tooLarge("more than " + std::to_string(lim_.max_memo) + " memo entries", lim_.max_memo);
  memo_.emplace(static_cast<uint32_t>(index), v);
}

Value Unpickler::memoGet(uint64_t index) {
  auto it = memo_.find(static_cast<uint32_t>(index));
  if (index > 0xFFFFFFFFull || it == memo_.end())
    bad("memo entry " + std::to_string(index) + " was never stored (corrupt pickle)");
  return it->second;
}

Result Unpickler::run() {
  for (;;) {
    op_at_ = pos_;
    op_ = 0;
    need(1);
    op_ = p_[pos_++];
    switch (op_) {
      // ---- framing and protocol ----
      case 0x80: {  // PROTO
        const uint64_t v = readLE(1);
        if (v > 5) bad("pickle protocol " + std::to_string(v) + " (attnviz reads 2 to 5)");
        if (op_at_ == 0) protocol_ = static_cast<int>(v);
        break;
      }
      case 0x95: {  // FRAME: a length hint; the opcodes follow as usual
        const uint64_t n = readLE(8);
        if (n > size_ - pos_) need(n);
        break;
      }
      case '.': {  // STOP
        if (stack_.size() - base() < 1) bad("STOP with an empty stack (corrupt pickle)");
        Result r;
        r.root = stack_.back();
        r.consumed = pos_;
        r.protocol = protocol_;
        return r;
      }
      // ---- constants ----
      case 'N':
        push(Value::none());
        break;
      case 0x88:
        push(Value::boolean(true));
        break;
      case 0x89:
        push(Value::boolean(false));
        break;
      case 'J':
        push(Value::integer(static_cast<int32_t>(readLE(4))));
        break;
      case 'K':
        push(Value::integer(static_cast<int64_t>(readLE(1))));
        break;
      case 'M':
        push(Value::integer(static_cast<int64_t>(readLE(2))));
        break;
      case 0x8a:
        push(loadLong(readLE(1)));
        break;
      case 0x8b: {  // LONG4: a signed length
        const int32_t n = static_cast<int32_t>(readLE(4));
        if (n < 0) bad("LONG4 with a negative length " + std::to_string(n));
        push(loadLong(static_cast<uint64_t>(n)));
        break;
      }
      case 'G': {  // BINFLOAT: big-endian double
        need(8);
        uint64_t bits = 0;
        for (int i = 0; i < 8; ++i) bits = (bits << 8) | p_[pos_ + i];
        pos_ += 8;
        double d;
        std::memcpy(&d, &bits, 8);
        push(Value::real(d));
        break;
      }
      // ---- strings and bytes ----
      case 'X':
        push(makeText(Object::Type::Str, readBytes(readLE(4), "a string")));
        break;
      case 0x8c:
        push(makeText(Object::Type::Str, readBytes(readLE(1), "a string")));
        break;
      case 0x8d:
        push(makeText(Object::Type::Str, readBytes(readLE(8), "a string")));
        break;
      case 'B':
        push(makeText(Object::Type::Bytes, readBytes(readLE(4), "bytes")));
        break;
      case 'C':
        push(makeText(Object::Type::Bytes, readBytes(readLE(1), "bytes")));
        break;
      case 0x8e:
      case 0x96:
        push(makeText(Object::Type::Bytes, readBytes(readLE(8), "bytes")));
        break;
      case 'T':  // BINSTRING, SHORT_BINSTRING: Python 2 str; text when it is UTF-8
      case 'U': {
        const int32_t n = static_cast<int32_t>(readLE(op_ == 'T' ? 4 : 1));
        if (n < 0) bad("a string of negative length " + std::to_string(n));
        std::string_view s = readBytes(static_cast<uint64_t>(n), "a string");
        push(makeText(isValidUtf8(s) ? Object::Type::Str : Object::Type::Bytes, s));
        break;
      }
      // ---- containers ----
      case ')':
        push(makeContainer(Object::Type::Tuple, {}));
        break;
      case ']':
        push(makeContainer(Object::Type::List, {}));
        break;
      case '}':
        push(makeContainer(Object::Type::Dict, {}));
        break;
      case 0x8f:
        push(makeContainer(Object::Type::Set, {}));
        break;
      case '(':
        if (marks_.size() >= lim_.max_marks)
          tooLarge("MARKs nested more than " + std::to_string(lim_.max_marks) + " deep",
                   lim_.max_marks);
        marks_.push_back(stack_.size());
        break;
      case 't':
        push(makeContainer(Object::Type::Tuple, popMark()));
        break;
      case 'l':
        push(makeContainer(Object::Type::List, popMark()));
        break;
      case 0x91:
        push(makeContainer(Object::Type::Set, popMark()));
        break;
      case 'd': {
        std::vector<Value> items = popMark();
        if (items.size() % 2) bad("an odd number of values for key-value pairs");
        push(makeContainer(Object::Type::Dict, std::move(items)));
        break;
      }
      case 0x85:
      case 0x86:
      case 0x87: {  // TUPLE1..3
        const size_t n = op_ - 0x84;
        needStack(n);
        std::vector<Value> items(stack_.end() - static_cast<std::ptrdiff_t>(n), stack_.end());
        stack_.resize(stack_.size() - n);
        push(makeContainer(Object::Type::Tuple, std::move(items)));
        break;
      }
      case 'a': {
        Value v = pop();
        addTo(Object::Type::List, {v});
        break;
      }
      case 'e': {
        std::vector<Value> items = popMark();
        addTo(Object::Type::List, std::move(items));
        break;
      }
      case 's': {
        Value v = pop();
        Value k = pop();
        addTo(Object::Type::Dict, {k, v});
        break;
      }
      case 'u': {
        std::vector<Value> items = popMark();
        addTo(Object::Type::Dict, std::move(items));
        break;
      }
      case 0x90: {
        std::vector<Value> items = popMark();
        addTo(Object::Type::Set, std::move(items));
        break;
      }
      // ---- stack and memo ----
      case '0':  // POP: a value, or the MARK when nothing is above it
        if (stack_.size() > base())
          stack_.pop_back();
        else
          popMark();
        break;
      case '1':
        popMark();
        break;
      case '2':
        push(top());
        break;
      case 'q':
        memoPut(readLE(1));
        break;
      case 'r':
        memoPut(readLE(4));
        break;
      case 0x94:
        memoPut(memo_.size());
        break;
      case 'h':
        push(memoGet(readLE(1)));
        break;
      case 'j':
        push(memoGet(readLE(4)));
        break;
      // ---- names, calls, objects ----
      case 'c': {
        std::string_view module = readLine();
        std::string_view name = readLine();
        push(global(module, name));
        break;
      }
      case 0x93: {  // STACK_GLOBAL
        Value name = pop();
        Value module = pop();
        const std::string* m = g_.str(module);
        const std::string* n = g_.str(name);
        if (!m || !n) bad("STACK_GLOBAL with " + g_.describe(!m ? module : name) + " as a name");
        push(global(*m, *n));
        break;
      }
      case 'R': {
        Value args = pop();
        Value fn = pop();
        push(call(fn, args, false));
        break;
      }
      case 0x81: {
        Value args = pop();
        Value cls = pop();
        push(call(cls, args, true));
        break;
      }
      case 0x92: {  // NEWOBJ_EX: keyword arguments only for classes attnviz does not call
        Value kwargs = pop();
        Value args = pop();
        Value cls = pop();
        if (!g_.is(kwargs, Object::Type::Dict)) bad("NEWOBJ_EX keyword arguments not a dict");
        if (!g_.objects[kwargs.ref].items.empty() &&
            !(g_.is(cls, Object::Type::Global) && g_.objects[cls.ref].global == Global::Unknown))
          bad("keyword arguments for " + g_.describe(cls));
        push(call(cls, args, true));
        break;
      }
      case 'b': {
        Value state = pop();
        build(state);
        break;
      }
      case 'Q': {  // BINPERSID
        Value pid = pop();
        push(persistent_load_(g_, pid, op_at_));
        break;
      }
      default: {
        const char* name = opcodeName(op_);
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02X", op_);
        if (name)
          bad(std::string("opcode ") + name + " (" + hex +
              ") is not supported: torch.save writes pickle protocol 2 (binary opcodes only, "
              "no extension registry or out-of-band buffers)");
        bad(std::string("unknown opcode ") + hex + " (not a pickle, or a corrupt one)");
      }
    }
  }
}

}  // namespace

const StorageType* findStorageType(std::string_view name) {
  for (const auto& s : kStorageTypes)
    if (name == s.name) return &s;
  return nullptr;
}

const Value* Graph::get(const Object& dict, std::string_view key) const {
  for (size_t i = 0; i + 1 < dict.items.size(); i += 2) {
    const std::string* k = str(dict.items[i]);
    if (k && *k == key) return &dict.items[i + 1];
  }
  return nullptr;
}

std::string Graph::describe(const Value& v) const {
  switch (v.kind) {
    case Value::Kind::None:
      return "None";
    case Value::Kind::Bool:
      return std::string("a bool (") + (v.b ? "True" : "False") + ")";
    case Value::Kind::Int:
      return "an int (" + std::to_string(v.i) + ")";
    case Value::Kind::Float:
      return "a float";
    case Value::Kind::Ref:
      break;
  }
  const Object& o = objects[v.ref];
  const size_t n = o.items.size();
  switch (o.type) {
    case Object::Type::Str:
      return "a str (\"" + printable(o.text, 60) + "\")";
    case Object::Type::Bytes:
      return "bytes (" + std::to_string(o.text.size()) + ")";
    case Object::Type::BigInt:
      return "an int of " + std::to_string(o.text.size()) + " bytes";
    case Object::Type::List:
      return "a list of " + std::to_string(n) + " items";
    case Object::Type::Tuple:
      return "a tuple of " + std::to_string(n) + " items";
    case Object::Type::Dict:
      return (o.global == Global::Namespace ? "an argparse.Namespace of " : "a dict of ") +
             std::to_string(n / 2) + " entries";
    case Object::Type::Set:
      return "a set of " + std::to_string(n) + " items";
    case Object::Type::Global:
      return "the Python name " + printable(o.text);
    case Object::Type::Storage:
      return "a storage";
    case Object::Type::Tensor:
      return "a tensor";
    case Object::Type::Instance: {
      const std::string cls = printable(objects[o.items[0].ref].text);
      return o.made_by_call ? "the result of calling " + cls : "an instance of " + cls;
    }
  }
  return "a value";
}

Result unpickle(const uint8_t* data, size_t size, Graph& graph, const Limits& limits,
                const std::string& where, const PersistentLoad& persistent_load) {
  Unpickler u(data, size, graph, limits, where, persistent_load);
  return u.run();
}

}  // namespace attnviz::pickle
