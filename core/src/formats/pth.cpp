// pth.cpp: the .pth reader: libzip for the archive, a restricted pickle
// machine for data.pkl, and strided reads of the storages.
#include "attnscope/formats/pth.hpp"

#include <zip.h>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <limits>
#include <unordered_map>
#include <utility>

#include "formats/formats_internal.hpp"

namespace attnscope::core {

using detail::fail;
using detail::half_to_float;

namespace {

// Limits, far above what a state_dict needs: GPT-2's has ~150 tensors of
// ~20 pushed values each, and a training checkpoint nests 5 MARKs deep.
constexpr std::size_t kMaxValues = std::size_t{1} << 24;          // values pushed while running
constexpr std::size_t kMaxMarkDepth = 1000;                       // open MARKs at once
constexpr std::size_t kMaxDims = 64;                              // dimensions of one tensor
constexpr std::size_t kMaxGlobalName = 256;                       // one GLOBAL line
constexpr std::uint64_t kMaxValuesRead = std::uint64_t{1} << 30;  // elements values() returns
// Deflate expands at most 1032:1; an entry claiming more is not a real one.
constexpr std::uint64_t kMaxDeflateRatio = 1100;

// What a name in a GLOBAL opcode stands for; everything else is refused.
enum class Callable : std::uint8_t { OrderedDict, RebuildTensor, RebuildParameter, StorageType };

struct StorageType {
  std::string_view torch_name;  // "FloatStorage" (module torch)
  std::string_view dtype;       // "F32"
  std::size_t size;             // bytes per element
};
constexpr StorageType kStorageTypes[] = {
    {"FloatStorage", "F32", 4},  {"HalfStorage", "F16", 2}, {"BFloat16Storage", "BF16", 2},
    {"DoubleStorage", "F64", 8}, {"LongStorage", "I64", 8}, {"IntStorage", "I32", 4},
    {"ShortStorage", "I16", 2},  {"CharStorage", "I8", 1},  {"ByteStorage", "U8", 1},
    {"BoolStorage", "BOOL", 1},
};

enum class Kind : std::uint8_t {
  None,
  Bool,
  Int,
  BigInt,  // an integer wider than 64 bits: kept as a placeholder
  Float,
  Str,
  Bytes,
  Tuple,
  List,
  Dict,
  Global,
  Storage,
  Tensor,
};

// One stack slot. Int and Bool keep their value in `i`, Float in `f`; Str, Bytes, the
// containers, Storage and Tensor an index into the machine's tables; Global
// a Callable (and the storage type's index in `index`).
struct Value {
  Kind kind = Kind::None;
  std::int64_t i = 0;
  double f = 0;
  std::size_t index = 0;
};

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::None:
      return "None";
    case Kind::Bool:
      return "a bool";
    case Kind::Int:
    case Kind::BigInt:
      return "an int";
    case Kind::Float:
      return "a float";
    case Kind::Str:
      return "a string";
    case Kind::Bytes:
      return "bytes";
    case Kind::Tuple:
      return "a tuple";
    case Kind::List:
      return "a list";
    case Kind::Dict:
      return "a dict";
    case Kind::Global:
      return "a callable";
    case Kind::Storage:
      return "a storage";
    case Kind::Tensor:
      return "a tensor";
  }
  return "an object";
}

struct StorageRef {
  std::size_t type = 0;  // index into kStorageTypes
  std::string key;
  std::uint64_t numel = 0;
};

struct TensorRef {
  std::size_t storage = 0;  // index into the machine's storages
  std::uint64_t offset = 0;
  std::vector<std::uint64_t> shape;
  std::vector<std::int64_t> stride;
};

// Runs a pickle (protocols 2 to 5) that builds dicts, lists, tuples, numbers,
// strings and tensors, and nothing else.
class Machine {
 public:
  Machine(std::string_view pickle, std::string_view source) : in_(pickle), source_(source) {}

  Value run();

  std::vector<std::string> strings;            // Str, Bytes
  std::vector<std::vector<Value>> containers;  // Tuple, List; Dict as k0, v0, k1, v1, ...
  std::vector<StorageRef> storages;
  std::vector<TensorRef> tensors;

