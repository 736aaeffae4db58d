// A restricted unpickler for PyTorch checkpoints: reads the pickle opcodes torch.save writes
// (protocols 2 to 5) into a graph of plain values. It never runs code and never resolves a name:
// a GLOBAL is either one of the few names it understands (the tensor rebuild functions,
// OrderedDict, the storage types, ...) whose effect it reproduces itself, or an opaque stub.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "io/tensor_source.h"

namespace attnviz::pickle {

// Bounds on what one pickle may build; exceeding one is Error(TooLarge). The defaults are far
// above what torch.save writes for any model (a state_dict of 10000 tensors builds ~100000
// objects) and keep the worst case to a few hundred MiB and linear time.
struct Limits {
  uint64_t max_objects = 2'000'000;      // strings, containers, tensors, stubs created
  uint64_t max_items = 8'000'000;        // entries of all lists, tuples, dicts and sets together
  uint64_t max_memo = 1'000'000;         // memo entries (BINPUT, LONG_BINPUT, MEMOIZE)
  uint64_t max_stack = 1'000'000;        // values on the stack at once
  uint64_t max_marks = 10'000;           // MARKs open at once (how deep a literal nests)
  uint64_t max_string_bytes = 16 << 20;  // one str or bytes
  uint64_t max_long_bytes = 64;          // one LONG1/LONG4 integer (torch's magic number: 10)
  uint64_t max_dims = 32;                // dimensions of one tensor
};

using Ref = uint32_t;  // index of an Object in a Graph

// A value on the stack or inside a container: an immediate or a reference to an Object.
struct Value {
  enum class Kind : uint8_t { None, Bool, Int, Float, Ref };
  Kind kind = Kind::None;
  union {
    bool b;
    int64_t i;
    double f;
    Ref ref;
  };
  Value() : i(0) {}
  static Value none() { return Value(); }
  static Value boolean(bool v) {
    Value x;
    x.kind = Kind::Bool;
    x.b = v;
    return x;
  }
  static Value integer(int64_t v) {
    Value x;
    x.kind = Kind::Int;
    x.i = v;
    return x;
  }
  static Value real(double v) {
    Value x;
    x.kind = Kind::Float;
    x.f = v;
    return x;
  }
  static Value object(Ref r) {
    Value x;
    x.kind = Kind::Ref;
    x.ref = r;
    return x;
  }
};

// The names the unpickler understands. Everything else is Global::Unknown: a stub that may be
// recorded (REDUCE/NEWOBJ/BUILD on it build an Instance) but is never called.
enum class Global : uint8_t {
  Unknown,
  RebuildTensorV2,            // torch._utils._rebuild_tensor_v2
  RebuildParameter,           // torch._utils._rebuild_parameter
  RebuildParameterWithState,  // torch._utils._rebuild_parameter_with_state
  RebuildFromTypeV2,          // torch._tensor._rebuild_from_type_v2
  OrderedDict,                // collections.OrderedDict
  StorageType,                // torch.FloatStorage, ..., torch.UntypedStorage
  TorchSize,                  // torch.Size
  TorchDevice,                // torch.device
  TorchDType,                 // torch.float32, ... (a constant)
  TensorType,                 // torch.Tensor, torch.nn.parameter.Parameter
  Set,                        // builtins.set, builtins.frozenset
  Bytes,                      // builtins.bytes, builtins.bytearray
  CodecsEncode,               // _codecs.encode (how protocol 2 writes bytes)
  Reconstructor,              // copyreg._reconstructor (protocol 0/1 objects)
  NewObj,                     // copyreg.__newobj__
  Object,                     // builtins.object
  Namespace,                  // argparse.Namespace: a record of settings, read as its dict
};

// A torch storage class: its name and what its elements are.
struct StorageType {
  const char* name;         // "FloatStorage"
  DType dtype;              // meaningful when supported
  int element_size;         // bytes
  const char* unsupported;  // null, or why attnviz cannot read it ("complex", "quantized")
};
const StorageType* findStorageType(std::string_view name);

struct Object {
  enum class Type : uint8_t {
    Str,       // text: UTF-8
    Bytes,     // text: raw bytes
    BigInt,    // text: little-endian two's complement, more than 8 bytes
    List,      // items
    Tuple,     // items
    Dict,      // items: key0, value0, key1, value1, ... in insertion order; global
               // Namespace: an argparse.Namespace, its attributes as the entries
    Set,       // items
    Global,    // text: "module.name"; global, storage_type
    Storage,   // index: Graph::storages
    Tensor,    // index: Graph::tensors
    Instance,  // an object of a class attnviz does not know: see below
  };
  Type type = Type::Str;
  Global global = Global::Unknown;  // Global: which name; Dict: Namespace for a Namespace
  bool made_by_call = false;        // Instance: REDUCE on a function (not NEWOBJ of a class)
  uint32_t index = 0;               // Storage, Tensor: position in their table
  const StorageType* storage_type = nullptr;  // Global::StorageType
  uint64_t offset = 0;                        // where in the pickle it was made (for messages)
  std::string text;
  // Instance: items[0] = the class or function (a Global), items[1] = its arguments,
  // items[2] = the BUILD state (None until BUILD); then APPENDS / SETITEMS items, if any.
  std::vector<Value> items;
};

struct StorageRecord {
  std::string key;          // "0", "1", ... : the zip entry data/KEY, or the legacy storage key
  const StorageType* type;  // element type
  uint64_t numel = 0;       // elements, as the pickle declares
  std::string location;     // "cpu", "cuda:0"
  // Legacy views (old files): elements [view_offset, view_offset + numel) of storage `view_of`.
  int64_t view_of = -1;
  uint64_t view_offset = 0;
};

struct TensorRecord {
  Ref storage = 0;  // an Object of Type::Storage
  int64_t storage_offset = 0;
  std::vector<int64_t> sizes, strides;
  bool parameter = false;
  uint64_t offset = 0;  // where in the pickle it was made
};

// Everything one or more pickles built; objects refer to each other by Ref, so cycles and shared
// objects need no reference counting. A deque: growing never moves (or copies) the objects.
class Graph {
 public:
  std::deque<Object> objects;
  std::vector<StorageRecord> storages;
  std::vector<TensorRecord> tensors;
  // Unknown globals in order of first appearance ("argparse.Namespace"), at most 16 kept, and
  // how many times any appeared.
  std::vector<std::string> unknown_globals;
  uint64_t unknown_global_count = 0;

