// pickle.hpp: a restricted pickle machine, enough for the data.pkl of a
// torch.save archive: it builds dicts, lists, tuples, numbers, strings and
// tensor records, and refuses every other callable or opcode.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace attnscope::core::pickle {

// Limits, far above what a state_dict needs: GPT-2's has ~150 tensors of
// ~20 pushed values each, and a training checkpoint nests 5 MARKs deep.
inline constexpr std::size_t kMaxValues = std::size_t{1} << 24;  // values pushed while running
inline constexpr std::size_t kMaxMarkDepth = 1000;               // open MARKs at once
inline constexpr std::size_t kMaxDims = 64;                      // dimensions of one tensor
inline constexpr std::size_t kMaxGlobalName = 256;               // one GLOBAL line

// What a name in a GLOBAL opcode stands for; everything else is refused.
enum class Callable : std::uint8_t { OrderedDict, RebuildTensor, RebuildParameter, StorageType };

struct StorageType {
  std::string_view torch_name;  // "FloatStorage" (module torch)
  std::string_view dtype;       // "F32"
  std::size_t size;             // bytes per element
};
inline constexpr StorageType kStorageTypes[] = {
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

// "a dict", "a tensor", ...: what a value is, for error messages.
const char* kind_name(Kind k);

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
  // Throws ParseError: "<source>: data.pkl: <what> (at byte N)".
  [[noreturn]] void error(const std::string& what) const;
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

// What the pickle's top value is, for "not a state_dict (...)".
std::string describe(const Machine& m, const Value& v);

}  // namespace attnscope::core::pickle