 private:
  [[noreturn]] void error(const std::string& what) const {
    fail(source_, "data.pkl: " + what + " (at byte " + std::to_string(op_pos_) + ")");
  }
  std::string_view take(std::uint64_t n) {
    if (n > in_.size() - pos_) error("the pickle is truncated");
    const std::string_view s = in_.substr(pos_, static_cast<std::size_t>(n));
    pos_ += static_cast<std::size_t>(n);
    return s;
  }
  std::uint64_t le(std::size_t n) {
    const std::string_view s = take(n);
    std::uint64_t v = 0;
    for (std::size_t k = n; k-- > 0;) v = (v << 8) | static_cast<unsigned char>(s[k]);
    return v;
  }
  void push(Value v) {
    if (++pushed_ > kMaxValues)
      error("the pickle builds more than " + std::to_string(kMaxValues) + " values");
    stack_.push_back(v);
  }
  Value pop() {
    if (stack_.size() <= floor()) error("stack underflow");
    const Value v = stack_.back();
    stack_.pop_back();
    return v;
  }
  Value& top() {
    if (stack_.size() <= floor()) error("stack underflow");
    return stack_.back();
  }
  std::size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
  std::vector<Value> pop_mark() {
    if (marks_.empty()) error("no MARK to pop to");
    std::vector<Value> items(stack_.begin() + static_cast<std::ptrdiff_t>(marks_.back()),
                             stack_.end());
    stack_.resize(marks_.back());
    marks_.pop_back();
    return items;
  }
  Value make(Kind kind, std::vector<Value> items = {}) {
    containers.push_back(std::move(items));
    return Value{kind, 0, 0, containers.size() - 1};
  }
  Value make_string(Kind kind, std::string_view s) {
    strings.emplace_back(s);
    return Value{kind, 0, 0, strings.size() - 1};
  }
  std::vector<Value>& items_of(const Value& v, Kind want, const char* op) {
    if (v.kind != want)
      error(std::string(op) + " needs " + kind_name(want) + ", found " + kind_name(v.kind));
    return containers[v.index];
  }
  std::string global_name();

  bool step(unsigned char op);
  bool step_data(unsigned char op);
  bool step_memo(unsigned char op);
  void do_global(std::string_view module, std::string_view name);
  void do_reduce();
  void do_persid();
  Value rebuild_tensor(const std::vector<Value>& args);

  std::string_view in_;
  std::string_view source_;
  std::size_t pos_ = 0;
  std::size_t op_pos_ = 0;
  std::size_t pushed_ = 0;
  std::vector<Value> stack_;
  std::vector<std::size_t> marks_;
  std::unordered_map<std::uint64_t, Value> memo_;
};

Value Machine::run() {
  while (pos_ < in_.size()) {
    op_pos_ = pos_;
    const auto op = static_cast<unsigned char>(in_[pos_++]);
    if (op == '.') {  // STOP
      if (!marks_.empty()) error("STOP inside an open MARK");
      return pop();
    }
    if (!step(op) && !step_data(op) && !step_memo(op)) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02x", op);
      error(std::string("unknown pickle opcode ") + hex + " (not one a state_dict uses)");
    }
  }
  op_pos_ = pos_;
  error("the pickle is truncated: it ends without STOP");
}