  const Object& at(Ref r) const { return objects.at(r); }
  Object& at(Ref r) { return objects.at(r); }
  bool is(const Value& v, Object::Type t) const {
    return v.kind == Value::Kind::Ref && objects[v.ref].type == t;
  }
  // The text of a Str value; nullptr otherwise.
  const std::string* str(const Value& v) const {
    return is(v, Object::Type::Str) ? &objects[v.ref].text : nullptr;
  }
  // The value stored under the string key `key` in a Dict; nullptr when absent.
  const Value* get(const Object& dict, std::string_view key) const;
  // "a str", "a list of 3 items", "an instance of argparse.Namespace", ...: for messages.
  std::string describe(const Value& v) const;
};

// What a persistent id (BINPERSID) stands for: the checkpoint format decides. Receives the id
// (usually a tuple) and the pickle offset; returns the value to push. Throws Error to refuse.
using PersistentLoad = std::function<Value(Graph&, const Value& pid, uint64_t offset)>;

struct Result {
  Value root;
  uint64_t consumed = 0;  // bytes up to and including STOP
  int protocol = 0;       // from PROTO; 0 or 1 when absent
};

// Unpickles one pickle from data[0, size) into `graph` (which may already hold objects of earlier
// pickles). `where` names the pickle in messages ("model.pt: archive/data.pkl"). Throws
// Error(BadPickle) for a malformed or unsupported stream, Error(ForbiddenGlobal) for a name that
// can only serve to run code (os.system, builtins.eval, ...), Error(TooLarge) past a limit, and
// Error(Truncated) when the data ends before STOP.
Result unpickle(const uint8_t* data, size_t size, Graph& graph, const Limits& limits,
                const std::string& where, const PersistentLoad& persistent_load);

}  // namespace attnviz::pickle
