// pickle.cpp: the pickle machine's opcodes and the records it builds.
#include "formats/pickle.hpp"

#include <cstdio>
#include <cstring>
#include <utility>

#include "formats/formats_internal.hpp"

namespace attnscope::core::pickle {

using detail::fail;

void Machine::error(const std::string& what) const {
  fail(source_, "data.pkl: " + what + " (at byte " + std::to_string(op_pos_) + ")");
}

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

}  // namespace attnscope::core::pickle