// Structure: marks, containers, calls.
bool Machine::step(unsigned char op) {
  switch (op) {
    case 0x80:  // PROTO
      if (const auto v = le(1); v < 2 || v > 5)
        error("pickle protocol " + std::to_string(v) + " (torch.save writes 2)");
      return true;
    case 0x95:  // FRAME: a length hint only
      take(8);
      return true;
    case '(':  // MARK
      if (marks_.size() >= kMaxMarkDepth)
        error("nesting deeper than " + std::to_string(kMaxMarkDepth) + " levels");
      marks_.push_back(stack_.size());
      return true;
    case '0':  // POP
      pop();
      return true;
    case '1':  // POP_MARK
      pop_mark();
      return true;
    case '2':  // DUP
      push(top());
      return true;
    case ')':  // EMPTY_TUPLE
      push(make(Kind::Tuple));
      return true;
    case 0x85:    // TUPLE1
    case 0x86:    // TUPLE2
    case 0x87: {  // TUPLE3
      std::vector<Value> items(static_cast<std::size_t>(op - 0x84));
      for (std::size_t k = items.size(); k-- > 0;) items[k] = pop();
      push(make(Kind::Tuple, std::move(items)));
      return true;
    }
    case 't':  // TUPLE
      push(make(Kind::Tuple, pop_mark()));
      return true;
    case ']':  // EMPTY_LIST
      push(make(Kind::List));
      return true;
    case 'l':  // LIST
      push(make(Kind::List, pop_mark()));
      return true;
    case '}':  // EMPTY_DICT
      push(make(Kind::Dict));
      return true;
    case 'd': {  // DICT
      std::vector<Value> items = pop_mark();
      if (items.size() % 2 != 0) error("DICT with an odd number of items");
      push(make(Kind::Dict, std::move(items)));
      return true;
    }
    case 'a': {  // APPEND
      const Value v = pop();
      items_of(top(), Kind::List, "APPEND").push_back(v);
      return true;
    }
    case 'e': {  // APPENDS
      std::vector<Value> items = pop_mark();
      auto& list = items_of(top(), Kind::List, "APPENDS");
      list.insert(list.end(), items.begin(), items.end());
      return true;
    }
    case 's': {  // SETITEM
      const Value v = pop();
      const Value k = pop();
      auto& dict = items_of(top(), Kind::Dict, "SETITEM");
      dict.push_back(k);
      dict.push_back(v);
      return true;
    }
    case 'u': {  // SETITEMS
      std::vector<Value> items = pop_mark();
      if (items.size() % 2 != 0) error("SETITEMS with an odd number of items");
      auto& dict = items_of(top(), Kind::Dict, "SETITEMS");
      dict.insert(dict.end(), items.begin(), items.end());
      return true;
    }
    case 'c': {  // GLOBAL
      const std::string module = global_name();
      const std::string name = global_name();
      do_global(module, name);
      return true;
    }
    case 0x93: {  // STACK_GLOBAL
      const Value name = pop();
      const Value module = pop();
      if (name.kind != Kind::Str || module.kind != Kind::Str)
        error("STACK_GLOBAL needs two strings");
      do_global(strings[module.index], strings[name.index]);
      return true;
    }
    case 'R':  // REDUCE
      do_reduce();
      return true;
    case 0x81: {  // NEWOBJ: only OrderedDict()
      const Value args = pop();
      const Value cls = pop();
      if (cls.kind != Kind::Global || cls.i != static_cast<std::int64_t>(Callable::OrderedDict) ||
          items_of(args, Kind::Tuple, "NEWOBJ").size() != 0)
        error("NEWOBJ builds something other than an empty OrderedDict");
      push(make(Kind::Dict));
      return true;
    }
    case 'b': {  // BUILD: an OrderedDict's attributes (_metadata) or a tensor's state, unused
      pop();
      const Kind k = top().kind;
      if (k != Kind::Dict && k != Kind::Tensor)
        error(std::string("BUILD on ") + kind_name(k) + " (only a dict or a tensor takes a state)");
      return true;
    }
    case 'Q':  // BINPERSID
      do_persid();
      return true;
    default:
      return false;
  }
}

// Plain data: None, bools, numbers, strings.
bool Machine::step_data(unsigned char op) {
  switch (op) {
    case 'N':
      push(Value{});
      return true;
    case 0x88:  // NEWTRUE
    case 0x89:  // NEWFALSE
      push(Value{Kind::Bool, op == 0x88 ? 1 : 0, 0, 0});
      return true;
    case 'K':  // BININT1
      push(Value{Kind::Int, static_cast<std::int64_t>(le(1)), 0, 0});
      return true;
    case 'M':  // BININT2
      push(Value{Kind::Int, static_cast<std::int64_t>(le(2)), 0, 0});
      return true;
    case 'J':  // BININT: signed
      push(Value{Kind::Int, static_cast<std::int32_t>(static_cast<std::uint32_t>(le(4))), 0, 0});
      return true;
    case 0x8a:    // LONG1
    case 0x8b: {  // LONG4: little-endian two's complement
      const std::uint64_t n = le(op == 0x8a ? 1 : 4);
      if (op == 0x8b && n > 0x7fffffffu) error("LONG4 with a negative length");
      const std::string_view b = take(n);
      if (n > 8) {
        push(Value{Kind::BigInt, 0, 0, 0});
        return true;
      }
      std::uint64_t v = 0;
      for (std::size_t k = b.size(); k-- > 0;) v = (v << 8) | static_cast<unsigned char>(b[k]);
      if (n > 0 && n < 8 && (static_cast<unsigned char>(b.back()) & 0x80))
        v |= ~std::uint64_t{0} << (8 * n);  // sign-extend
      push(Value{Kind::Int, static_cast<std::int64_t>(v), 0, 0});
      return true;
    }
    case 'G': {  // BINFLOAT: big-endian double
      const std::string_view b = take(8);
      std::uint64_t v = 0;
      for (char c : b) v = (v << 8) | static_cast<unsigned char>(c);
      push(Value{Kind::Float, 0, std::bit_cast<double>(v), 0});
      return true;
    }
    case 'X':     // BINUNICODE
    case 0x8c:    // SHORT_BINUNICODE
    case 0x8d: {  // BINUNICODE8
      const std::uint64_t n = le(op == 'X' ? 4 : op == 0x8c ? 1 : 8);
      push(make_string(Kind::Str, take(n)));
      return true;
    }
    case 'T': {  // BINSTRING: signed 4-byte length
      const std::uint64_t n = le(4);
      if (n > 0x7fffffffu) error("BINSTRING with a negative length");
      push(make_string(Kind::Str, take(n)));
      return true;
    }
    case 'U':  // SHORT_BINSTRING
      push(make_string(Kind::Str, take(le(1))));
      return true;
    case 'B':     // BINBYTES
    case 'C':     // SHORT_BINBYTES
    case 0x8e: {  // BINBYTES8
      const std::uint64_t n = le(op == 'B' ? 4 : op == 'C' ? 1 : 8);
      push(make_string(Kind::Bytes, take(n)));
      return true;
    }
    default:
      return false;
  }
}

// The memo: values stored under a number and fetched again.
bool Machine::step_memo(unsigned char op) {
  switch (op) {
    case 'q':  // BINPUT
    case 'r':  // LONG_BINPUT
      memo_[le(op == 'q' ? 1 : 4)] = top();
      return true;
    case 0x94:  // MEMOIZE
      memo_[memo_.size()] = top();
      return true;
    case 'h':    // BINGET
    case 'j': {  // LONG_BINGET
      const std::uint64_t key = le(op == 'h' ? 1 : 4);
      const auto it = memo_.find(key);
      if (it == memo_.end())
        error("memo index " + std::to_string(key) + " was never stored (memo has " +
              std::to_string(memo_.size()) + " entries)");
      push(it->second);
      return true;
    }
    default:
      return false;
  }
}

// One newline-terminated line of a GLOBAL opcode.
std::string Machine::global_name() {
  const std::size_t end = in_.find('\n', pos_);
  if (end == std::string_view::npos) error("the pickle is truncated inside a GLOBAL name");
  if (end - pos_ > kMaxGlobalName)
    error("a GLOBAL name over " + std::to_string(kMaxGlobalName) + " characters");
  std::string s(in_.substr(pos_, end - pos_));
  pos_ = end + 1;
  return s;
}

void Machine::do_global(std::string_view module, std::string_view name) {
  const auto callable = [&](Callable c, std::size_t index = 0) {
    push(Value{Kind::Global, static_cast<std::int64_t>(c), 0, index});
  };
  if (module == "collections" && name == "OrderedDict") return callable(Callable::OrderedDict);
  if (module == "torch._utils" && name == "_rebuild_tensor_v2")
    return callable(Callable::RebuildTensor);
  if (module == "torch._utils" && name == "_rebuild_parameter")
    return callable(Callable::RebuildParameter);
  if (module == "torch")
    for (std::size_t k = 0; k < std::size(kStorageTypes); ++k)
      if (kStorageTypes[k].torch_name == name) return callable(Callable::StorageType, k);
  std::string shown = std::string(module) + "." + std::string(name);
  if (module == "torch" && name.ends_with("Storage"))
    fail(source_, "tensor storage type " + shown +
                      " is not supported (F32, F16, BF16, F64 and integer/bool storages are)");
  fail(source_, "is not a state_dict: it calls " + shown +
                    " (a state_dict's pickle calls only collections.OrderedDict, "
                    "torch._utils._rebuild_tensor_v2 and torch storage types); save one with "
                    "torch.save(model.state_dict(), PATH)");
}

void Machine::do_reduce() {
  const Value args_value = pop();
  const Value fn = pop();
  const std::vector<Value> args = items_of(args_value, Kind::Tuple, "REDUCE");
  if (fn.kind != Kind::Global) error(std::string("REDUCE calls ") + kind_name(fn.kind));
  switch (static_cast<Callable>(fn.i)) {
    case Callable::OrderedDict:
      if (!args.empty()) error("collections.OrderedDict called with arguments");
      push(make(Kind::Dict));
      return;
    case Callable::RebuildTensor:
      push(rebuild_tensor(args));
      return;
    case Callable::RebuildParameter:  // (tensor, requires_grad, backward_hooks)
      if (args.empty() || args[0].kind != Kind::Tensor)
        error("torch._utils._rebuild_parameter called without a tensor");
      push(args[0]);
      return;
    case Callable::StorageType:
      break;
  }
  error("a storage type called directly (storages come only from persistent ids)");
}

// torch._utils._rebuild_tensor_v2(storage, storage_offset, size, stride,
// requires_grad, backward_hooks[, metadata]).
Value Machine::rebuild_tensor(const std::vector<Value>& args) {
  const char* what = "torch._utils._rebuild_tensor_v2";
  if (args.size() < 4)
    error(std::string(what) + " called with " + std::to_string(args.size()) +
          " arguments (needs storage, offset, size, stride, ...)");
  if (args[0].kind != Kind::Storage)
    error(std::string(what) + ": its storage is " + kind_name(args[0].kind));
  if (args[1].kind != Kind::Int || args[1].i < 0)
    error(std::string(what) + ": storage_offset is not a non-negative int");
  TensorRef t;
  t.storage = args[0].index;
  t.offset = static_cast<std::uint64_t>(args[1].i);
  const auto& size = items_of(args[2], Kind::Tuple, "a tensor's size");
  const auto& stride = items_of(args[3], Kind::Tuple, "a tensor's stride");
  if (size.size() != stride.size())
    error(std::string(what) + ": size has " + std::to_string(size.size()) + " dimensions, stride " +
          std::to_string(stride.size()));
  if (size.size() > kMaxDims)
    error("a tensor with over " + std::to_string(kMaxDims) + " dimensions");
  for (std::size_t d = 0; d < size.size(); ++d) {
    if (size[d].kind != Kind::Int || size[d].i < 0 || stride[d].kind != Kind::Int ||
        stride[d].i < 0)
      error(std::string(what) + ": size and stride must be non-negative ints");
    t.shape.push_back(static_cast<std::uint64_t>(size[d].i));
    t.stride.push_back(stride[d].i);
  }
  tensors.push_back(std::move(t));
  return Value{Kind::Tensor, 0, 0, tensors.size() - 1};
}

// BINPERSID: ('storage', torch.FloatStorage, key, location, numel).
void Machine::do_persid() {
  const Value pid = pop();
  const char* shape = "a persistent id is not ('storage', storage type, key, location, numel)";
  if (pid.kind != Kind::Tuple) error(shape);
  const auto& t = containers[pid.index];
  if (t.size() != 5 || t[0].kind != Kind::Str || strings[t[0].index] != "storage" ||
      t[1].kind != Kind::Global || t[1].i != static_cast<std::int64_t>(Callable::StorageType) ||
      t[2].kind != Kind::Str || t[4].kind != Kind::Int || t[4].i < 0)
    error(shape);
  storages.push_back(
      StorageRef{t[1].index, strings[t[2].index], static_cast<std::uint64_t>(t[4].i)});
  push(Value{Kind::Storage, 0, 0, storages.size() - 1});
}

// ---- the archive ----

struct ZipCloser {
  void operator()(zip_t* z) const { zip_discard(z); }
};
struct ZipFileCloser {
  void operator()(zip_file_t* f) const { zip_fclose(f); }
};
using ZipPtr = std::unique_ptr<zip_t, ZipCloser>;

// Why libzip could not open the bytes as an archive.
[[noreturn]] void fail_open(std::string_view source, zip_error_t* error, const unsigned char* head,
                            std::size_t head_size) {
  const int code = zip_error_code_zip(error);
  std::string why = zip_error_strerror(error);
  zip_error_fini(error);
  if (code == ZIP_ER_NOZIP) {
    if (head_size >= 2 && head[0] == 0x80)
      fail(source,
           "is a legacy torch.save file (a bare pickle, as PyTorch < 1.6 or "
           "_use_new_zipfile_serialization=False write), not a zip archive; re-save it with "
           "torch.save(model.state_dict(), PATH) from PyTorch 1.6 or newer");
    fail(source, "is not a zip archive (or a damaged one), so not a file torch.save wrote");
  }
  fail(source, "is not a readable zip archive (" + why + ")");
}

// One entry's bytes, at most `max_bytes`; stored or deflated only. Sizes are
// checked against the archive's before anything is allocated.
struct Archive {
  zip_t* zip;
  std::uint64_t bytes;  // the archive's size
};
std::vector<unsigned char> read_entry(Archive a, zip_uint64_t index, const std::string& name,
                                      std::uint64_t max_bytes, std::string_view source) {
  zip_t* z = a.zip;
  zip_stat_t st;
  zip_stat_init(&st);
  if (zip_stat_index(z, index, 0, &st) != 0 ||
      (st.valid & (ZIP_STAT_SIZE | ZIP_STAT_COMP_SIZE | ZIP_STAT_COMP_METHOD)) !=
          (ZIP_STAT_SIZE | ZIP_STAT_COMP_SIZE | ZIP_STAT_COMP_METHOD))
    fail(source, "cannot read the zip entry " + name + " (" + zip_strerror(z) + ")");
  if (st.comp_method != ZIP_CM_STORE && st.comp_method != ZIP_CM_DEFLATE)
    fail(source, "zip entry " + name + " is compressed with method " +
                     std::to_string(st.comp_method) +
                     " (torch.save stores entries uncompressed; deflate is read too)");
  if (st.comp_size > a.bytes || (st.comp_method == ZIP_CM_STORE && st.size != st.comp_size))
    fail(source, "zip entry " + name + " claims " + std::to_string(st.size) + " bytes (" +
                     std::to_string(st.comp_size) + " stored) in a " + std::to_string(a.bytes) +
                     "-byte archive: damaged or truncated");
  if (st.comp_method == ZIP_CM_DEFLATE && st.size / kMaxDeflateRatio > st.comp_size)
    fail(source, "zip entry " + name + " claims " + std::to_string(st.size) + " bytes from " +
                     std::to_string(st.comp_size) + " compressed ones, more than deflate can");
  if (st.size > max_bytes)
    fail(source, "zip entry " + name + " is " + std::to_string(st.size) + " bytes, over the " +
                     std::to_string(max_bytes) + "-byte limit");
  std::unique_ptr<zip_file_t, ZipFileCloser> f(zip_fopen_index(z, index, 0));
  if (!f) fail(source, "cannot read the zip entry " + name + " (" + zip_strerror(z) + ")");
  std::vector<unsigned char> out(static_cast<std::size_t>(st.size));
  std::size_t got = 0;
  while (got < out.size()) {
    const zip_int64_t n = zip_fread(f.get(), out.data() + got, out.size() - got);
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  unsigned char extra = 0;  // reading to the end makes libzip check the CRC
  if (got != out.size() || zip_fread(f.get(), &extra, 1) != 0)
    fail(source, "zip entry " + name + " is damaged or truncated (" +
                     zip_error_strerror(zip_file_get_error(f.get())) + ")");
  return out;
}

// The entry index of `name`, or -1.
zip_int64_t entry(zip_t* z, const std::string& name) {
  return zip_name_locate(z, name.c_str(), ZIP_FL_ENC_RAW);
}

// "<archive>/" for the one <archive>/data.pkl in the zip.
std::string archive_prefix(zip_t* z, std::string_view source) {
  std::string found;
  const zip_int64_t n = zip_get_num_entries(z, 0);
  for (zip_int64_t k = 0; k < n; ++k) {
    const char* raw = zip_get_name(z, static_cast<zip_uint64_t>(k), ZIP_FL_ENC_RAW);
    if (!raw) continue;
    const std::string_view name(raw);
    if (!name.ends_with("data.pkl")) continue;
    const std::string_view prefix = name.substr(0, name.size() - 8);
    if (!(prefix.empty() || (prefix.back() == '/' && prefix.find('/') == prefix.size() - 1)))
      continue;
    if (!found.empty())
      fail(source, "holds two pickles, " + found + "data.pkl and " + std::string(name) +
                       " (torch.save writes one)");
    found = std::string(prefix);
    if (found.empty()) found = "/";  // marks "found at the top", stripped below
  }
  if (found.empty())
    fail(source, "is a zip archive without <archive>/data.pkl, so not a file torch.save wrote");
  return found == "/" ? std::string() : found;
}

// What the pickle's top value is, for "not a state_dict (...)".
std::string describe(const Machine& m, const Value& v) {
  if (v.kind != Kind::Dict) return std::string("the file holds ") + kind_name(v.kind);
  const auto& items = m.containers[v.index];
  std::string keys;
  for (std::size_t k = 0; k < items.size() && k < 16; k += 2)
    keys += (keys.empty() ? "" : ", ") + (items[k].kind == Kind::Str
                                              ? "\"" + m.strings[items[k].index] + "\""
                                              : std::string(kind_name(items[k].kind)));
  if (items.size() > 16) keys += ", ...";
  return "a dict without tensors" + (keys.empty() ? std::string(", empty") : ": " + keys);
}

// Elements of the storage a tensor reaches: offset + sum((size-1)*stride) + 1
// (0 for an empty tensor); false on overflow.
bool storage_need(const PthTensor& t, std::uint64_t& need) {
  need = 0;
  for (std::uint64_t d : t.shape)
    if (d == 0) return true;
  std::uint64_t last = t.storage_offset;
  for (std::size_t d = 0; d < t.shape.size(); ++d) {
    std::uint64_t step = 0;
    if (__builtin_mul_overflow(t.shape[d] - 1, static_cast<std::uint64_t>(t.stride[d]), &step) ||
        __builtin_add_overflow(last, step, &last))
      return false;
  }
  return !__builtin_add_overflow(last, 1, &need);
}

// The storage holds numel elements of its type, and the tensor's view stays
// inside them.
void check_fits(const PthTensor& t, const StorageRef& st, std::size_t bytes,
                std::string_view source) {
  const std::size_t size = kStorageTypes[st.type].size;
  std::uint64_t declared = 0;
  if (__builtin_mul_overflow(st.numel, size, &declared) || declared != bytes)
    fail(source, "storage \"" + st.key + "\" is " + std::to_string(bytes) +
                     " bytes, but the pickle says it holds " + std::to_string(st.numel) + " " +
                     t.dtype + " elements");
  std::uint64_t need = 0;
  if (!storage_need(t, need) || need > st.numel)
    fail(source, "tensor \"" + t.name + "\" (offset " + std::to_string(t.storage_offset) +
                     ", its shape and stride) reaches past its storage \"" + st.key + "\" of " +
                     std::to_string(st.numel) + " elements");
}

}  // namespace

std::uint64_t PthTensor::elements() const {
  std::uint64_t n = 1;
  for (std::uint64_t d : shape)
    if (__builtin_mul_overflow(n, d, &n)) return UINT64_MAX;
  return n;
}

PthFile PthFile::load(::zip* z, std::uint64_t archive_bytes, std::string source) {
  const Archive archive{z, archive_bytes};
  PthFile f;
  f.source_ = std::move(source);
  const std::string_view src = f.source_;
  const std::string prefix = archive_prefix(z, src);
  if (const zip_int64_t bo = entry(z, prefix + "byteorder"); bo >= 0) {
    const auto order =
        read_entry(archive, static_cast<zip_uint64_t>(bo), prefix + "byteorder", 16, src);
    if (std::string(order.begin(), order.end()) != "little")
      fail(src, "stores its tensors big-endian (" + prefix +
                    "byteorder); attnscope reads little-endian .pth files only");
  }
  const zip_int64_t pkl = entry(z, prefix + "data.pkl");
  if (pkl < 0) fail(src, "cannot find " + prefix + "data.pkl in the archive by name");
  const auto pickle_bytes = read_entry(archive, static_cast<zip_uint64_t>(pkl), prefix + "data.pkl",
                                       kMaxPthPickleBytes, src);
  Machine m(
      std::string_view(reinterpret_cast<const char*>(pickle_bytes.data()), pickle_bytes.size()),
      src);
  const Value top = m.run();

  // The state_dict: the top dict, or its "model_state_dict".
  const char* advice = "; save one with torch.save(model.state_dict(), PATH)";
  if (top.kind != Kind::Dict) fail(src, "is not a state_dict (" + describe(m, top) + ")" + advice);
  Value dict = top;
  const auto& top_items = m.containers[top.index];
  for (std::size_t k = 0; k + 1 < top_items.size(); k += 2)
    if (top_items[k].kind == Kind::Str && m.strings[top_items[k].index] == "model_state_dict") {
      dict = top_items[k + 1];
      f.dict_key_ = "model_state_dict";
    }
  if (dict.kind != Kind::Dict)
    fail(src, "is not a state_dict (its \"model_state_dict\" is " +
                  std::string(kind_name(dict.kind)) + ")" + advice);
  const auto& items = m.containers[dict.index];
  std::map<std::string, std::size_t> dtype_of;  // storage key -> kStorageTypes index
  for (std::size_t k = 0; k + 1 < items.size(); k += 2) {
    if (items[k].kind != Kind::Str || items[k + 1].kind != Kind::Tensor) continue;
    const TensorRef& ref = m.tensors[items[k + 1].index];
    const StorageRef& st = m.storages[ref.storage];
    PthTensor t{m.strings[items[k].index],
                std::string(kStorageTypes[st.type].dtype),
                ref.shape,
                ref.stride,
                ref.offset,
                st.key};
    const auto [it, added] = dtype_of.emplace(st.key, st.type);
    if (!added && it->second != st.type)
      fail(src, "storage \"" + st.key + "\" is read as both " +
                    std::string(kStorageTypes[it->second].dtype) + " and " + t.dtype);
    auto& bytes = f.storages_[st.key];
    if (!bytes) {
      const std::string name = prefix + "data/" + st.key;
      const zip_int64_t at = entry(z, name);
      if (at < 0)
        fail(src, "tensor \"" + t.name + "\" needs the storage " + name +
                      ", which is not in the archive");
      bytes = std::make_shared<const Bytes>(
          read_entry(archive, static_cast<zip_uint64_t>(at), name, UINT64_MAX, src));
    }
    check_fits(t, st, bytes->size(), src);
    f.tensors_.push_back(std::move(t));
  }
  if (f.tensors_.empty()) fail(src, "is not a state_dict (" + describe(m, dict) + ")" + advice);
  std::sort(f.tensors_.begin(), f.tensors_.end(),
            [](const PthTensor& a, const PthTensor& b) { return a.name < b.name; });
  for (std::size_t k = 1; k < f.tensors_.size(); ++k)
    if (f.tensors_[k].name == f.tensors_[k - 1].name)
      fail(src, "has the tensor \"" + f.tensors_[k].name + "\" twice");
  return f;
}

PthFile PthFile::parse(std::string bytes, std::string source) {
  const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* zs = zip_source_buffer_create(bytes.data(), bytes.size(), 0, &error);
  if (!zs) fail_open(source, &error, data, bytes.size());
  ZipPtr z(zip_open_from_source(zs, ZIP_RDONLY | ZIP_CHECKCONS, &error));
  if (!z) {
    zip_source_free(zs);
    fail_open(source, &error, data, bytes.size());
  }
  zip_error_fini(&error);
  return load(z.get(), bytes.size(), std::move(source));
}

PthFile PthFile::open(const std::filesystem::path& path) {
  const std::string source = path.string();
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) fail(source, "cannot open (no such file)");
  if (!std::filesystem::is_regular_file(path, ec)) fail(source, "is not a regular file");
  int code = 0;
  ZipPtr z(zip_open(source.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &code));
  if (!z) {
    unsigned char head[2] = {0, 0};
    std::size_t got = 0;
    if (std::FILE* file = std::fopen(source.c_str(), "rb")) {
      got = std::fread(head, 1, sizeof head, file);
      std::fclose(file);
    }
    zip_error_t error;
    zip_error_init_with_code(&error, code);
    fail_open(source, &error, head, got);
  }
  return load(z.get(), std::filesystem::file_size(path, ec), source);
}

const PthTensor* PthFile::find(std::string_view name) const {
  const auto it =
      std::lower_bound(tensors_.begin(), tensors_.end(), name,
                       [](const PthTensor& t, std::string_view n) { return t.name < n; });
  return it != tensors_.end() && it->name == name ? &*it : nullptr;
}

const PthTensor& PthFile::info(std::string_view name) const {
  if (const PthTensor* t = find(name)) return *t;
  fail(source_, "has no tensor \"" + std::string(name) + "\" in its state_dict");
}

std::vector<float> PthFile::values(std::string_view name) const {
  const PthTensor& t = info(name);
  enum class Type { F32, F16, BF16, F64 } type{};
  std::size_t size = 0;
  if (t.dtype == "F32")
    type = Type::F32, size = 4;
  else if (t.dtype == "F16")
    type = Type::F16, size = 2;
  else if (t.dtype == "BF16")
    type = Type::BF16, size = 2;
  else if (t.dtype == "F64")
    type = Type::F64, size = 8;
  else
    fail(source_, "tensor \"" + t.name + "\" has dtype " + t.dtype +
                      ", which attnscope does not read (only F32, F16, BF16, F64)");
  const std::uint64_t n = t.elements();
  if (n > kMaxValuesRead)
    fail(source_, "tensor \"" + t.name + "\" has " + std::to_string(n) +
                      " elements, too many to read as float32");
  const unsigned char* base = storages_.find(t.storage_key)->second->data();
  const auto read = [&](std::uint64_t at) -> float {  // element `at` of the storage
    const unsigned char* p = base + at * size;
    switch (type) {
      case Type::F32:
        return std::bit_cast<float>(static_cast<std::uint32_t>(p[0] | p[1] << 8 | p[2] << 16) |
                                    static_cast<std::uint32_t>(p[3]) << 24);
      case Type::F16:
        return half_to_float(static_cast<std::uint16_t>(p[0] | p[1] << 8));
      case Type::BF16:
        return std::bit_cast<float>(static_cast<std::uint32_t>(p[0]) << 16 |
                                    static_cast<std::uint32_t>(p[1]) << 24);
      case Type::F64:
        break;
    }
    std::uint64_t v = 0;
    for (std::size_t k = 8; k-- > 0;) v = (v << 8) | p[k];
    return static_cast<float>(std::bit_cast<double>(v));
  };
  std::vector<float> out(static_cast<std::size_t>(n));
  // C order: the last index runs fastest. A contiguous tensor (strides of
  // C order) is one run from its offset; any other view follows its strides.
  const std::size_t dims = t.shape.size();
  bool contiguous = true;
  std::uint64_t expect = 1;
  for (std::size_t d = dims; d-- > 0;) {
    if (t.shape[d] != 1 && static_cast<std::uint64_t>(t.stride[d]) != expect) contiguous = false;
    expect *= t.shape[d];  // <= n: no overflow
  }
  if (contiguous) {
    for (std::size_t k = 0; k < out.size(); ++k) out[k] = read(t.storage_offset + k);
    return out;
  }
  std::vector<std::uint64_t> index(dims, 0);
  std::uint64_t at = t.storage_offset;
  for (std::size_t k = 0; k < out.size(); ++k) {
    out[k] = read(at);
    for (std::size_t d = dims; d-- > 0;) {
      const auto stride = static_cast<std::uint64_t>(t.stride[d]);
      if (++index[d] < t.shape[d]) {
        at += stride;
        break;
      }
      at -= stride * (t.shape[d] - 1);
      index[d] = 0;
    }
  }
  return out;
}

RowMatrix PthFile::matrix(std::string_view name) const {
  const PthTensor& t = info(name);
  return detail::folded_matrix(t.shape, values(name), source_, t.name);
}

}  // namespace attnscope::core
